//! With interims timed from speech, silence before an utterance does not start
//! it: the first interim (and `SpeechStarted`) follow the first loud frame, not
//! the first frame.

mod common;

use brisvox_providers::mock::{MockStt, MockSttConfig};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use common::{collect_stt, play, silence_frame, speech_frame};
use tokio::time::Instant;

async fn first_events(from_speech: bool) -> Vec<(u64, SttEvent)> {
    let stt = MockStt::new(MockSttConfig {
        speech_started_events: true,
        ..MockSttConfig::default()
    });
    stt.set_interims_from_speech(from_speech);
    stt.push_utterance("hello there");
    let (sender, events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let collector = tokio::spawn(collect_stt(events, Instant::now()));
    // 1 s of silence, then 1 s of speech.
    play(&sender, 100, |i| {
        if i < 50 {
            silence_frame()
        } else {
            speech_frame()
        }
    })
    .await;
    sender.close().await.unwrap();
    collector.await.unwrap().into_iter().take(2).collect()
}

#[tokio::test(start_paused = true)]
async fn from_the_first_frame_interims_run_during_the_silence() {
    let events = first_events(false).await;
    assert_eq!(events[0], (0, SttEvent::SpeechStarted));
    assert_eq!(
        events[1],
        (
            280,
            SttEvent::Interim {
                text: "hello".into()
            }
        )
    );
}

#[tokio::test(start_paused = true)]
async fn from_speech_interims_wait_for_the_first_loud_frame() {
    let events = first_events(true).await;
    assert_eq!(events[0], (1000, SttEvent::SpeechStarted));
    assert_eq!(
        events[1],
        (
            1280,
            SttEvent::Interim {
                text: "hello".into()
            }
        )
    );
}
