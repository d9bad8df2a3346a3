//! A configured greeting is spoken at call start without the LLM, becomes
//! the first assistant message of the conversation, and the caller's turns
//! are then answered as usual.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use brisvox_engine::Models;
use brisvox_providers::Role;
use common::*;

#[tokio::test(start_paused = true)]
async fn the_greeting_comes_first_and_joins_the_conversation() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(6);
    let mut config = sim_config();
    config.turn.greeting = Some("Hello, how can I help?".to_owned());
    // Two seconds of silence first, so the greeting has played out.
    let mut caller = vec![0i16; 2_000 * 16];
    caller.extend_from_slice(&fx.samples);
    let run = run(
        then_silence(caller, 3_000),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    assert_eq!(r.turn_counters.barge_ins, 0);
    assert_eq!(r.turn_counters.responses, 2);
    assert_eq!(mocks.llm.stats().started, 2, "the greeting used no LLM");
    let first = run.audible_frames_ms()[0];
    assert_eq!(
        first, TTS_FIRST_BYTE_MS as f64,
        "greeting audio after the TTS first byte"
    );
    let request = &mocks.llm.requests()[0];
    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::Assistant, Role::User]);
    assert_eq!(&*request.messages[1].text, "Hello, how can I help?");
    assert_eq!(mocks.tts.stats().contexts_started, 3);
}
