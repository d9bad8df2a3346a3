//! Pooling the turns of many calls: outcome counts, nearest-rank V2V percentiles
//! overall, by fixture and by turn position, send lateness, and the servers' own
//! `turn_metrics`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::client::CallRecord;
use super::stats::{self, Summary};
use super::turns::Outcome;

/// The pooled view of a set of calls.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Aggregate {
    /// Calls run.
    pub(crate) calls: usize,
    /// Calls with an error (connect, refusal, broken socket, error event).
    pub(crate) failed_calls: usize,
    /// Turns by outcome name (every turn of every call, failed calls included).
    pub(crate) outcomes: BTreeMap<&'static str, usize>,
    /// V2V of all answered turns, ms.
    pub(crate) v2v_ms: Option<Summary>,
    /// V2V by `fixture/turN` (1-based position in the fixture), ms.
    pub(crate) v2v_by_turn_ms: BTreeMap<String, Summary>,
    /// V2V by fixture, ms.
    pub(crate) v2v_by_fixture_ms: BTreeMap<String, Summary>,
    /// V2V by the utterance's language (`lang:en`; `lang:?` when the sidecar has none), ms.
    pub(crate) v2v_by_language_ms: BTreeMap<String, Summary>,
    /// Frames sent by the client.
    pub(crate) frames_sent: u64,
    /// Largest send lateness over all frames, ms.
    pub(crate) lateness_max_ms: f64,
    /// Nearest-rank p99 of the send lateness of all frames, ms.
    pub(crate) lateness_p99_ms: f64,
    /// Frames sent more than 100 ms late.
    pub(crate) frames_late_100ms: u64,
    /// Server-side metrics by field (`response_latency_ms`, ...), over all
    /// `turn_metrics` events, ms.
    pub(crate) server_metrics_ms: BTreeMap<String, Summary>,
}

impl Aggregate {
    /// Pools `calls`.
    pub(crate) fn of(calls: &[CallRecord]) -> Aggregate {
        let mut outcomes: BTreeMap<&'static str, usize> = BTreeMap::new();
        for o in [
            Outcome::Answered,
            Outcome::TalkedOver,
            Outcome::BotSpeaking,
            Outcome::NoResponse,
        ] {
            outcomes.insert(o.name(), 0);
        }
        let mut all = Vec::new();
        let mut by_turn: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut by_fixture: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut by_language: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut server: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut lateness: Vec<u32> = Vec::new();
        for call in calls {
            for (i, t) in call.turns.iter().enumerate() {
                *outcomes.entry(t.outcome.name()).or_default() += 1;
                if let (Outcome::Answered, Some(v)) = (t.outcome, t.v2v_ms) {
                    all.push(v);
                    by_turn
                        .entry(format!("{}/turn{}", call.fixture, i + 1))
                        .or_default()
                        .push(v);
                    by_fixture.entry(call.fixture.clone()).or_default().push(v);
                    let lang = call
                        .languages
                        .get(i)
                        .filter(|l| !l.is_empty())
                        .map_or("?", |l| l.as_str());
                    by_language
                        .entry(format!("lang:{lang}"))
                        .or_default()
                        .push(v);
                }
            }
            for m in &call.turn_metrics {
                if let Some(obj) = m.as_object() {
                    for (k, v) in obj {
                        // The engine hops have their own table (`hops`), in finer units.
                        let hop = super::hops::HOP_FIELDS.contains(&k.as_str());
                        if let (true, Some(x)) = (k.ends_with("_ms") && !hop, v.as_f64()) {
                            server.entry(k.clone()).or_default().push(x);
                        }
                    }
                }
            }
            lateness.extend_from_slice(&call.lateness_us);
        }
        lateness.sort_unstable();
        let late: Vec<f64> = lateness.iter().map(|&u| f64::from(u) / 1000.0).collect();
        let summarize_map = |m: BTreeMap<String, Vec<f64>>| {
            m.into_iter()
                .filter_map(|(k, v)| Some((k, stats::summarize(&v)?)))
                .collect()
        };
        Aggregate {
            calls: calls.len(),
            failed_calls: calls.iter().filter(|c| c.error.is_some()).count(),
            outcomes,
            v2v_ms: stats::summarize(&all),
            v2v_by_turn_ms: summarize_map(by_turn),
            v2v_by_fixture_ms: summarize_map(by_fixture),
            v2v_by_language_ms: summarize_map(by_language),
            frames_sent: calls.iter().map(|c| c.frames_sent).sum(),
            lateness_max_ms: calls.iter().map(|c| c.lateness_max_ms).fold(0.0, f64::max),
            lateness_p99_ms: stats::nearest_rank(&late, 99.0).unwrap_or(0.0),
            frames_late_100ms: calls.iter().map(|c| c.frames_late_100ms).sum(),
            server_metrics_ms: summarize_map(server),
        }
    }

    /// Turns that are not clean latency samples.
    pub(crate) fn unclean_turns(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|(k, _)| **k != "answered")
            .map(|(_, v)| v)
            .sum()
    }

    /// Markdown: the counts and the percentile tables.
    pub(crate) fn markdown(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "calls: {} ({} failed); turns: {}\n\n",
            self.calls,
            self.failed_calls,
            self.outcomes
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        s.push_str(
            "| V2V (ms) | n | p50 | p90 | p95 | p99 | max |\n|---|---|---|---|---|---|---|\n",
        );
        let row = |name: &str, x: &Summary| {
            format!(
                "| {name} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
                x.n, x.p50, x.p90, x.p95, x.p99, x.max
            )
        };
        if let Some(x) = &self.v2v_ms {
            s.push_str(&row("all answered turns", x));
        }
        for (k, x) in self
            .v2v_by_fixture_ms
            .iter()
            .chain(self.v2v_by_turn_ms.iter())
        {
            s.push_str(&row(k, x));
        }
        s.push_str(&format!(
            "\nclient send lateness: max {:.1} ms, p99 {:.2} ms over {} frames; {} frames more than 100 ms late\n",
            self.lateness_max_ms, self.lateness_p99_ms, self.frames_sent, self.frames_late_100ms
        ));
        if !self.server_metrics_ms.is_empty() {
            s.push_str("\n| server turn_metrics (ms) | n | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|\n");
            for (k, x) in &self.server_metrics_ms {
                s.push_str(&format!(
                    "| {k} | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
                    x.n, x.p50, x.p90, x.p99, x.max
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2v::turns::TurnResult;

    fn call(fixture: &str, langs: &[&str], v2v: &[Option<f64>], error: bool) -> CallRecord {
        CallRecord {
            fixture: fixture.into(),
            transport: "call",
            error: error.then(|| "broke".to_string()),
            turns: v2v
                .iter()
                .map(|v| TurnResult::answered_or_not(*v))
                .collect(),
            languages: langs.iter().map(|s| s.to_string()).collect(),
            frames_sent: 10,
            lateness_max_ms: 3.0,
            frames_late_100ms: 0,
            lateness_us: (1..=10).map(|k| k * 1000).collect(),
            turn_metrics: vec![
                serde_json::json!({"type": "turn_metrics", "turn": 1, "response_latency_ms": 700.0}),
            ],
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
    fn turns_are_split_by_fixture_language_and_position_and_none_dropped() {
        let calls = [
            call("a", &["en", "tr"], &[Some(800.0), Some(900.0)], false),
            call("a", &["en", "tr"], &[Some(810.0), None], false),
            call("b", &[""], &[Some(1000.0)], true),
        ];
        let agg = Aggregate::of(&calls);
        assert_eq!(agg.calls, 3);
        assert_eq!(agg.failed_calls, 1);
        assert_eq!(agg.outcomes["answered"], 4);
        assert_eq!(agg.outcomes["no_response"], 1);
        assert_eq!(agg.unclean_turns(), 1);
        assert_eq!(agg.v2v_ms.unwrap().n, 4);
        assert_eq!(agg.v2v_by_turn_ms["a/turn1"].n, 2);
        assert_eq!(agg.v2v_by_turn_ms["a/turn2"].n, 1);
        assert_eq!(agg.v2v_by_fixture_ms["b"].p50, 1000.0);
        assert_eq!(agg.v2v_by_language_ms["lang:en"].n, 2);
        assert_eq!(agg.v2v_by_language_ms["lang:?"].n, 1);
        assert_eq!(agg.lateness_p99_ms, 10.0);
        assert_eq!(agg.server_metrics_ms["response_latency_ms"].n, 3);
    }
}
