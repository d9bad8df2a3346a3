//! The engine's own stage times, as a server reports them in `turn_metrics`
//! (`docs/WEBSOCKET_PROTOCOL.md`, "Engine hops"): turn end to the LLM request,
//! the TTS's first audio to the transport, a barge-in's decision to its clear.
//!
//! The fields are optional: a server that does not send them (the Pipecat peer)
//! gives no samples, never an error. A value that is not a finite, non-negative
//! number, or an event that is not a JSON object, is counted as malformed and
//! left out; nothing here panics on what a server sends.

use std::collections::BTreeMap;

use serde::Serialize;

use super::client::CallRecord;
use super::stats::{self, Summary};

/// The hop fields of `turn_metrics`, in milliseconds (fractional).
pub(crate) const HOP_FIELDS: [&str; 3] = [
    "turn_end_to_llm_ms",
    "tts_first_byte_to_transport_ms",
    "interrupt_to_clear_ms",
];

/// The hops of a set of calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct EngineHops {
    /// `turn_metrics` events seen.
    pub(crate) events: usize,
    /// Events that were not JSON objects.
    pub(crate) malformed_events: usize,
    /// Per hop: the samples (ms, in arrival order), how many events lacked
    /// the field, how many carried a value that is not a duration.
    pub(crate) hops: BTreeMap<&'static str, HopSamples>,
}

/// One hop's samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct HopSamples {
    /// Every value, ms.
    pub(crate) samples_ms: Vec<f64>,
    /// Events without the field.
    pub(crate) absent: usize,
    /// Values that were not a finite, non-negative number.
    pub(crate) malformed: usize,
    /// Nearest-rank summary of `samples_ms`, ms; `None` without samples.
    pub(crate) summary_ms: Option<Summary>,
}

impl EngineHops {
    /// Collects the hops of every `turn_metrics` event of `calls`.
    pub(crate) fn of(calls: &[CallRecord]) -> EngineHops {
        let mut out = EngineHops::default();
        for field in HOP_FIELDS {
            out.hops.insert(field, HopSamples::default());
        }
        for event in calls.iter().flat_map(|c| &c.turn_metrics) {
            out.add(event);
        }
        for h in out.hops.values_mut() {
            h.summary_ms = stats::summarize(&h.samples_ms);
        }
        out
    }

    fn add(&mut self, event: &serde_json::Value) {
        self.events += 1;
        let Some(obj) = event.as_object() else {
            self.malformed_events += 1;
            return;
        };
        for (field, h) in &mut self.hops {
            match obj.get(*field) {
                None | Some(serde_json::Value::Null) => h.absent += 1,
                Some(v) => match v.as_f64() {
                    Some(x) if x.is_finite() && x >= 0.0 => h.samples_ms.push(x),
                    _ => h.malformed += 1,
                },
            }
        }
    }

    /// Whether any hop has a sample (the server sends them).
    pub(crate) fn any(&self) -> bool {
        self.hops.values().any(|h| !h.samples_ms.is_empty())
    }

    /// Markdown: a table in ms with three decimals, or a line saying the server
    /// sent none.
    pub(crate) fn markdown(&self) -> String {
        let mut s = String::new();
        if !self.any() {
            s.push_str(&format!(
                "engine hops: none reported in {} turn_metrics events (a server that does not send them, or no turn_metrics)\n",
                self.events
            ));
            return s;
        }
        s.push_str("| engine hop (ms, server timeline) | n | p50 | p95 | p99 | max | absent | malformed |\n|---|---|---|---|---|---|---|---|\n");
        for (field, h) in &self.hops {
            match &h.summary_ms {
                Some(x) => s.push_str(&format!(
                    "| {field} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} |\n",
                    x.n, x.p50, x.p95, x.p99, x.max, h.absent, h.malformed
                )),
                None => s.push_str(&format!(
                    "| {field} | 0 | - | - | - | - | {} | {} |\n",
                    h.absent, h.malformed
                )),
            }
        }
        if self.malformed_events > 0 {
            s.push_str(&format!(
                "\n{} turn_metrics events were not JSON objects\n",
                self.malformed_events
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(metrics: Vec<serde_json::Value>) -> CallRecord {
        CallRecord {
            fixture: "f".into(),
            transport: "call",
            error: None,
            turns: Vec::new(),
            languages: Vec::new(),
            frames_sent: 0,
            lateness_max_ms: 0.0,
            frames_late_100ms: 0,
            lateness_us: Vec::new(),
            turn_metrics: metrics,
            clears: 0,
            clear_us: Vec::new(),
            bot_audio_messages: 0,
            bot_audio_us: Vec::new(),
            end_reason: None,
            call_id: String::new(),
            bot_texts: Vec::new(),
        }
    }

    #[test]
    fn present_hops_are_collected_and_summarised() {
        let calls = [
            call(vec![
                json!({"type": "turn_metrics", "turn": 1, "turn_end_to_llm_ms": 0.04, "tts_first_byte_to_transport_ms": 0.06}),
                json!({"type": "turn_metrics", "turn": 2, "turn_end_to_llm_ms": 0.02, "tts_first_byte_to_transport_ms": 0.09}),
            ]),
            call(vec![
                json!({"type": "turn_metrics", "turn": 1, "turn_end_to_llm_ms": 0.03, "interrupt_to_clear_ms": 0.5}),
            ]),
        ];
        let h = EngineHops::of(&calls);
        assert_eq!(h.events, 3);
        let llm = &h.hops["turn_end_to_llm_ms"];
        assert_eq!(llm.samples_ms, vec![0.04, 0.02, 0.03]);
        assert_eq!(llm.summary_ms.unwrap().p50, 0.03);
        assert_eq!(h.hops["tts_first_byte_to_transport_ms"].absent, 1);
        assert_eq!(h.hops["interrupt_to_clear_ms"].samples_ms, vec![0.5]);
        assert!(h.any());
        let md = h.markdown();
        assert!(md.contains("| turn_end_to_llm_ms | 3 | 0.030 |"), "{md}");
    }

    #[test]
    fn a_server_without_hops_gives_no_samples_and_says_so() {
        let calls = [call(vec![
            json!({"type": "turn_metrics", "turn": 1, "response_latency_ms": 700.0}),
        ])];
        let h = EngineHops::of(&calls);
        assert!(!h.any());
        assert_eq!(h.hops["turn_end_to_llm_ms"].absent, 1);
        assert!(h.hops.values().all(|x| x.summary_ms.is_none()));
        assert!(
            h.markdown()
                .contains("none reported in 1 turn_metrics events")
        );
        let none = EngineHops::of(&[call(Vec::new())]);
        assert_eq!(none.events, 0);
        assert!(!none.any());
    }

    #[test]
    fn malformed_values_and_events_are_counted_not_used() {
        let calls = [call(vec![
            json!({"type": "turn_metrics", "turn_end_to_llm_ms": "fast", "tts_first_byte_to_transport_ms": -1.0, "interrupt_to_clear_ms": null}),
            json!({"type": "turn_metrics", "turn_end_to_llm_ms": [1], "tts_first_byte_to_transport_ms": {"x": 1}}),
            json!("turn_metrics"),
            json!(null),
            json!({"type": "turn_metrics", "turn_end_to_llm_ms": 1e308, "tts_first_byte_to_transport_ms": 0.0}),
        ])];
        let h = EngineHops::of(&calls);
        assert_eq!(h.events, 5);
        assert_eq!(h.malformed_events, 2);
        let llm = &h.hops["turn_end_to_llm_ms"];
        assert_eq!((llm.malformed, llm.absent), (2, 0));
        assert_eq!(llm.samples_ms, vec![1e308]);
        let tts = &h.hops["tts_first_byte_to_transport_ms"];
        assert_eq!((tts.malformed, tts.samples_ms.clone()), (2, vec![0.0]));
        assert_eq!(h.hops["interrupt_to_clear_ms"].absent, 3);
        let md = h.markdown();
        assert!(
            md.contains("2 turn_metrics events were not JSON objects"),
            "{md}"
        );
    }
}
