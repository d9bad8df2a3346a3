//! Chaos at load (`[chaos]`, #19 item 4): a seeded share of calls gets mock
//! providers of its own whose fault plans count that call's requests, so one
//! server carries faulted and clean calls at once.
//!
//! A call is picked by a seeded draw on its call id ([`picks`]): the same
//! seed and the same call ids give the same faulted calls in every run,
//! whatever order the calls arrive in. A picked call's faulted providers are
//! fresh mocks built from the agent file's `[stt.mock]`, `[llm.mock]` or
//! `[tts.mock]` with the fault of `[chaos.stt]`, `[chaos.llm]` or
//! `[chaos.tts]`; its other providers, and every other call's, are the
//! process's shared ones.

use std::sync::Arc;

use brisvox_engine::Providers;
use brisvox_providers::ProviderError;
use brisvox_providers::mock::{DetRng, Fault, FaultPlan};

use crate::agent::{
    AgentSettings, ChaosSettings, FaultKind, FaultSettings, MockLlmSettings, MockSttSettings,
    MockTtsSettings,
};
use crate::providers::{mock_llm, mock_stt, mock_tts};

/// The random stream of the call draw (apart from the mocks' own streams).
const CALL_DRAW_STREAM: u64 = 0xC4A0_5000;

/// The reason of the server errors the faults raise.
const FAULT_REASON: &str = "chaos fault";

/// The 64-bit FNV-1a hash of `text` (stable across platforms and releases).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xCBF2_9CE4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
    })
}

/// Whether a call with `call_id` is faulted, for `[chaos]` `seed` and `share`.
pub fn picks(seed: u64, share: f64, call_id: &str) -> bool {
    DetRng::for_stream(seed, CALL_DRAW_STREAM, fnv1a(call_id)).next_f64() < share
}

/// `[chaos]` with the mock settings its faulted providers are built from.
#[derive(Debug, Clone)]
pub struct CallChaos {
    settings: ChaosSettings,
    stt: MockSttSettings,
    llm: MockLlmSettings,
    tts: MockTtsSettings,
}

impl CallChaos {
    /// The agent file's `[chaos]`, if it has one.
    pub fn new(agent: &AgentSettings) -> Option<Self> {
        Some(CallChaos {
            settings: agent.chaos.clone()?,
            stt: agent.stt.mock.clone(),
            llm: agent.llm.mock.clone(),
            tts: agent.tts.mock.clone(),
        })
    }

    /// Gives call `call_id` its faulted mocks if the draw picks it; true when
    /// it did.
    pub fn apply(&self, call_id: &str, providers: &mut Providers) -> bool {
        let c = &self.settings;
        if !picks(c.seed, c.share, call_id) {
            return false;
        }
        // The mocks' own draws (random latencies) follow the seed and the call.
        let seed = c.seed ^ fnv1a(call_id);
        if let Some(f) = &c.stt {
            let stt = mock_stt(&self.stt, seed);
            stt.set_faults(plan(f));
            providers.stt = Arc::new(stt);
        }
        if let Some(f) = &c.llm {
            let llm = mock_llm(&self.llm, seed);
            llm.set_faults(plan(f));
            providers.llm = Arc::new(llm);
        }
        if let Some(f) = &c.tts {
            let tts = mock_tts(&self.tts, seed);
            tts.set_faults(plan(f));
            providers.tts = Arc::new(tts);
        }
        true
    }
}

/// The mock fault of `f`.
fn fault(f: &FaultSettings) -> Fault {
    let error = ProviderError::server(f.status, FAULT_REASON);
    match f.fault {
        FaultKind::Refuse => Fault::Refuse(error),
        FaultKind::FailAfter => Fault::FailAfter {
            items: f.items,
            error,
        },
        FaultKind::DisconnectAfter => Fault::DisconnectAfter { items: f.items },
        FaultKind::StallAfter => Fault::StallAfter { items: f.items },
        FaultKind::SlowStart => Fault::SlowStart {
            factor: 1.0,
            extra_ms: f.extra_ms,
        },
    }
}

/// The plan of `f`: its fault at each index of `at`.
fn plan(f: &FaultSettings) -> FaultPlan {
    let fault = fault(f);
    f.at.iter()
        .fold(FaultPlan::none(), |p, &i| p.at(i, fault.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_follows_seed_share_and_call_id() {
        let ids: Vec<String> = (0..1000).map(|i| format!("cap-0-{i}-0")).collect();
        let picked = |seed, share| ids.iter().filter(|id| picks(seed, share, id)).count();
        assert_eq!(picked(1, 0.0), 0);
        assert_eq!(picked(1, 1.0), 1000);
        let half = picked(1, 0.5);
        assert!((430..570).contains(&half), "{half} of 1000 at 0.5");
        let again: Vec<bool> = ids.iter().map(|id| picks(1, 0.5, id)).collect();
        let other: Vec<bool> = ids.iter().map(|id| picks(2, 0.5, id)).collect();
        assert_eq!(
            again,
            ids.iter().map(|id| picks(1, 0.5, id)).collect::<Vec<_>>()
        );
        assert_ne!(again, other, "another seed picks other calls");
    }

    #[test]
    fn the_plan_faults_each_listed_index_of_the_call() {
        let f = FaultSettings {
            fault: FaultKind::FailAfter,
            at: vec![0, 2],
            items: 3,
            status: 500,
            extra_ms: 0,
        };
        let want = Fault::FailAfter {
            items: 3,
            error: ProviderError::server(500, FAULT_REASON),
        };
        let p = plan(&f);
        assert_eq!(p.fault_for(0, 0), Some(want.clone()));
        assert_eq!(p.fault_for(0, 1), None);
        assert_eq!(p.fault_for(0, 2), Some(want));
    }
}
