//! With timed words the mock STT transcribes a known recording: interims show
//! the words spoken so far since the last finalize, and a finalize answers with
//! exactly those words, so a finalize in a pause gives the first half of the
//! sentence and the next one the rest.

mod common;

use brisvox_providers::mock::{MockStt, MockSttConfig, TimedWord};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use common::{collect_stt, play, speech_frame};
use tokio::time::Instant;

fn word(at_ms: u64, text: &str) -> TimedWord {
    TimedWord {
        at_ms,
        text: text.to_owned(),
    }
}

#[tokio::test(start_paused = true)]
async fn interims_and_finals_follow_the_words_times() {
    let stt = MockStt::new(MockSttConfig {
        interim_interval_ms: 100,
        ..MockSttConfig::default()
    });
    stt.set_timed_words(vec![
        word(200, "I'd"),
        word(400, "like"),
        word(1200, "a"),
        word(1400, "table."),
    ]);
    let (sender, events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let collector = tokio::spawn(collect_stt(events, Instant::now()));
    play(&sender, 30, |_| speech_frame()).await; // 600 ms of audio
    sender.finalize().await.unwrap();
    play(&sender, 50, |_| speech_frame()).await; // to 1600 ms
    sender.finalize().await.unwrap();
    play(&sender, 20, |_| speech_frame()).await;
    sender.close().await.unwrap();
    let events: Vec<SttEvent> = collector
        .await
        .unwrap()
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    let interim = |t: &str| SttEvent::Interim { text: t.into() };
    let final_ = |t: &str| SttEvent::Final {
        text: t.into(),
        confidence: Some(0.95),
        from_finalize: true,
    };
    assert_eq!(
        events,
        vec![
            interim("I'd"),
            interim("I'd like"),
            final_("I'd like"),
            interim("a"),
            interim("a table."),
            final_("a table."),
            SttEvent::Closed,
        ]
    );
}
