//! ElevenLabs keeps at most five contexts open per socket ("Each connection is
//! limited to 5 concurrent contexts", multi-context guide; a sixth gets
//! `max_active_conversations` and a 1008 close). A sixth context waits, its
//! text queued, until one of the five ends; the socket stays up.

mod support_vendors;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, TtsConfig, TtsEvent, TtsProvider};
use support_vendors::elevenlabs::{ElevenLabsScript, FakeElevenLabs, samples_for};
use support_vendors::next_event;
use support_vendors::ws::FakeWs;

fn ctx(seq: u32) -> ContextId {
    ContextId::new(Epoch(1), seq)
}

#[tokio::test]
async fn a_sixth_context_speaks_once_one_of_five_ends() {
    let fake = FakeWs::start(|| FakeElevenLabs::new(ElevenLabsScript::default())).await;
    let tts = ElevenLabsTts::new(
        ElevenLabsConfig::new(ApiKey::new("k"), "eleven_flash_v2_5", "voice1")
            .with_base_url(format!("ws://{}", fake.addr))
            .with_timeouts(1_000, 5_000),
    );
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    for seq in 0..6 {
        session.sender().start_context(ctx(seq)).await.unwrap();
        session.sender().send_text(ctx(seq), "Hi").await.unwrap();
    }
    // Five contexts speak; the sixth's text is held back.
    let mut audio_of = Vec::new();
    while audio_of.len() < 5 {
        if let TtsEvent::Audio { ctx, .. } = next_event(&mut session).await {
            audio_of.push(ctx);
        }
    }
    assert!(!audio_of.contains(&ctx(5)));
    // One ends: the sixth goes out on the same socket.
    session.sender().flush(ctx(0)).await.unwrap();
    let mut sixth = Vec::new();
    let mut done0 = false;
    while sixth.is_empty() || !done0 {
        match next_event(&mut session).await {
            TtsEvent::Audio {
                ctx: c, samples, ..
            } if c == ctx(5) => sixth = samples,
            TtsEvent::Done { ctx: c } if c == ctx(0) => done0 = true,
            TtsEvent::Error { .. } | TtsEvent::Closed => panic!("the session must stay up"),
            _ => {}
        }
    }
    assert_eq!(sixth, samples_for("Hi"));
    assert_eq!(fake.conns().len(), 1);
    let texts = fake
        .received()
        .iter()
        .filter(|m| m["text"] == "Hi ")
        .count();
    assert_eq!(texts, 6);
    tokio::time::timeout(Duration::from_secs(1), session.sender().close())
        .await
        .unwrap()
        .unwrap();
}
