//! With `EngineConfig::apology` set, an answer whose LLM fails (refused
//! before its first token, a server error after two tokens, no token within
//! the first-token limit) ends with the apology spoken after what it had
//! said; the apology stays in the conversation the next request sees, and the
//! call goes on listening: the next turn gets the model's answer. (Paused
//! clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{CallEnd, EngineEvent, Models};
use brisvox_providers::Role;
use common::*;

const TURNS: usize = 4;
const APOLOGY: &str = "Sorry, I lost my train of thought.";

#[tokio::test(start_paused = true)]
async fn a_failed_answer_ends_with_the_apology_and_the_call_goes_on() {
    let mocks = Mocks::fixed_word_tokens(23).with_llm_refused_failed_stalled(2);
    let mut config = sim_config();
    config.limits.llm_first_token = Duration::from_secs(1);
    config.apology = Some(Arc::from(APOLOGY));
    let (run, events) = run_with_events(
        first_utterance_repeated(TURNS),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;

    assert_eq!(r.end, CallEnd::Hangup);
    assert_eq!(r.turn_counters.responses, TURNS as u64);
    assert_eq!(r.failed_responses, 3);
    let answered = run.answered();
    assert_eq!(answered.len(), TURNS);
    for (i, turn) in answered.iter().enumerate() {
        assert!(
            turn.at(TurnEvent::FirstAudioOut).is_some(),
            "turn {i} was spoken"
        );
    }
    let said: String = (events.iter())
        .filter_map(|e| match e {
            EngineEvent::BotText { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(said.matches(APOLOGY).count(), 3, "{said}");
    assert!(
        said.ends_with("Okay, got it."),
        "the last turn is answered: {said}"
    );
    // The conversation the last request carried: each failed answer as it was
    // said, the partial one with its two words first.
    let requests = mocks.llm.requests();
    let last = requests.last().expect("requests");
    let assistant: Vec<String> = (last.messages.iter())
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.text.to_string())
        .collect();
    assert_eq!(assistant.len(), 3, "{assistant:?}");
    assert_eq!(assistant[0], APOLOGY);
    assert_eq!(assistant[1], format!("Okay, got {APOLOGY}"));
    assert_eq!(assistant[2], APOLOGY);
}
