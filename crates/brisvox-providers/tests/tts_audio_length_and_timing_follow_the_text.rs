//! The mock TTS speaks a non-silent tone whose length follows the text: first
//! audio a first-byte delay after the first text, 40 ms chunks every 20 ms,
//! `Done` with the last chunk after the flush.

mod common;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::mock::{MockTts, MockTtsConfig};
use brisvox_providers::{ContextId, TtsConfig, TtsEvent, TtsProvider};
use common::collect_tts;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn eleven_characters_give_660_ms_of_audio_in_40_ms_chunks() {
    let tts = MockTts::default();
    let session = tts.connect(TtsConfig::default()).await.unwrap();
    let (sender, events) = session.split();
    let start = Instant::now();
    let collector = tokio::spawn(collect_tts(events, start));
    let ctx = ContextId::new(Epoch(1), 0);
    sender.start_context(ctx).await.unwrap();
    sender.send_text(ctx, "Hello there").await.unwrap();
    sender.flush(ctx).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    sender.close().await.unwrap();
    let events = collector.await.unwrap();

    let audio: Vec<(u64, &Vec<i16>)> = events
        .iter()
        .filter_map(|(t, e)| match e {
            TtsEvent::Audio {
                ctx: c,
                samples,
                sample_rate_hz: 24_000,
            } if *c == ctx => Some((*t, samples)),
            _ => None,
        })
        .collect();
    assert_eq!(audio.len(), 17, "16 chunks of 40 ms and one of 20 ms");
    for (i, (t, samples)) in audio.iter().enumerate() {
        assert_eq!(*t, 150 + 20 * i as u64, "chunk {i} time");
        let expected = if i < 16 { 960 } else { 480 };
        assert_eq!(samples.len(), expected, "chunk {i} length");
        assert!(
            samples.iter().any(|s| s.abs() > 1000),
            "chunk {i} is not silent"
        );
    }
    let total: usize = audio.iter().map(|(_, s)| s.len()).sum();
    assert_eq!(total, 660 * 24);
    let n = events.len();
    assert_eq!(events[n - 2], (470, TtsEvent::Done { ctx }));
    assert_eq!(events[n - 1].1, TtsEvent::Closed);
    assert_eq!(tts.stats().contexts_done, 1);
}

#[tokio::test(start_paused = true)]
async fn text_that_arrives_later_resumes_the_audio_and_done_waits_for_the_flush() {
    let tts = MockTts::new(MockTtsConfig {
        ms_per_char: 20,
        ..MockTtsConfig::default()
    });
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let ctx = ContextId::new(Epoch(3), 1);
    let sender = session.sender().clone();
    let start = Instant::now();
    sender.start_context(ctx).await.unwrap();
    sender.send_text(ctx, "ab").await.unwrap(); // 40 ms: one chunk at 150 ms
    let first = session.recv().await.unwrap();
    assert!(matches!(first, TtsEvent::Audio { .. }));
    assert_eq!(start.elapsed(), Duration::from_millis(150));
    // Nothing owed and no flush: the context waits, no Done.
    let idle = tokio::time::timeout(Duration::from_millis(500), session.recv()).await;
    assert!(idle.is_err(), "no event while the context waits for text");
    sender.send_text(ctx, "cd").await.unwrap();
    sender.flush(ctx).await.unwrap();
    let second = session.recv().await.unwrap();
    assert!(matches!(second, TtsEvent::Audio { .. }));
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(650),
        "resumes at once, no second first byte"
    );
    assert_eq!(session.recv().await, Some(TtsEvent::Done { ctx }));
}
