//! Provider failures fail the turn they hit, are counted by stage and kind,
//! and the call goes on: an LLM refused, failing after its first token and
//! stalling before it; a TTS context refused, stalling and disconnecting (the
//! session is reconnected at the next response); the STT session dropping
//! mid-utterance (reconnected; the turn ends on its final timeout with the
//! interim). Every later turn is answered.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{CallEnd, Models, ProviderStage};
use brisvox_providers::mock::{Fault, FaultPlan};
use brisvox_providers::{ErrorKind, ProviderError};
use common::*;

const TURNS: usize = 9;

#[tokio::test(start_paused = true)]
async fn failed_providers_fail_turns_and_the_call_goes_on() {
    let mocks = Mocks::fixed_word_tokens(21).with_llm_refused_failed_stalled(1);
    // Contexts: turn 1 speaks its partial answer (context 0); turns 3, 4, 5
    // are contexts 1, 2, 3.
    mocks.tts.set_faults(
        FaultPlan::none()
            .at(1, Fault::Refuse(ProviderError::server(503, "busy")))
            .at(2, Fault::StallAfter { items: 2 })
            .at(3, Fault::DisconnectAfter { items: 1 }),
    );
    mocks
        .stt
        .set_faults(FaultPlan::none().at(7, Fault::DisconnectAfter { items: 1 }));
    let mut config = sim_config();
    config.limits.llm_first_token = Duration::from_secs(1);
    config.limits.tts_stall = Duration::from_secs(1);
    let run = run(
        first_utterance_repeated(TURNS),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    println!("{:?}\n{:?}", r.turn_counters, r.provider_failures);

    assert_eq!(r.end, CallEnd::Hangup);
    assert_eq!(r.turn_counters.turns, TURNS as u64);
    assert_eq!(r.turn_counters.responses, TURNS as u64);
    assert_eq!(mocks.llm.stats().started, TURNS as u64);
    let count = |stage, kind| {
        r.provider_failures
            .iter()
            .find(|c| c.stage == stage && c.kind == kind)
            .map_or(0, |c| c.count)
    };
    assert_eq!(
        count(ProviderStage::LlmBeforeFirstToken, ErrorKind::Server),
        1
    );
    assert_eq!(
        count(ProviderStage::LlmBeforeFirstToken, ErrorKind::Timeout),
        1
    );
    assert_eq!(
        count(ProviderStage::LlmAfterFirstToken, ErrorKind::Server),
        1
    );
    assert_eq!(count(ProviderStage::Tts, ErrorKind::Server), 1);
    assert_eq!(count(ProviderStage::Tts, ErrorKind::Timeout), 1);
    assert!(count(ProviderStage::Tts, ErrorKind::Disconnected) >= 1);
    assert!(count(ProviderStage::Stt, ErrorKind::Disconnected) >= 1);
    assert_eq!(r.failed_responses, 6);
    assert_eq!(mocks.tts.stats().sessions, 2, "reconnected once");
    assert_eq!(mocks.stt.stats().sessions, 2, "reconnected once");
    assert_eq!(r.turn_counters.final_timeouts, 1);

    let answered = run.answered();
    assert_eq!(answered.len(), TURNS);
    let audio: Vec<bool> = answered
        .iter()
        .map(|t| t.at(TurnEvent::FirstAudioOut).is_some())
        .collect();
    // Turns 0, 2 (no text) and 3 (TTS refused) have no audio; 1 speaks its
    // partial answer, 4 and 5 what came before the stall / drop.
    assert_eq!(
        audio,
        [false, true, false, false, true, true, true, true, true]
    );
    assert_eq!(
        mocks.llm.requests()[7].last_user_text(),
        Some("utterance"),
        "turn 7 ended on its final timeout with the interim"
    );
    // Turn 8's text is a final of the reconnected session (the mock numbers
    // utterances over both sessions, so the number is not the turn's).
    let last = mocks.llm.requests()[8].last_user_text().map(str::to_owned);
    assert!(
        last.as_deref()
            .is_some_and(|t| t.starts_with("utterance ") && t.len() > 10),
        "{last:?}"
    );
    assert!(mocks.stt.stats().finals >= 8);
}
