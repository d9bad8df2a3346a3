//! A backchannel over the bot ("mm-hmm", 650 ms of sound) whose word a
//! streaming STT gives only once it has been said does not cut the bot, even
//! though the VAD confirms its stop (its hangover after the sound) later than
//! `max_wordless_speech` after its start: the wordless rule times the speech
//! itself, not the speech plus the VAD's wait for silence. Before, the bot was
//! cut at `max_wordless_speech` from the start, just before the stop and the
//! word came (the one backchannel cut of the 2026-12-01 quality report).
//! (Paused clock, energy VAD with a 320 ms hangover, fixed "complete" verdict,
//! the mock STT's timed words.)

mod common;

use std::time::Duration;

use brisvox_engine::Models;
use brisvox_engine::turn::{BargeInConfig, words::default_backchannels};
use brisvox_providers::mock::TimedWord;
use common::*;

/// The sound over the bot, ms: shorter than the wordless limit, but its stop
/// (sound + pad + hangover) comes after it.
const BACKCHANNEL_MS: u64 = 650;
/// The wordless limit of this test, ms (the 800 ms default of the report's run).
const MAX_WORDLESS_MS: u64 = 800;

#[tokio::test(start_paused = true)]
async fn a_backchannel_shorter_than_the_wordless_limit_leaves_the_bot_talking() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(8);
    let long = "Sure. ".to_owned() + &"This answer goes on for quite a while. ".repeat(12);
    mocks.llm.push_answer(long.as_str());
    let mut config = sim_config();
    config.turn.barge_in = BargeInConfig {
        min_speech: Duration::from_millis(300),
        backchannels: default_backchannels(brisvox_text::Language::En),
        max_wordless_speech: Duration::from_millis(MAX_WORDLESS_MS),
        ..BargeInConfig::default()
    };
    let hangover = config.vad.stop_hangover().as_millis() as u64;
    assert!(
        BACKCHANNEL_MS + hangover > MAX_WORDLESS_MS,
        "the stop must come after the limit for this test to mean anything"
    );
    // The first utterance, then the backchannel over the answer; each word is
    // recognised when it has been said (at the end of its sound).
    let (_, end0) = fx.utterances[0];
    let first = fx.samples[..(end0 as usize + 200) * 16].to_vec();
    let at = end0 + 3_000;
    let sound: Vec<i16> = fx.samples[16_000..16_000 + BACKCHANNEL_MS as usize * 16].to_vec();
    let samples = overlay(then_silence(first, 12_000), &sound, at);
    mocks.stt.set_timed_words(vec![
        TimedWord {
            at_ms: end0,
            text: "hello.".into(),
        },
        TimedWord {
            at_ms: at + BACKCHANNEL_MS,
            text: "mm-hmm".into(),
        },
    ]);
    let run = run(samples, config, &mocks, Models::energy_and_complete()).await;
    let c = run.report.turn_counters;
    println!("{c:?}");
    assert_eq!(c.barge_ins, 0, "the backchannel did not cut the bot");
    assert_eq!(c.backchannels_ignored, 1, "it was heard and counted");
    assert_eq!(
        mocks.llm.stats().started,
        1,
        "one answer, not a second turn"
    );
}
