//! A false interruption: sound over the bot long enough to cut it (no word
//! recognised for `max_wordless_speech`), after which the STT finds no words
//! at all. The bot then resumes its answer from the first word the caller did
//! not hear, without asking the model again, and the resume is counted.
//! (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use std::time::Duration;

use brisvox_engine::turn::{BargeInConfig, words::default_backchannels};
use brisvox_engine::{EngineEvent, Models};
use common::*;

#[tokio::test(start_paused = true)]
async fn wordless_speech_that_cut_the_bot_resumes_the_rest_of_the_answer() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(8);
    // The second "utterance" (the sound over the bot) has no words.
    mocks.stt.set_transcriber(|i| {
        if i == 0 {
            "hello".into()
        } else {
            String::new()
        }
    });
    let long = "Sure. ".to_owned() + &"This answer goes on for quite a while. ".repeat(12);
    mocks.llm.push_answer(long.as_str());
    let mut config = sim_config();
    config.turn.barge_in = BargeInConfig {
        min_speech: Duration::from_millis(300),
        backchannels: default_backchannels(brisvox_text::Language::En),
        ..BargeInConfig::default()
    };
    config.turn.resume_false_interruptions = true;
    // The first utterance, then 1.2 s of it again over the answer.
    let (_, end0) = fx.utterances[0];
    let first = fx.samples[..(end0 as usize + 200) * 16].to_vec();
    let noise: Vec<i16> = fx.samples[16_000..16_000 + 1_200 * 16].to_vec();
    let samples = overlay(then_silence(first, 12_000), &noise, end0 + 3_000);
    let (run, events) =
        run_with_events(samples, config, &mocks, Models::energy_and_complete()).await;
    let c = run.report.turn_counters;
    println!("{c:?}");
    assert_eq!(c.barge_ins, 1, "the sound cut the bot");
    assert_eq!(c.false_interruptions_resumed, 1);
    assert_eq!(mocks.llm.stats().started, 1, "no second request");
    let heard = events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Heard { heard, .. } => Some(heard.clone()),
            _ => None,
        })
        .expect("the cut is reported");
    let words = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let all = words(&long);
    let rest = all[words(&heard).len()..].join(" ");
    let spoken: String = mocks
        .tts
        .texts()
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(!rest.is_empty());
    assert!(
        words(&spoken).ends_with(&words(&rest)),
        "the rest is spoken again: {rest:?} in {spoken:?}"
    );
}
