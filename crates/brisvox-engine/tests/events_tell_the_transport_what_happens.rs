//! A call's events reach the transport as they happen: transcripts, the bot
//! starting and stopping to speak, and one finished-turn record per turn with
//! its metrics. (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use brisvox_engine::sim::{RecordingSink, SimCaller};
use brisvox_engine::{CallEdge, EngineEvent, EventBus, Models, run_call};
use common::*;

#[tokio::test(start_paused = true)]
async fn a_two_turn_call_emits_transcripts_speaking_and_turn_records() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(3);
    let mut events = EventBus::new();
    let mut rx = events.subscribe(256);
    let (sink, _log) = RecordingSink::new();
    let caller = SimCaller::new(then_silence(fx.samples.clone(), 3_000));
    let report = run_call(
        sim_config(),
        CallEdge::new(caller, sink).with_events(events),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await
    .expect("a valid config");
    let mut got = Vec::new();
    while let Some(e) = rx.try_recv() {
        got.push(e);
    }
    assert_eq!(rx.dropped(), 0);
    let finals: Vec<_> = got
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Transcript {
                text,
                is_final: true,
            } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finals, ["utterance 0", "utterance 1"]);
    let started = got
        .iter()
        .filter(|e| matches!(e, EngineEvent::BotSpeakingStarted { .. }))
        .count();
    let stopped = got
        .iter()
        .filter(|e| matches!(e, EngineEvent::BotSpeakingStopped { .. }))
        .count();
    assert_eq!((started, stopped), (2, 2));
    let records: Vec<_> = got
        .iter()
        .filter_map(|e| match e {
            EngineEvent::TurnFinished { record } => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(records.len(), report.turns.len());
    let answered = records
        .iter()
        .filter(|r| r.metrics().response_latency.is_some())
        .count();
    assert_eq!(answered, 2);
    // One turn_metrics per caller's turn, each with its response latency.
    let metrics: Vec<_> = got
        .iter()
        .filter_map(|e| match e {
            EngineEvent::TurnMetrics { record } => Some(record.epoch()),
            _ => None,
        })
        .collect();
    assert_eq!(metrics, [brisvox_core::Epoch(1), brisvox_core::Epoch(2)]);
}
