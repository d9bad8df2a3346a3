//! Speculative LLM start, the turn machine's half (sans-IO): when a candidate
//! text of the caller's turn is offered to the LLM stage before the turn ends,
//! and when it is withdrawn.
//!
//! A candidate is offered at the VAD stop from the partial (the turn's finals
//! and the latest interim), when [`SpeculationConfig::on_partial`] is set and
//! after the partial has stayed unchanged for
//! [`SpeculationConfig::partial_stable`] (a change restarts that wait), and at
//! the STT final once every final of the turn is in. A candidate equal to the
//! one already offered (compared by [`same_turn_text`]) is not offered again;
//! a different one supersedes it. The caller speaking again withdraws it. The
//! LLM stage commits the run when the turn ends with the same text
//! ([`same_turn_text`]) and discards it otherwise.

use std::time::{Duration, Instant};

/// Speculative LLM start (opt-in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeculationConfig {
    /// Offer the partial at the VAD stop (else only the final is a candidate).
    pub on_partial: bool,
    /// How long the partial must stay unchanged after the stop before it is
    /// offered; zero offers it at once.
    pub partial_stable: Duration,
}

impl Default for SpeculationConfig {
    /// Candidates at the VAD stop (no stability wait) and at the final.
    fn default() -> Self {
        SpeculationConfig {
            on_partial: true,
            partial_stable: Duration::ZERO,
        }
    }
}

/// What the machine asks of the LLM stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Start (or restart with) a speculative run for this text.
    Start(String),
    /// Drop the speculative run.
    Withdraw,
}

/// Whether two turn texts are the same words: case, punctuation and spacing
/// are ignored ("Yes, please." and "yes please").
pub fn same_turn_text(a: &str, b: &str) -> bool {
    key(a) == key(b)
}

fn key(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The candidate state of one call.
#[derive(Debug, Default)]
pub(crate) struct Speculator {
    config: Option<SpeculationConfig>,
    /// The key of the candidate the LLM stage holds.
    offered: Option<String>,
    /// A partial waiting out its stability wait: (when it is offered, text).
    gate: Option<(Instant, String)>,
}

impl Speculator {
    /// `None`: speculation off, nothing is ever offered.
    pub(crate) fn new(config: Option<SpeculationConfig>) -> Self {
        Speculator {
            config,
            ..Speculator::default()
        }
    }

    /// The VAD stopped at `now`; `partial` is the turn's text so far.
    pub(crate) fn stopped(&mut self, now: Instant, partial: &str) -> Option<Offer> {
        let stable = self
            .config
            .as_ref()
            .filter(|c| c.on_partial)?
            .partial_stable;
        if key(partial).is_empty() {
            return None;
        }
        if stable.is_zero() {
            return self.offer(partial);
        }
        self.gate = Some((now + stable, partial.to_owned()));
        None
    }

    /// The partial changed while the caller is paused (a new interim).
    pub(crate) fn partial_changed(&mut self, now: Instant, partial: &str) -> Option<Offer> {
        let stable = self
            .config
            .as_ref()
            .filter(|c| c.on_partial)?
            .partial_stable;
        match &mut self.gate {
            Some((due, text)) if !same_turn_text(text, partial) => {
                *due = now + stable;
                partial.clone_into(text);
                None
            }
            Some(_) => None,
            None if stable.is_zero() && self.offered.is_some() => self.offer(partial),
            None => None,
        }
    }

    /// Every final of the paused turn is in; `finals` is the turn's text.
    pub(crate) fn finals_in(&mut self, finals: &str) -> Option<Offer> {
        self.config.as_ref()?;
        self.gate = None;
        if key(finals).is_empty() {
            return None;
        }
        self.offer(finals)
    }

    /// The turn waits out a shortened fallback with every final in
    /// ([`super::IncompleteShortcut::prefetch`]): `finals` is offered whether
    /// or not speculation is configured.
    pub(crate) fn prefetch(&mut self, finals: &str) -> Option<Offer> {
        if key(finals).is_empty() {
            return None;
        }
        self.offer(finals)
    }

    /// The caller spoke again: the candidate no longer holds.
    pub(crate) fn resumed(&mut self) -> Option<Offer> {
        self.gate = None;
        self.offered.take().map(|_| Offer::Withdraw)
    }

    /// The turn ended (the LLM stage commits or discards what it holds) or a
    /// new one began: nothing is pending any more.
    pub(crate) fn reset(&mut self) {
        self.gate = None;
        self.offered = None;
    }

    /// When the stability wait of a partial ends.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.gate.as_ref().map(|(due, _)| *due)
    }

    /// Offers the partial whose stability wait ended by `now`.
    pub(crate) fn timeout(&mut self, now: Instant) -> Option<Offer> {
        if self.due().is_none_or(|due| due > now) {
            return None;
        }
        let (_, text) = self.gate.take()?;
        self.offer(&text)
    }

    fn offer(&mut self, text: &str) -> Option<Offer> {
        let k = key(text);
        if self.offered.as_deref() == Some(k.as_str()) {
            return None;
        }
        self.offered = Some(k);
        Some(Offer::Start(text.trim().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The tests' one real origin; all later times derive from it.
    fn origin() -> Instant {
        #[allow(clippy::disallowed_methods)]
        Instant::now()
    }

    fn gated(stable: u64) -> Speculator {
        Speculator::new(Some(SpeculationConfig {
            on_partial: true,
            partial_stable: ms(stable),
        }))
    }

    #[test]
    fn texts_compare_by_their_words() {
        assert!(same_turn_text("Yes, please.", "yes  please"));
        assert!(same_turn_text("It's two o'clock", "it's two o'clock."));
        assert!(!same_turn_text("yes please", "yes please now"));
    }

    #[test]
    fn off_offers_nothing() {
        let mut s = Speculator::new(None);
        let t = origin();
        assert_eq!(s.stopped(t, "hello"), None);
        assert_eq!(s.finals_in("hello"), None);
        assert_eq!(s.resumed(), None);
    }

    #[test]
    fn the_partial_is_offered_at_the_stop_and_the_same_final_is_not_offered_again() {
        let mut s = gated(0);
        let t = origin();
        assert_eq!(
            s.stopped(t, "book a table"),
            Some(Offer::Start("book a table".into()))
        );
        assert_eq!(s.finals_in("Book a table."), None, "same words");
        assert_eq!(
            s.finals_in("book a table for two"),
            Some(Offer::Start("book a table for two".into())),
            "a different final supersedes it"
        );
        assert_eq!(s.resumed(), Some(Offer::Withdraw));
        assert_eq!(s.resumed(), None, "withdrawn once");
    }

    #[test]
    fn a_gated_partial_waits_and_a_change_restarts_the_wait() {
        let mut s = gated(200);
        let t = origin();
        assert_eq!(s.stopped(t, "book a"), None);
        assert_eq!(s.due(), Some(t + ms(200)));
        assert_eq!(s.partial_changed(t + ms(100), "book a table"), None);
        assert_eq!(s.due(), Some(t + ms(300)), "restarted");
        assert_eq!(s.timeout(t + ms(299)), None);
        assert_eq!(
            s.timeout(t + ms(300)),
            Some(Offer::Start("book a table".into()))
        );
        assert_eq!(s.due(), None);
    }

    #[test]
    fn the_final_replaces_a_waiting_partial_and_resuming_cancels_the_wait() {
        let mut s = gated(200);
        let t = origin();
        s.stopped(t, "book a");
        assert_eq!(s.finals_in("book a"), Some(Offer::Start("book a".into())));
        assert_eq!(s.due(), None, "the final is not gated");
        let mut s = gated(200);
        s.stopped(t, "book a");
        assert_eq!(s.resumed(), None, "nothing was offered yet");
        assert_eq!(s.due(), None);
    }

    #[test]
    fn final_only_offers_no_partial() {
        let mut s = Speculator::new(Some(SpeculationConfig {
            on_partial: false,
            partial_stable: Duration::ZERO,
        }));
        let t = origin();
        assert_eq!(s.stopped(t, "hello"), None);
        assert_eq!(s.finals_in("hello"), Some(Offer::Start("hello".into())));
        s.reset();
        assert_eq!(s.resumed(), None, "the turn ended: nothing to withdraw");
    }
}
