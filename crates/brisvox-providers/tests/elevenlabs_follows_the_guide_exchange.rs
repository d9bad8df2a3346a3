//! ElevenLabs' multi-context guide (tests/fixtures/vendors/elevenlabs): driven
//! through the same steps as the guide's `conversation_agent_demo()` (speak,
//! barge in, a new context with two texts and a flush, a third context that
//! is flushed and closed, end the conversation), the adapter sends the
//! guide's messages in the guide's order (context ids mapped, and each text
//! ending in a space as the reference asks). A fake replays the messages built
//! from the reference's schema, with the end as `isFinal` and as the guide's
//! receiver reads it (`is_final`): both end their context, and the alignment
//! becomes word timing.

mod support_fixtures;
mod support_vendors;

use std::collections::HashMap;
use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{ContextId, TtsConfig, TtsEvent, TtsProvider, WordTiming};
use serde_json::{Value, json};
use support_fixtures::{lines, with_context};
use support_vendors::next_event;
use support_vendors::ws::{FakeWs, Out, Responder};

const V: &str = "elevenlabs";

/// Text gets the schema's audio message; `close_context` the end, as
/// `isFinal` for the first context closed and `is_final` after.
#[derive(Default)]
struct Replay {
    closed: u32,
}

impl Responder for Replay {
    fn on_message(&mut self, m: &Value) -> Vec<Out> {
        let Some(wire) = m["context_id"].as_str() else {
            return vec![];
        };
        if m["close_context"] == json!(true) {
            self.closed += 1;
            let name = if self.closed == 1 {
                "final_output_from_schema.json"
            } else {
                "final_output_as_the_guide_reads_it.json"
            };
            return vec![Out::Text(with_context(V, name, wire))];
        }
        match m["text"].as_str() {
            Some(t) if !t.trim().is_empty() => vec![Out::Text(with_context(
                V,
                "audio_output_from_schema.json",
                wire,
            ))],
            _ => vec![],
        }
    }
}

fn ctx(seq: u32) -> ContextId {
    ContextId::new(Epoch(1), seq)
}

#[tokio::test]
async fn the_guide_exchange_in_order() {
    let fake = FakeWs::start(Replay::default).await;
    let tts = ElevenLabsTts::new(
        ElevenLabsConfig::new(ApiKey::new("xi"), "eleven_flash_v2_5", "your_voice_id")
            .with_base_url(format!("ws://{}", fake.addr)),
    );
    let mut s = tts.connect(TtsConfig::default()).await.unwrap();
    let guide = lines(V, "guide_exchange.jsonl");
    let text = |i: usize| guide[i]["text"].as_str().unwrap().to_owned();

    // greeting, then the caller interrupts.
    s.sender().start_context(ctx(0)).await.unwrap();
    s.sender().send_text(ctx(0), text(0)).await.unwrap();
    assert!(matches!(next_event(&mut s).await, TtsEvent::Audio { .. }));
    s.sender().cancel(ctx(0));
    // weather_response: two texts, then the end of the response.
    s.sender().start_context(ctx(1)).await.unwrap();
    s.sender().send_text(ctx(1), text(2)).await.unwrap();
    s.sender().send_text(ctx(1), text(3)).await.unwrap();
    s.sender().flush(ctx(1)).await.unwrap();
    let mut got = Vec::new();
    loop {
        let e = next_event(&mut s).await;
        let done = e == TtsEvent::Done { ctx: ctx(1) };
        got.push(e);
        if done {
            break;
        }
    }
    // tomorrow_weather: one text, flushed and closed.
    s.sender().start_context(ctx(2)).await.unwrap();
    s.sender().send_text(ctx(2), text(5)).await.unwrap();
    s.sender().flush(ctx(2)).await.unwrap();
    while next_event(&mut s).await != (TtsEvent::Done { ctx: ctx(2) }) {}
    s.sender().close().await.unwrap();
    assert_eq!(next_event(&mut s).await, TtsEvent::Closed);

    // The schema's audio message: 4 samples and the words "Hi" and "!".
    let audio: Vec<_> = got
        .iter()
        .filter(|e| matches!(e, TtsEvent::Audio { .. }))
        .collect();
    assert_eq!(
        audio[0],
        &TtsEvent::Audio {
            ctx: ctx(1),
            samples: vec![1, 2, 3, 4],
            sample_rate_hz: 24_000
        }
    );
    assert!(got.contains(&TtsEvent::Words {
        ctx: ctx(1),
        words: vec![
            WordTiming {
                word: "Hi".into(),
                start_ms: 0,
                end_ms: 120
            },
            WordTiming {
                word: "!".into(),
                start_ms: 180,
                end_ms: 240
            },
        ]
    }));

    // What went out, context ids mapped back to the guide's.
    let names: HashMap<&str, &str> = [
        ("brisvox-1-0", "greeting"),
        ("brisvox-1-1", "weather_response"),
        ("brisvox-1-2", "tomorrow_weather"),
    ]
    .into();
    let mut sent = Vec::new();
    brisvox_testkit::eventually_async(Duration::from_secs(3), "close_socket sent", || {
        let last = fake.received().last().cloned();
        async move { last == Some(json!({"close_socket": true})) }
    })
    .await;
    for mut m in fake.received() {
        if let Some(w) = m["context_id"].as_str() {
            m["context_id"] = json!(names[w]);
        }
        sent.push(m);
    }
    let mut expected = guide.clone();
    for m in &mut expected {
        if let Some(t) = m["text"].as_str().filter(|t| !t.is_empty()) {
            m["text"] = json!(format!("{t} "));
        }
    }
    // The guide flushes weather_response without closing it; the adapter
    // closes every finished context (the guide's tomorrow_weather pattern).
    expected.insert(
        5,
        json!({"context_id": "weather_response", "close_context": true}),
    );
    assert_eq!(sent, expected);
}
