//! The Deepgram key is never written to a log line, at any level, through a
//! session's life: refused upgrades, a normal STT session, a reconnect after a
//! 1011 close, an Aura session and its failure. One test in this binary, so
//! no other test races `tracing`'s per-callsite interest cache.

mod support_deepgram;

use brisvox_core::Epoch;
use brisvox_providers::deepgram::{
    DeepgramAura, DeepgramAuraOptions, DeepgramStt, DeepgramSttOptions,
};
use brisvox_providers::{ContextId, SttConfig, SttEvent, SttProvider, TtsConfig, TtsProvider};
use support_deepgram::{FakeWs, LogCapture, PATIENCE, counting_frames, results};

const KEY: &str = "dg-logcheck-key-e4b2f1";

#[tokio::test]
async fn the_key_never_reaches_the_logs() {
    let logs = LogCapture::start();
    let mut fake = FakeWs::start().await;
    let mut stt_options = DeepgramSttOptions::default();
    stt_options.url = format!("{}/v1/listen", fake.base);
    let stt = DeepgramStt::new(KEY, stt_options);
    let mut aura_options = DeepgramAuraOptions::default();
    aura_options.url = format!("{}/v1/speak", fake.base);
    let aura = DeepgramAura::new(KEY, aura_options);

    fake.refuse_next(401, None);
    stt.connect(SttConfig::default()).await.unwrap_err();
    fake.refuse_next(403, None);
    aura.connect(TtsConfig::default()).await.unwrap_err();

    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let conn = fake.accept().await;
    sender.send_audio(&counting_frames(0, 1)[0]).unwrap();
    conn.close(1011, "NET-0001").await;
    let mut conn = fake.accept().await;
    conn.audio_bytes(640).await;
    conn.send_text(results("hi", true, false, 0.0, 0.02)).await;
    let event = tokio::time::timeout(PATIENCE, events.recv()).await.unwrap();
    assert!(matches!(event, Some(SttEvent::Final { .. })), "{event:?}");

    let (tts, mut tts_events) = aura.connect(TtsConfig::default()).await.unwrap().split();
    let ctx = ContextId::new(Epoch(1), 1);
    tts.start_context(ctx).await.unwrap();
    tts.send_text(ctx, "Hello.").await.unwrap();
    let mut speak = fake.accept().await;
    speak.recv().await;
    speak.send_text("garbage").await;
    tokio::time::timeout(PATIENCE, tts_events.recv())
        .await
        .unwrap();

    let text = logs.text();
    assert!(text.contains("Deepgram connect failed"), "{text}");
    assert!(text.contains("reconnecting"), "{text}");
    assert!(text.contains("/v1/listen"), "the endpoint is named: {text}");
    assert!(!text.contains(KEY), "the key leaked: {text}");
}
