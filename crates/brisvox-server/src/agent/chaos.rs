//! `[chaos]`: provider faults for a seeded share of calls, so that one server
//! carries faulted and clean calls at once (chaos at load, #19 item 4).
//!
//! Only the mock providers can be faulted: a fault is the mock's own
//! [`Fault`](brisvox_providers::mock::Fault), counted per call (the call's
//! first LLM request, utterance or TTS context is index 0).

use serde::{Deserialize, Serialize};

use super::{AgentError, LlmProvider, SttProvider, TtsProvider};

/// Most indices one fault may list in `at`.
pub const MAX_FAULT_INDICES: usize = 64;

/// `[chaos]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChaosSettings {
    /// The share of calls that get the faults, 0 to 1.
    pub share: f64,
    /// The seed of the draw that picks a call (by its call id).
    #[serde(default)]
    pub seed: u64,
    /// `[chaos.stt]`: the mock STT's fault, by the call's utterance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stt: Option<FaultSettings>,
    /// `[chaos.llm]`: the mock LLM's fault, by the call's request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<FaultSettings>,
    /// `[chaos.tts]`: the mock TTS's fault, by the call's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts: Option<FaultSettings>,
}

/// What a faulted mock does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Fail at once with a server error of `status`.
    Refuse,
    /// Stream `items` items, then fail with a server error of `status`.
    FailAfter,
    /// Stream `items` items, then drop the connection.
    DisconnectAfter,
    /// Stream `items` items, then go silent.
    StallAfter,
    /// Delay the first item by `extra_ms` (on top of the mock's latency).
    SlowStart,
}

/// `[chaos.stt]`, `[chaos.llm]`, `[chaos.tts]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSettings {
    /// What goes wrong.
    pub fault: FaultKind,
    /// Which of the call's requests (LLM), utterances (STT) or contexts
    /// (TTS), counted from 0.
    #[serde(default = "first_only")]
    pub at: Vec<u64>,
    /// Items streamed before the failure (`fail_after`, `disconnect_after`,
    /// `stall_after`).
    #[serde(default)]
    pub items: u32,
    /// The server error's status (`refuse`, `fail_after`).
    #[serde(default = "default_status")]
    pub status: u16,
    /// The added first-item delay of `slow_start`, in ms.
    #[serde(default)]
    pub extra_ms: u64,
}

fn first_only() -> Vec<u64> {
    vec![0]
}

fn default_status() -> u16 {
    503
}

impl ChaosSettings {
    /// Checks the share, the faults, and that each faulted provider is the mock.
    pub(super) fn check(
        &self,
        stt: SttProvider,
        llm: LlmProvider,
        tts: TtsProvider,
    ) -> Result<(), AgentError> {
        if !(0.0..=1.0).contains(&self.share) {
            return Err(AgentError::invalid(
                "chaos.share",
                self.share,
                "a share from 0 to 1",
            ));
        }
        if self.stt.is_none() && self.llm.is_none() && self.tts.is_none() {
            return Err(AgentError::invalid(
                "chaos",
                "no fault",
                "at least one of [chaos.stt], [chaos.llm], [chaos.tts]",
            ));
        }
        let sections = [
            ("stt", &self.stt, stt == SttProvider::Mock),
            ("llm", &self.llm, llm == LlmProvider::Mock),
            ("tts", &self.tts, tts == TtsProvider::Mock),
        ];
        for (name, fault, mock) in sections {
            let Some(fault) = fault else { continue };
            if !mock {
                return Err(AgentError::invalid(
                    &format!("chaos.{name}"),
                    "a fault",
                    &format!("no [chaos.{name}] unless {name}.provider = \"mock\""),
                ));
            }
            fault.check(name)?;
        }
        Ok(())
    }
}

impl FaultSettings {
    fn check(&self, section: &str) -> Result<(), AgentError> {
        if self.at.is_empty() || self.at.len() > MAX_FAULT_INDICES {
            return Err(AgentError::invalid(
                &format!("chaos.{section}.at"),
                format!("{:?}", self.at),
                &format!("1 to {MAX_FAULT_INDICES} indices"),
            ));
        }
        if !(400..=599).contains(&self.status) {
            return Err(AgentError::invalid(
                &format!("chaos.{section}.status"),
                self.status,
                "an HTTP error status, 400 to 599",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::{AgentError, AgentSettings};

    fn parse(text: &str) -> Result<AgentSettings, AgentError> {
        AgentSettings::from_toml_str(text, &|_| Some("x".into()))
    }

    #[test]
    fn a_fault_section_reads_with_its_defaults() {
        let s = parse("[chaos]\nshare = 0.5\nseed = 3\n[chaos.llm]\nfault = \"refuse\"\n").unwrap();
        let chaos = s.chaos.expect("set");
        let llm = chaos.llm.expect("llm fault");
        assert_eq!((chaos.share, chaos.seed), (0.5, 3));
        assert_eq!((llm.at, llm.items, llm.status), (vec![0], 0, 503));
    }

    #[test]
    fn bad_chaos_settings_are_errors_naming_the_key() {
        for (text, key) in [
            (
                "[chaos]\nshare = 1.5\n[chaos.llm]\nfault = \"refuse\"\n",
                "chaos.share",
            ),
            ("[chaos]\nshare = 0.5\n", "chaos"),
            (
                "[chaos]\nshare = 0.5\n[chaos.tts]\nfault = \"refuse\"\nstatus = 200\n",
                "chaos.tts.status",
            ),
            (
                "[chaos]\nshare = 0.5\n[chaos.stt]\nfault = \"stall_after\"\nat = []\n",
                "chaos.stt.at",
            ),
            (
                "[llm]\nprovider = \"local\"\n[chaos]\nshare = 0.5\n[chaos.llm]\nfault = \"refuse\"\n",
                "chaos.llm",
            ),
        ] {
            let err = parse(text).expect_err(text).to_string();
            assert!(err.starts_with(&format!("{key} = ")), "{text}: {err}");
        }
        let unknown = parse("[chaos]\nshare = 0.5\n[chaos.llm]\nfault = \"explode\"\n");
        assert!(unknown.unwrap_err().to_string().contains("refuse"));
    }
}
