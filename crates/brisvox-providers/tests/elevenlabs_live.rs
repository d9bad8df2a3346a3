//! Live check against ElevenLabs; runs only when `ELEVENLABS_API_KEY` is set
//! (voice from `ELEVENLABS_VOICE_ID`, model from `ELEVENLABS_MODEL`, default
//! eleven_flash_v2_5).

use std::time::Instant;

use brisvox_core::Epoch;
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, TtsConfig, TtsEvent, TtsProvider};

#[tokio::test]
async fn live_speaks_a_two_chunk_context() {
    let Some(key) = ApiKey::from_env("ELEVENLABS_API_KEY") else {
        println!("skipped: ELEVENLABS_API_KEY is not set");
        return;
    };
    let voice = std::env::var("ELEVENLABS_VOICE_ID").unwrap_or("21m00Tcm4TlvDq8ikWAM".into());
    let model = std::env::var("ELEVENLABS_MODEL").unwrap_or("eleven_flash_v2_5".into());
    let tts = ElevenLabsTts::new(ElevenLabsConfig::new(key, model, voice));
    let mut session = tts.connect(TtsConfig::default()).await.expect("connect");
    let c = ContextId::new(Epoch(1), 0);
    let start = Instant::now();
    session.sender().start_context(c).await.unwrap();
    session.sender().send_text(c, "Okay,").await.unwrap();
    session
        .sender()
        .send_text(c, "this is a live check.")
        .await
        .unwrap();
    session.sender().flush(c).await.unwrap();
    let (mut first, mut samples) = (None, 0usize);
    loop {
        match session.recv().await.expect("session ended") {
            TtsEvent::Audio { samples: s, .. } => {
                first.get_or_insert(start.elapsed());
                samples += s.len();
            }
            TtsEvent::Done { .. } => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    println!("live: first audio after {first:?}, {samples} samples at 24 kHz");
    assert!(samples > 12_000, "less than half a second of audio");
}
