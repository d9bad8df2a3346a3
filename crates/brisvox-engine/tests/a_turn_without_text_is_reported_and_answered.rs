//! A turn of clear speech that produces no text is never silent: the engine
//! reports it (`EngineEvent::TurnNoText` with the reason) and, with
//! `TurnConfig::not_heard` set, speaks the reply (`BotText` then audio);
//! without it the bot stays silent but the event still comes. Covers an empty
//! transcript and a final that comes after the final timeout (the local demo's
//! unanswered call). (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use std::time::Duration;

use brisvox_engine::EngineEvent;
use brisvox_engine::turn::{NoTextReason, NotHeardConfig};
use brisvox_providers::mock::{Latency, MockSttConfig};
use common::*;

const REPLY: &str = "Sorry, I didn't catch that.";

/// Runs one call of `en_two_utterances` and returns its events.
async fn call(mocks: &Mocks, reply: bool) -> Vec<EngineEvent> {
    let mut config = sim_config();
    if reply {
        config.turn.not_heard = Some(NotHeardConfig {
            reply: REPLY.to_owned(),
            min_speech: Duration::from_millis(500),
        });
    }
    let fx = fixture("en_two_utterances");
    let samples = then_silence(fx.samples.clone(), 4_000);
    let (_, events) = run_with_events(
        samples,
        config,
        mocks,
        brisvox_engine::Models::energy_and_complete(),
    )
    .await;
    events
}

fn no_text(events: &[EngineEvent]) -> Vec<(NoTextReason, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::TurnNoText {
                reason,
                replied,
                speech,
                ..
            } => {
                assert!(*speech >= Duration::from_millis(1_500), "{speech:?}");
                Some((*reason, *replied))
            }
            _ => None,
        })
        .collect()
}

/// The bot's words, chunk after chunk (the segmenter may cut a sentence).
fn bot_words(events: &[EngineEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::BotText { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn spoke(events: &[EngineEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, EngineEvent::BotSpeakingStarted { .. }))
        .count()
}

#[tokio::test(start_paused = true)]
async fn an_empty_transcript_is_reported_and_answered_with_the_not_heard_reply() {
    let mocks = Mocks::fixed(7);
    mocks.stt.set_transcriber(|_| String::new());
    let events = call(&mocks, true).await;
    let reason = NoTextReason::EmptyTranscript;
    assert_eq!(no_text(&events), [(reason, true), (reason, true)]);
    assert_eq!(bot_words(&events), format!("{REPLY} {REPLY}"));
    assert_eq!(spoke(&events), 2, "the reply is spoken for each turn");
    assert_eq!(mocks.llm.stats().started, 0, "no LLM request without text");
}

#[tokio::test(start_paused = true)]
async fn without_a_reply_configured_the_turn_is_still_reported() {
    let mocks = Mocks::fixed(7);
    mocks.stt.set_transcriber(|_| String::new());
    let events = call(&mocks, false).await;
    let reason = NoTextReason::EmptyTranscript;
    assert_eq!(no_text(&events), [(reason, false), (reason, false)]);
    assert_eq!(spoke(&events), 0);
}

#[tokio::test(start_paused = true)]
async fn a_final_later_than_the_final_timeout_is_reported_and_answered() {
    let mocks = Mocks::fixed(7);
    // The engine waits 1.5 s for a final (TurnConfig::default); this STT takes
    // 2 s and sends no interims (with one, the turn is answered with it).
    mocks.stt.set_config(MockSttConfig {
        seed: 7,
        final_latency: Latency::Fixed(2_000),
        interim_interval_ms: 1_000_000,
        ..MockSttConfig::default()
    });
    mocks.stt.set_transcriber(|i| format!("utterance {i}"));
    let events = call(&mocks, true).await;
    let timeouts = no_text(&events);
    assert!(!timeouts.is_empty(), "{events:?}");
    assert!(
        timeouts
            .iter()
            .all(|&t| t == (NoTextReason::FinalTimeout, true)),
        "{timeouts:?}"
    );
    assert!(bot_words(&events).contains(REPLY), "{}", bot_words(&events));
}
