//! Epochs: the turn number every response item carries.
//!
//! Each user turn starts a new epoch. Every item of a response (LLM delta, TTS
//! chunk, audio frame) is tagged with the epoch of the turn it answers; a barge-in
//! moves the call to a newer epoch and every stage drops older items on sight.

use std::fmt;

/// A turn number. Epoch 0 is "before the first user turn" (a greeting is spoken in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Epoch(pub u64);

impl Epoch {
    /// The epoch before any user turn.
    pub const ZERO: Epoch = Epoch(0);

    /// The epoch that follows this one.
    #[must_use]
    pub fn next(self) -> Epoch {
        Epoch(self.0 + 1)
    }

    /// Whether an item tagged `self` is stale when the call is at `current`.
    pub fn is_stale(self, current: Epoch) -> bool {
        self < current
    }
}

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_epoch_is_stale_and_the_same_is_not() {
        let e = Epoch(3);
        assert!(Epoch(2).is_stale(e));
        assert!(!e.is_stale(e));
        assert!(!e.next().is_stale(e));
        assert_eq!(e.next(), Epoch(4));
    }
}
