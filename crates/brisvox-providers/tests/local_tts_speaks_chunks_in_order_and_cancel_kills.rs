//! The espeak-ng TTS speaks a context's chunks in order (the context's audio is
//! the chunks' audio end to end), sends `Done` after the flush, and a cancel
//! kills the running process: the retired context yields nothing more and the
//! next context is spoken. Needs the `espeak-ng` program: skipped with a
//! printed reason when it is missing and `CI` is unset, failed when `CI` is set.

use std::path::PathBuf;
use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::local::{EspeakConfig, EspeakTts};
use brisvox_providers::{ContextId, ErrorKind, TtsConfig, TtsEvent, TtsProvider, TtsSession};
use brisvox_testkit::{PATIENCE, eventually_async};

fn espeak_or_skip(test: &str) -> Option<EspeakTts> {
    let tts = EspeakTts::new(EspeakConfig::default());
    match tts.probe_blocking() {
        Ok(()) => Some(tts),
        Err(e) if std::env::var_os("CI").is_some() => panic!("{test}: {e}"),
        Err(e) => {
            eprintln!("SKIPPED {test}: {e}");
            None
        }
    }
}

/// Reads `ctx`'s audio until its `Done`.
async fn audio_until_done(session: &mut TtsSession, ctx: ContextId) -> (Vec<i16>, u32) {
    let mut samples = Vec::new();
    let mut rate = 0;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), session.recv())
            .await
            .expect("espeak-ng answers within 20 s")
            .expect("the session is open");
        match event {
            TtsEvent::Audio {
                ctx: c,
                samples: s,
                sample_rate_hz,
            } => {
                assert_eq!(c, ctx);
                rate = sample_rate_hz;
                samples.extend(s);
            }
            TtsEvent::Done { ctx: c } => {
                assert_eq!(c, ctx);
                return (samples, rate);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

async fn speak(session: &mut TtsSession, ctx: ContextId, chunks: &[&str]) -> (Vec<i16>, u32) {
    let tx = session.sender().clone();
    tx.start_context(ctx).await.unwrap();
    for c in chunks {
        tx.send_text(ctx, *c).await.unwrap();
    }
    tx.flush(ctx).await.unwrap();
    audio_until_done(session, ctx).await
}

fn rms(samples: &[i16]) -> f64 {
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / samples.len().max(1) as f64).sqrt()
}

#[tokio::test]
async fn chunks_are_spoken_in_order_then_done() {
    let Some(tts) = espeak_or_skip("chunks_are_spoken_in_order_then_done") else {
        return;
    };
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let (first, rate) = speak(
        &mut session,
        ContextId::new(Epoch(1), 0),
        &["Good morning."],
    )
    .await;
    let (second, _) = speak(
        &mut session,
        ContextId::new(Epoch(1), 1),
        &["The shop opens at nine."],
    )
    .await;
    let (both, _) = speak(
        &mut session,
        ContextId::new(Epoch(2), 0),
        &["Good morning.", "The shop opens at nine."],
    )
    .await;
    assert_eq!(rate, 22_050);
    let ms = |s: &[i16]| s.len() as u64 * 1000 / u64::from(rate);
    assert!(ms(&first) > 400, "{} ms", ms(&first));
    assert!(ms(&second) > ms(&first), "the longer text speaks longer");
    assert!(
        rms(&first) > 500.0,
        "speech, not silence: rms {}",
        rms(&first)
    );
    assert_eq!(both.len(), first.len() + second.len());
    assert!(both == [first.clone(), second.clone()].concat(), "in order");
    assert!(both != [second, first].concat());
    assert_eq!(tts.stats().processes_started, 4);
    assert_eq!(tts.stats().processes_finished, 4);
}

#[tokio::test]
async fn cancel_kills_the_running_process_and_the_next_context_speaks() {
    let Some(tts) = espeak_or_skip("cancel_kills_the_running_process_and_the_next_context_speaks")
    else {
        return;
    };
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let tx = session.sender().clone();
    let long = ContextId::new(Epoch(1), 0);
    tx.start_context(long).await.unwrap();
    let story = "This sentence is long enough to keep the program busy for a while. ".repeat(300);
    tx.send_text(long, story).await.unwrap();
    tx.send_text(long, "And then some more.").await.unwrap();
    tx.flush(long).await.unwrap();
    // Wait until the process runs, then barge in.
    eventually_async(PATIENCE, "a process started", || async {
        tts.stats().processes_started > 0
    })
    .await;
    tx.cancel(long);
    let next = ContextId::new(Epoch(2), 0);
    let (audio, _) = speak(&mut session, next, &["Yes?"]).await;
    assert!(!audio.is_empty());
    let stats = tts.stats();
    assert_eq!(stats.processes_killed, 1, "{stats:?}");
    // The cancelled context's second chunk never ran: only the long one and "Yes?".
    assert_eq!(stats.processes_started, 2, "{stats:?}");
}

#[tokio::test]
async fn a_missing_program_fails_connect_naming_the_package() {
    let tts = EspeakTts::new(EspeakConfig {
        program: PathBuf::from("/nonexistent/bin/espeak-ng"),
        ..EspeakConfig::default()
    });
    let err = tts.connect(TtsConfig::default()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect);
    let text = err.to_string();
    assert!(
        text.contains("install the Debian package `espeak-ng`"),
        "{text}"
    );
}

#[tokio::test]
async fn close_stops_the_running_process_and_ends_the_session() {
    let Some(tts) = espeak_or_skip("close_stops_the_running_process_and_ends_the_session") else {
        return;
    };
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let tx = session.sender().clone();
    let ctx = ContextId::new(Epoch(1), 0);
    tx.start_context(ctx).await.unwrap();
    let story = "Another long sentence that keeps the program busy. ".repeat(300);
    tx.send_text(ctx, story).await.unwrap();
    tx.flush(ctx).await.unwrap();
    eventually_async(PATIENCE, "a process started", || async {
        tts.stats().processes_started > 0
    })
    .await;
    tx.close().await.unwrap();
    let last = tokio::time::timeout(Duration::from_secs(5), async {
        let mut last = None;
        while let Some(event) = session.recv().await {
            last = Some(event);
        }
        last
    })
    .await
    .expect("the session ends soon after close");
    assert_eq!(last, Some(TtsEvent::Closed));
    assert_eq!(tts.stats().processes_killed, 1, "{:?}", tts.stats());
}
