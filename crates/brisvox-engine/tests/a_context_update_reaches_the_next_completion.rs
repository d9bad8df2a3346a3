//! `Control::Context` (the agent link's `context.update`) changes what the
//! model sees from its next completion on: a new system prompt replaces the
//! call's, appended messages follow the conversation, and a replace drops the
//! conversation so far (the system prompt stays).
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_engine::sim::{RecordingSink, SimCaller};
use brisvox_engine::{CallEdge, ContextUpdate, Control, MessagesUpdate, Models, run_call};
use brisvox_providers::{Message, Role};
use common::*;

fn texts(request: &brisvox_providers::LlmRequest) -> Vec<(Role, String)> {
    request
        .messages
        .iter()
        .map(|m| (m.role, m.text.to_string()))
        .collect()
}

async fn two_turns_with(update: ContextUpdate) -> Vec<brisvox_providers::LlmRequest> {
    // Utterances at 0.5-3.1 s and 7.1-9.8 s: the update lands between them.
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(3);
    let caller = SimCaller::new(then_silence(fx.samples, 3_000))
        .with_control(Duration::from_millis(5_500), Control::Context(update));
    let (sink, _log) = RecordingSink::new();
    run_call(
        sim_config(),
        CallEdge::new(caller, sink),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await
    .expect("a valid config");
    let requests = mocks.llm.requests();
    assert_eq!(requests.len(), 2, "one completion per turn");
    requests
}

#[tokio::test(start_paused = true)]
async fn a_new_prompt_and_appended_messages_reach_the_next_turn() {
    let requests = two_turns_with(ContextUpdate {
        system_prompt: Some("You are the front desk of a small hotel.".to_owned()),
        messages: Some(MessagesUpdate {
            replace: false,
            items: vec![Message::system("The caller is a returning guest.")],
        }),
    })
    .await;
    let first = texts(&requests[0]);
    assert_ne!(first[0].1, "You are the front desk of a small hotel.");
    let second = texts(&requests[1]);
    assert_eq!(
        second[0],
        (
            Role::System,
            "You are the front desk of a small hotel.".to_owned()
        )
    );
    // user, assistant (the first turn), the appended note, then the new turn.
    let roles: Vec<Role> = second.iter().map(|(r, _)| *r).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::System,
            Role::User
        ]
    );
    assert_eq!(second[3].1, "The caller is a returning guest.");
}

#[tokio::test(start_paused = true)]
async fn a_replace_drops_the_conversation_but_not_the_prompt() {
    let requests = two_turns_with(ContextUpdate {
        system_prompt: None,
        messages: Some(MessagesUpdate {
            replace: true,
            items: vec![
                Message::user("I booked room 12."),
                Message::assistant("Noted."),
            ],
        }),
    })
    .await;
    let (first, second) = (texts(&requests[0]), texts(&requests[1]));
    assert_eq!(second[0], first[0], "the system prompt stays");
    assert_eq!(second[1], (Role::User, "I booked room 12.".to_owned()));
    assert_eq!(second[2], (Role::Assistant, "Noted.".to_owned()));
    assert_eq!(second.len(), 4, "{second:?}");
}
