//! The transports of one `--transports call,webrtc` run side by side: V2V
//! per transport (n, p50, p95, min, max), the server's own response latency
//! per transport (what the engine took, whatever the wire), and WebRTC
//! against `/call` as ratios of the p50s and p95s and as the median of the
//! paired differences (the same fixture's turn in two consecutive calls, one
//! per transport).

use serde::Serialize;

use super::client::{CallRecord, Transport};
use super::stats::{self, Summary};
use super::turns::Outcome;

/// One transport's share of the run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TransportSummary {
    /// `call` or `webrtc`.
    pub(crate) transport: &'static str,
    /// Calls placed over it.
    pub(crate) calls: usize,
    /// Calls with an error.
    pub(crate) failed_calls: usize,
    /// Turns of its calls.
    pub(crate) turns: usize,
    /// V2V of its answered turns, ms.
    pub(crate) v2v_ms: Option<Summary>,
    /// The servers' `response_latency_ms` of its turns.
    pub(crate) server_response_latency_ms: Option<Summary>,
    /// V2V minus the server's `response_latency_ms` of the same turn, ms:
    /// the share outside the engine (both wires, the caller, and where the
    /// engine's clock starts), without the turn verdict's spread. Only calls
    /// whose answered turns and `response_latency_ms` pair one to one.
    pub(crate) outside_engine_ms: Option<Summary>,
}

/// The run's transports side by side.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SideBySide {
    /// One entry per transport, in `--transports` order.
    pub(crate) transports: Vec<TransportSummary>,
    /// WebRTC's V2V p50 over `/call`'s (both transports measured).
    pub(crate) ratio_p50: Option<f64>,
    /// WebRTC's V2V p95 over `/call`'s.
    pub(crate) ratio_p95: Option<f64>,
    /// WebRTC's p50 of V2V minus the server's response latency over
    /// `/call`'s (the share outside the engine).
    pub(crate) ratio_outside_engine_p50: Option<f64>,
    /// WebRTC minus `/call`, turn by turn, for each fixture's turn answered
    /// in both calls of a pair (call `2j` and `2j+1`), ms.
    pub(crate) paired_diff_ms: Option<Summary>,
}

fn answered(call: &CallRecord) -> impl Iterator<Item = Option<f64>> + '_ {
    call.turns.iter().map(|t| match t.outcome {
        Outcome::Answered => t.v2v_ms,
        _ => None,
    })
}

/// V2V minus the server's response latency, turn by turn, when the call's
/// answered turns and its `response_latency_ms` values pair one to one.
fn outside_engine(call: &CallRecord) -> Vec<f64> {
    let v2v: Vec<f64> = answered(call).flatten().collect();
    let server: Vec<f64> = call
        .turn_metrics
        .iter()
        .filter_map(|m| m["response_latency_ms"].as_f64())
        .collect();
    if v2v.len() != server.len() {
        return Vec::new();
    }
    v2v.iter().zip(&server).map(|(v, s)| v - s).collect()
}

fn summary_of(transport: Transport, calls: &[CallRecord]) -> TransportSummary {
    let mine: Vec<&CallRecord> = calls
        .iter()
        .filter(|c| c.transport == transport.name())
        .collect();
    let v2v: Vec<f64> = mine.iter().flat_map(|c| answered(c)).flatten().collect();
    let server: Vec<f64> = mine
        .iter()
        .flat_map(|c| &c.turn_metrics)
        .filter_map(|m| m["response_latency_ms"].as_f64())
        .collect();
    let outside: Vec<f64> = mine.iter().flat_map(|c| outside_engine(c)).collect();
    TransportSummary {
        outside_engine_ms: stats::summarize(&outside),
        transport: transport.name(),
        calls: mine.len(),
        failed_calls: mine.iter().filter(|c| c.error.is_some()).count(),
        turns: mine.iter().map(|c| c.turns.len()).sum(),
        v2v_ms: stats::summarize(&v2v),
        server_response_latency_ms: stats::summarize(&server),
    }
}

impl SideBySide {
    /// The calls of a run over `transports` in turn ([`super::run_interleaved`]).
    pub(crate) fn of(transports: &[Transport], calls: &[CallRecord]) -> SideBySide {
        let summaries: Vec<TransportSummary> =
            transports.iter().map(|&t| summary_of(t, calls)).collect();
        let v2v = |t: Transport| {
            summaries
                .iter()
                .find(|s| s.transport == t.name())
                .and_then(|s| s.v2v_ms)
        };
        let (call, rtc) = (v2v(Transport::Url), v2v(Transport::WebRtc));
        let ratio = |f: fn(&Summary) -> f64| Some(f(rtc.as_ref()?) / f(call.as_ref()?));
        let outside = |t: Transport| {
            summaries
                .iter()
                .find(|s| s.transport == t.name())
                .and_then(|s| s.outside_engine_ms)
        };
        let (call_out, rtc_out) = (outside(Transport::Url), outside(Transport::WebRtc));
        SideBySide {
            ratio_outside_engine_p50: rtc_out.zip(call_out).map(|(r, c)| r.p50 / c.p50),
            ratio_p50: ratio(|s| s.p50),
            ratio_p95: ratio(|s| s.p95),
            paired_diff_ms: paired(transports, calls),
            transports: summaries,
        }
    }

    /// The markdown section.
    pub(crate) fn markdown(&self) -> String {
        let mut s = String::from(
            "\n## Transports side by side (calls in turn, one server)\n\n\
             | transport | calls (failed) | turns | V2V n | p50 | p95 | min | max | server response_latency_ms p50 | V2V minus response_latency_ms: n, p50, p95 |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
        );
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
        for t in &self.transports {
            let v = t.v2v_ms.as_ref();
            let o = t.outside_engine_ms.as_ref();
            let outside = o.map_or("-".to_owned(), |o| {
                format!("{}, {:.1}, {:.1}", o.n, o.p50, o.p95)
            });
            s.push_str(&format!(
                "| {} | {} ({}) | {} | {} | {} | {} | {} | {} | {} | {outside} |\n",
                t.transport,
                t.calls,
                t.failed_calls,
                t.turns,
                v.map_or(0, |v| v.n),
                ms(v.map(|v| v.p50)),
                ms(v.map(|v| v.p95)),
                ms(v.map(|v| v.min)),
                ms(v.map(|v| v.max)),
                ms(t.server_response_latency_ms.map(|v| v.p50)),
            ));
        }
        let ratio = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.3}"));
        s.push_str(&format!(
            "\nWebRTC / `/call`: p50 ratio {}, p95 ratio {}",
            ratio(self.ratio_p50),
            ratio(self.ratio_p95)
        ));
        if let Some(d) = &self.paired_diff_ms {
            s.push_str(&format!(
                "; paired differences (WebRTC minus `/call`, same fixture and turn, consecutive calls): n {}, median {:+.1} ms, min {:+.1}, max {:+.1}",
                d.n, d.p50, d.min, d.max
            ));
        }
        s.push_str(".\n");
        if let Some(r) = self.ratio_outside_engine_p50 {
            s.push_str(&format!(
                "\nOutside the engine (V2V minus the server's own response_latency_ms of the turn: the wires, the caller, where the engine's clock starts; the turn verdict's spread taken out), WebRTC / `/call` p50 ratio {r:.3}.\n"
            ));
        }
        s
    }
}

/// WebRTC minus `/call` for each turn answered in both calls of a pair.
fn paired(transports: &[Transport], calls: &[CallRecord]) -> Option<Summary> {
    let n = transports.len();
    let call = transports.iter().position(|&t| t == Transport::Url)?;
    let rtc = transports.iter().position(|&t| t == Transport::WebRtc)?;
    let mut diffs = Vec::new();
    for group in calls.chunks_exact(n) {
        let pairs = answered(&group[call]).zip(answered(&group[rtc]));
        for (a, b) in pairs {
            if let (Some(a), Some(b)) = (a, b) {
                diffs.push(b - a);
            }
        }
    }
    stats::summarize(&diffs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2v::turns::TurnResult;

    fn call(transport: Transport, v2v: &[Option<f64>]) -> CallRecord {
        let turns = v2v
            .iter()
            .map(|v| TurnResult::answered_or_not(*v))
            .collect();
        CallRecord {
            transport: transport.name(),
            turns,
            ..CallRecord::default()
        }
    }

    #[test]
    fn transports_are_summed_apart_and_paired_turn_by_turn() {
        use Transport::{Url, WebRtc};
        let calls = [
            call(Url, &[Some(800.0), Some(900.0)]),
            call(WebRtc, &[Some(820.0), None]),
            call(Url, &[Some(810.0), Some(700.0)]),
            call(WebRtc, &[Some(850.0), Some(760.0)]),
        ];
        let s = SideBySide::of(&[Url, WebRtc], &calls);
        let v = |i: usize| s.transports[i].v2v_ms.unwrap();
        assert_eq!((v(0).n, v(0).p50, v(0).max), (4, 800.0, 900.0));
        assert_eq!((v(1).n, v(1).p50, v(1).min), (3, 820.0, 760.0));
        assert_eq!(s.ratio_p50, Some(820.0 / 800.0));
        // 820-800, 850-810, 760-700; the unanswered turn pairs with nothing.
        let d = s.paired_diff_ms.unwrap();
        assert_eq!((d.n, d.min, d.p50, d.max), (3, 20.0, 40.0, 60.0));
        assert!(s.markdown().contains("| webrtc | 2 (0) | 4 | 3 | 820.0"));
        // No turn_metrics in these records: nothing to take the engine's share from.
        assert_eq!(s.ratio_outside_engine_p50, None);
    }

    #[test]
    fn the_share_outside_the_engine_pairs_each_turn_with_its_metrics() {
        let mut a = call(Transport::Url, &[Some(800.0)]);
        a.turn_metrics = vec![serde_json::json!({"response_latency_ms": 700.0})];
        let mut b = call(Transport::WebRtc, &[Some(830.0)]);
        b.turn_metrics = vec![serde_json::json!({"response_latency_ms": 710.0})];
        // A call whose turns and metrics do not pair one to one counts for nothing.
        let mut c = call(Transport::WebRtc, &[Some(900.0), Some(950.0)]);
        c.turn_metrics = vec![serde_json::json!({"response_latency_ms": 1.0})];
        let s = SideBySide::of(&[Transport::Url, Transport::WebRtc], &[a, b, c]);
        let out = |i: usize| s.transports[i].outside_engine_ms.unwrap();
        assert_eq!((out(0).n, out(0).p50), (1, 100.0));
        assert_eq!((out(1).n, out(1).p50), (1, 120.0));
        assert_eq!(s.ratio_outside_engine_p50, Some(1.2));
    }

    #[test]
    fn one_transport_has_no_ratio() {
        let calls = [call(Transport::Url, &[Some(800.0)])];
        let s = SideBySide::of(&[Transport::Url], &calls);
        assert_eq!((s.ratio_p50, s.paired_diff_ms), (None, None));
    }
}
