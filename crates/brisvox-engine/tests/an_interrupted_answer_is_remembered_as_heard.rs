//! After a barge-in the conversation remembers what the caller heard, not what
//! was written: the engine reports the cut (`EngineEvent::Heard`: the text
//! sent to the TTS and the part played, cut after the last heard word), and
//! the next LLM request carries the cut answer as the assistant's message.
//! The mock voice speaks 60 ms per character, so the heard part follows from
//! the audio played. (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use brisvox_engine::{EngineEvent, Models};
use brisvox_providers::Role;
use common::*;

#[tokio::test(start_paused = true)]
async fn a_barge_in_cuts_the_answer_in_the_conversation_to_what_was_heard() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(5);
    let long = "Sure. ".to_owned() + &"This answer goes on for quite a while. ".repeat(12);
    mocks.llm.push_answer(long.as_str());
    mocks.llm.push_answer("Okay, got it.");
    let (run, events) = run_with_events(
        then_silence(fx.samples.clone(), 3_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    assert_eq!(run.report.turn_counters.barge_ins, 1);
    let (sent, heard, played_ms) = events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Heard {
                sent,
                heard,
                played_ms,
                ..
            } => Some((sent.clone(), heard.clone(), *played_ms)),
            _ => None,
        })
        .expect("the cut is reported");
    println!("played {played_ms} ms, heard {heard:?}");
    let words = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(words(&sent), words(&long), "the whole answer was sent");
    let heard_words = words(&heard);
    assert!(!heard_words.is_empty() && heard_words.len() < words(&long).len());
    assert_eq!(
        heard_words[..],
        words(&long)[..heard_words.len()],
        "a prefix"
    );
    // About 60 ms per character were played: the cut is within a few words of that.
    let chars_played = played_ms as f64 / 60.0;
    let chars_heard = heard.chars().count() as f64;
    assert!(
        (chars_heard - chars_played).abs() < 30.0,
        "{chars_heard} characters heard for {chars_played} played"
    );
    let requests = mocks.llm.requests();
    assert_eq!(requests.len(), 2);
    let assistant: Vec<&str> = requests[1]
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| &*m.text)
        .collect();
    assert_eq!(
        assistant,
        vec![heard.as_str()],
        "the model sees what was heard"
    );
}
