//! Failure injection for the mocks.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{DetRng, streams};
use crate::ProviderError;

/// Something a mock does wrong. "Items" are what the mock streams: tokens or
/// tool-call pieces (LLM), transcript events (STT, per utterance), audio chunks
/// (TTS, per context).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fault {
    /// Fail at once: a refused connection (STT, TTS `connect`), a refused
    /// request (LLM: the stream's first event), a refused context (TTS).
    Refuse(ProviderError),
    /// Stream `items` items, then fail with `error` when the next one was due
    /// (`items: 0` with a 5xx is a server error before the first token).
    FailAfter {
        /// Items delivered before the failure.
        items: u32,
        /// The failure.
        error: ProviderError,
    },
    /// Stream `items` items, then drop the connection
    /// ([`ProviderError::Disconnected`]; STT and TTS sessions end).
    DisconnectAfter {
        /// Items delivered before the drop.
        items: u32,
    },
    /// Stream `items` items, then go silent until cancelled or closed.
    StallAfter {
        /// Items delivered before the stall.
        items: u32,
    },
    /// Delay the first item (first token, final, first audio):
    /// `sampled * factor + extra_ms`. At `connect`, delays the connection.
    SlowStart {
        /// Multiplier of the sampled delay.
        factor: f64,
        /// Added on top, in milliseconds.
        extra_ms: u64,
    },
}

impl Fault {
    /// The first-item delay under this fault, given the sampled one.
    pub fn first_delay(&self, sampled: Duration) -> Duration {
        match self {
            Fault::SlowStart { factor, extra_ms } => {
                let ms = (sampled.as_millis() as f64 * factor.max(0.0)).round();
                // Saturating float-to-int cast.
                Duration::from_millis(ms as u64 + extra_ms)
            }
            _ => sampled,
        }
    }
}

/// Which requests (sessions, utterances, contexts) fail and how.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    at: BTreeMap<u64, Fault>,
    random: Option<(f64, Fault)>,
}

impl FaultPlan {
    /// No failures.
    pub fn none() -> Self {
        Self::default()
    }

    /// The same plan, with `fault` at index `index` (0-based, counted by the mock).
    #[must_use]
    pub fn at(mut self, index: u64, fault: Fault) -> Self {
        self.at.insert(index, fault);
        self
    }

    /// The same plan, with `fault` on every index not listed with
    /// [`FaultPlan::at`] with probability `probability` (a seeded draw per index).
    #[must_use]
    pub fn with_probability(mut self, probability: f64, fault: Fault) -> Self {
        self.random = Some((probability, fault));
        self
    }

    /// The fault for item `index` of a mock seeded with `seed`, if any.
    pub fn fault_for(&self, seed: u64, index: u64) -> Option<Fault> {
        if let Some(fault) = self.at.get(&index) {
            return Some(fault.clone());
        }
        let (probability, fault) = self.random.as_ref()?;
        let draw = DetRng::for_stream(seed, streams::FAULT, index).next_f64();
        (draw < *probability).then(|| fault.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_indices_win_and_random_faults_follow_the_seed() {
        let plan = FaultPlan::none()
            .at(2, Fault::StallAfter { items: 1 })
            .with_probability(0.5, Fault::Refuse(ProviderError::Cancelled));
        assert_eq!(plan.fault_for(9, 2), Some(Fault::StallAfter { items: 1 }));
        let hits: Vec<bool> = (0..1000)
            .map(|i| plan.fault_for(9, i + 10).is_some())
            .collect();
        let again: Vec<bool> = (0..1000)
            .map(|i| plan.fault_for(9, i + 10).is_some())
            .collect();
        assert_eq!(hits, again);
        let n = hits.iter().filter(|h| **h).count();
        assert!((400..600).contains(&n), "{n} of 1000 at p = 0.5");
    }

    #[test]
    fn slow_start_scales_then_adds() {
        let f = Fault::SlowStart {
            factor: 2.0,
            extra_ms: 5,
        };
        assert_eq!(
            f.first_delay(Duration::from_millis(100)),
            Duration::from_millis(205)
        );
    }
}
