//! The mock STT's interims grow with the audio; by default the last one lags
//! the final by a word, with converged interims it equals the final.

mod common;

use brisvox_providers::mock::MockStt;
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use common::{collect_stt, play, speech_frame};
use tokio::time::Instant;

const TRANSCRIPT: &str = "I would like to book a table";

async fn interims_and_final(converged: bool) -> (Vec<(u64, String)>, String) {
    let stt = MockStt::default();
    stt.set_converged_interims(converged);
    stt.push_utterance(TRANSCRIPT);
    let (sender, events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let collector = tokio::spawn(collect_stt(events, Instant::now()));
    play(&sender, 100, |_| speech_frame()).await; // 2 s of speech
    sender.finalize().await.unwrap();
    sender.close().await.unwrap();
    let events = collector.await.unwrap();
    let interims = events
        .iter()
        .filter_map(|(t, e)| match e {
            SttEvent::Interim { text } => Some((*t, text.clone())),
            _ => None,
        })
        .collect();
    let last_final = events.iter().rev().find_map(|(_, e)| match e {
        SttEvent::Final { text, .. } => Some(text.clone()),
        _ => None,
    });
    (interims, last_final.unwrap())
}

#[tokio::test(start_paused = true)]
async fn lagging_interims_stop_one_word_short_of_the_final() {
    let (interims, final_text) = interims_and_final(false).await;
    assert_eq!(final_text, TRANSCRIPT);
    // One interim per 300 ms of audio (sent with the frame that completes it),
    // showing a word per 250 ms of audio, at most six of the seven words: at
    // 1800 ms nothing new could be shown, so nothing was sent.
    let expected = [
        (280, "I"),
        (580, "I would"),
        (880, "I would like"),
        (1180, "I would like to"),
        (1480, "I would like to book a"),
    ];
    let got: Vec<(u64, &str)> = interims.iter().map(|(t, s)| (*t, s.as_str())).collect();
    assert_eq!(got, expected);
}

#[tokio::test(start_paused = true)]
async fn converged_interims_end_equal_to_the_final() {
    let (interims, final_text) = interims_and_final(true).await;
    let (_, last) = interims.last().unwrap();
    assert_eq!(last, &final_text);
    assert_eq!(interims.len(), 6, "{interims:?}");
    assert_eq!(interims[4].1, "I would like to book a");
}
