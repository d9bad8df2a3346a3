//! The mock STT answers a finalize with the scripted transcript of everything
//! sent before it, exactly the final delay later; a finalize with no audio gets
//! an empty final; close ends the session after what is pending.

mod common;

use brisvox_providers::mock::{Latency, MockStt, MockSttConfig};
use brisvox_providers::{SttConfig, SttEvent, SttProvider};
use common::{collect_stt, play, speech_frame};
use tokio::time::Instant;

fn finals(events: &[(u64, SttEvent)]) -> Vec<(u64, String, bool)> {
    events
        .iter()
        .filter_map(|(t, e)| match e {
            SttEvent::Final {
                text,
                from_finalize,
                ..
            } => Some((*t, text.clone(), *from_finalize)),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_final_comes_150_ms_after_finalize_with_the_scripted_text() {
    let stt = MockStt::default();
    stt.push_utterance("book a table for two");
    stt.push_utterance("at eight please");
    let session = stt.connect(SttConfig::default()).await.unwrap();
    let (sender, events) = session.split();
    let start = Instant::now();
    let collector = tokio::spawn(collect_stt(events, start));
    play(&sender, 50, |_| speech_frame()).await;
    sender.finalize().await.unwrap(); // t = 1000
    play(&sender, 25, |_| speech_frame()).await;
    sender.finalize().await.unwrap(); // t = 1500
    sender.finalize().await.unwrap(); // nothing heard since: empty final
    sender.close().await.unwrap();
    let events = collector.await.unwrap();
    assert_eq!(
        finals(&events),
        [
            (1150, "book a table for two".to_owned(), true),
            (1650, "at eight please".to_owned(), true),
            (1650, String::new(), true),
        ]
    );
    assert!(
        matches!(events.iter().find(|(_, e)| matches!(e, SttEvent::Final { .. })),
        Some((_, SttEvent::Final { confidence: Some(c), .. })) if (*c - 0.95).abs() < 1e-6)
    );
    assert_eq!(events.last(), Some(&(1650, SttEvent::Closed)));
    let stats = stt.stats();
    assert_eq!((stats.utterances, stats.finalizes, stats.finals), (2, 3, 3));
}

#[tokio::test(start_paused = true)]
async fn a_log_normal_final_lands_on_the_sampled_delay() {
    let stt = MockStt::new(MockSttConfig {
        seed: 9,
        final_latency: Latency::LogNormal {
            median_ms: 150.0,
            sigma: 0.5,
        },
        ..MockSttConfig::default()
    });
    stt.set_transcriber(|i| format!("utterance {i}"));
    let mut session = stt.connect(SttConfig::default()).await.unwrap();
    for i in 0..4 {
        play(session.sender(), 10, |_| speech_frame()).await;
        session.finalize().await.unwrap();
        let asked = Instant::now();
        loop {
            if let Some(SttEvent::Final { text, .. }) = session.recv().await {
                assert_eq!(text, format!("utterance {i}"));
                break;
            }
        }
        assert_eq!(asked.elapsed(), stt.final_delay(i), "utterance {i}");
    }
}
