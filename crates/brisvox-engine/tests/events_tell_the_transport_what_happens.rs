//! A call's events reach the transport as they happen: transcripts, the bot
//! starting and stopping to speak, and one finished-turn record per turn with
//! its metrics. (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use brisvox_engine::sim::{RecordingSink, SimCaller};
use brisvox_engine::{EngineEvent, EventSink, Models, run_call_with_events};
use common::*;

#[tokio::test(start_paused = true)]
async fn a_two_turn_call_emits_transcripts_speaking_and_turn_records() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(3);
    let (events, mut rx) = EventSink::channel(256);
    let (sink, _log) = RecordingSink::new();
    let report = run_call_with_events(
        sim_config(),
        SimCaller::new(then_silence(fx.samples.clone(), 3_000)),
        sink,
        mocks.providers(),
        Models::energy_and_complete(),
        events.clone(),
    )
    .await
    .expect("a valid config");
    let mut got = Vec::new();
    while let Ok(e) = rx.try_recv() {
        got.push(e);
    }
    assert_eq!(events.dropped(), 0);
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
}
