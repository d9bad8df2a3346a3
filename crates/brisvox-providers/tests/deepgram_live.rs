//! Live checks against Deepgram itself; they run only when `DEEPGRAM_API_KEY`
//! is set and print that they were skipped otherwise.
//! `DEEPGRAM_API_KEY=… cargo test -p brisvox-providers --test deepgram_live -- --nocapture`

use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_core::Epoch;
use brisvox_providers::deepgram::{
    DeepgramAura, DeepgramAuraOptions, DeepgramStt, DeepgramSttOptions,
};
use brisvox_providers::{
    ContextId, SttConfig, SttEvent, SttProvider, TtsConfig, TtsEvent, TtsProvider,
};

fn key() -> Option<String> {
    match std::env::var("DEEPGRAM_API_KEY") {
        Ok(key) if !key.is_empty() => Some(key),
        _ => {
            eprintln!("skipped: DEEPGRAM_API_KEY is not set");
            None
        }
    }
}

#[tokio::test]
async fn live_aura_speech_transcribed_by_live_stt() {
    let Some(key) = key() else { return };
    // Aura speaks a sentence at 16 kHz; the listen socket transcribes it.
    let aura = DeepgramAura::new(key.clone(), DeepgramAuraOptions::default());
    let mut tts_config = TtsConfig::default();
    tts_config.sample_rate_hz = 16_000;
    let started = std::time::Instant::now();
    let (tts, mut tts_events) = aura.connect(tts_config).await.unwrap().split();
    let ctx = ContextId::new(Epoch::default(), 1);
    tts.start_context(ctx).await.unwrap();
    tts.send_text(ctx, "The quick brown fox jumps over the lazy dog.")
        .await
        .unwrap();
    tts.flush(ctx).await.unwrap();
    let mut speech = Vec::new();
    let mut first_audio = None;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), tts_events.recv())
            .await
            .expect("Aura answered in time")
            .expect("session open");
        match event {
            TtsEvent::Audio {
                samples,
                sample_rate_hz,
                ..
            } => {
                assert_eq!(sample_rate_hz, 16_000);
                first_audio.get_or_insert(started.elapsed());
                speech.extend(samples);
            }
            TtsEvent::Done { ctx: done } => {
                assert_eq!(done, ctx);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    eprintln!(
        "Aura: first audio after {:?}, {} samples",
        first_audio,
        speech.len()
    );
    assert!(speech.len() > 16_000, "at least a second of speech");

    let stt = DeepgramStt::new(key, DeepgramSttOptions::default());
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    for chunk in speech.chunks(320) {
        let frame = AudioFrame::from_samples(chunk, 16_000).unwrap();
        while sender.send_audio(&frame).is_err() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let finalize_at = std::time::Instant::now();
    sender.finalize().await.unwrap();
    let mut text = String::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("Deepgram answered in time")
            .expect("session open");
        match event {
            SttEvent::Final {
                text: t,
                from_finalize,
                ..
            } => {
                text.push_str(&t);
                text.push(' ');
                if from_finalize {
                    eprintln!("finalize answered after {:?}", finalize_at.elapsed());
                    break;
                }
            }
            SttEvent::Error(e) => panic!("{e}"),
            _ => {}
        }
    }
    eprintln!("transcript: {text}");
    assert!(text.to_lowercase().contains("fox"), "{text}");
    sender.close().await.unwrap();
}

#[tokio::test]
async fn live_bad_key_is_refused() {
    if key().is_none() {
        return;
    }
    let stt = DeepgramStt::new("not-a-real-key", DeepgramSttOptions::default());
    let error = stt.connect(SttConfig::default()).await.unwrap_err();
    assert_eq!(error.kind(), brisvox_providers::ErrorKind::Auth, "{error}");
}
