//! Cartesia expires a context 1 s after its last audio streamed out ("Attempting
//! to send another input on the same context ID after expiry is not
//! supported", contexts guide). Text that continues a context idle since its
//! audio goes to a fresh context id; a flush that finds it idle ends it at
//! once, with nothing sent to the expired id. (The 700 ms pauses below are the
//! idle time under test, not a wait for something to happen.)

mod support_vendors;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::cartesia::{CartesiaConfig, CartesiaTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, TtsConfig, TtsEvent, TtsProvider, TtsSession};
use serde_json::json;
use support_vendors::cartesia::{CartesiaScript, FakeCartesia};
use support_vendors::next_event;
use support_vendors::ws::FakeWs;

const IDLE: Duration = Duration::from_millis(700);

async fn session(fake: &FakeWs) -> TtsSession {
    let config = CartesiaConfig::new(ApiKey::new("k"), "sonic-3.5", "voice-1")
        .with_url(format!("ws://{}", fake.addr));
    CartesiaTts::new(config)
        .connect(TtsConfig::default())
        .await
        .unwrap()
}

fn ctx() -> ContextId {
    ContextId::new(Epoch(1), 0)
}

async fn audio(s: &mut TtsSession) {
    loop {
        if let TtsEvent::Audio { .. } = next_event(s).await {
            return;
        }
    }
}

#[tokio::test]
async fn text_after_a_pause_goes_to_a_new_context_id() {
    let fake = FakeWs::start(|| FakeCartesia::new(CartesiaScript::default())).await;
    let mut s = session(&fake).await;
    s.sender().start_context(ctx()).await.unwrap();
    s.sender().send_text(ctx(), "Hello. ").await.unwrap();
    audio(&mut s).await;
    tokio::time::sleep(IDLE).await;
    s.sender().send_text(ctx(), "More.").await.unwrap();
    audio(&mut s).await;
    s.sender().flush(ctx()).await.unwrap();
    assert_eq!(next_event(&mut s).await, TtsEvent::Done { ctx: ctx() });
    let ids: Vec<_> = fake
        .received()
        .iter()
        .map(|m| m["context_id"].clone())
        .collect();
    assert_eq!(
        ids,
        [
            json!("brisvox-1-0"),
            json!("brisvox-1-0-r1"),
            json!("brisvox-1-0-r1")
        ]
    );
}

#[tokio::test]
async fn a_flush_after_a_pause_ends_the_context_without_a_message() {
    let fake = FakeWs::start(|| FakeCartesia::new(CartesiaScript::default())).await;
    let mut s = session(&fake).await;
    s.sender().start_context(ctx()).await.unwrap();
    s.sender().send_text(ctx(), "Hello.").await.unwrap();
    audio(&mut s).await;
    tokio::time::sleep(IDLE).await;
    s.sender().flush(ctx()).await.unwrap();
    assert_eq!(next_event(&mut s).await, TtsEvent::Done { ctx: ctx() });
    assert_eq!(fake.received().len(), 1, "{:?}", fake.received());
}
