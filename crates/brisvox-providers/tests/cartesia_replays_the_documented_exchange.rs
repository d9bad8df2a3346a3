//! Cartesia's own documented examples (tests/fixtures/vendors/cartesia): the
//! adapter's requests carry the documented generation request's fields with
//! the documented values, follow the contexts guide's input-streaming
//! sequence and send the documented cancel; a fake that replays the
//! documented `chunk`, `timestamps`, `phoneme_timestamps`, `flush_done`,
//! `done` and `error` messages (only `context_id` changed to the adapter's
//! id) yields exactly their audio, word times, end and error.

mod support_fixtures;
mod support_vendors;

use std::time::Duration;

use base64::Engine as _;
use brisvox_core::Epoch;
use brisvox_providers::cartesia::{CartesiaConfig, CartesiaTts};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{
    ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession, WordTiming,
};
use serde_json::{Value, json};
use support_fixtures::{json as fixture, lines, with_context};
use support_vendors::next_event;
use support_vendors::ws::{FakeWs, Out, Responder};

const V: &str = "cartesia";
const VOICE: &str = "a0e99841-438c-4a64-b679-ae501e7d6091";

/// Replays the documented responses: text gets `chunk` + `timestamps` +
/// `phoneme_timestamps`, the end (`continue: false`) `flush_done` + `done`,
/// model `bad` the documented error.
struct Replay;

impl Responder for Replay {
    fn on_message(&mut self, m: &Value) -> Vec<Out> {
        let Some(wire) = m["context_id"].as_str() else {
            return vec![];
        };
        if m.get("cancel").is_some() {
            return vec![];
        }
        let reply = |name| Out::Text(with_context(V, name, wire));
        if m["model_id"] == "bad" {
            return vec![reply("error_response.json")];
        }
        if m["continue"] == json!(false) {
            return vec![
                reply("flush_done_response.json"),
                reply("done_response.json"),
            ];
        }
        vec![
            reply("chunk_response.json"),
            reply("timestamps_response.json"),
            reply("phoneme_timestamps_response.json"),
        ]
    }
}

fn config(fake: &FakeWs, model: &str) -> CartesiaConfig {
    CartesiaConfig::new(ApiKey::new("sk_car_test"), model, VOICE)
        .with_url(format!("ws://{}", fake.addr))
}

async fn session(fake: &FakeWs, model: &str) -> TtsSession {
    let tts = CartesiaTts::new(config(fake, model));
    let mut tts_config = TtsConfig::default();
    tts_config.language = Some("en".into());
    tts_config.sample_rate_hz = 8_000;
    tts.connect(tts_config).await.unwrap()
}

fn ctx(seq: u32) -> ContextId {
    ContextId::new(Epoch(1), seq)
}

#[tokio::test]
async fn requests_carry_the_documented_fields_and_sequence() {
    let fake = FakeWs::start(|| Replay).await;
    let mut s = session(&fake, "sonic-3.5").await;
    s.sender().start_context(ctx(0)).await.unwrap();
    for part in ["Hello, Sonic!", " I'm streaming ", "inputs."] {
        s.sender().send_text(ctx(0), part).await.unwrap();
    }
    s.sender().flush(ctx(0)).await.unwrap();
    while !matches!(next_event(&mut s).await, TtsEvent::Done { .. }) {}
    let sent = fake.received();

    // Every field of the documented request, with its value, except the
    // ones a stream of inputs changes (transcript, continue, context_id).
    let doc = fixture(V, "generation_request.json");
    for (key, value) in doc.as_object().unwrap() {
        if !["transcript", "continue", "context_id"].contains(&key.as_str()) {
            assert_eq!(&sent[0][key], value, "field {key}");
        }
    }
    // Our only other field is the documented custom-buffering one.
    let buffering = fixture(V, "buffering_custom_request.json");
    for key in sent[0].as_object().unwrap().keys() {
        assert!(
            doc.get(key).is_some() || buffering.get(key).is_some(),
            "undocumented {key}"
        );
    }
    assert_eq!(
        sent[0]["max_buffer_delay_ms"],
        buffering["max_buffer_delay_ms"]
    );

    // The contexts guide's input stream: same context, `continue: true` until
    // the end; the end is the documented empty transcript with `continue: false`.
    let guide = lines(V, "input_streaming.jsonl");
    for (ours, doc) in sent.iter().zip(&guide).take(2) {
        assert_eq!(
            (&ours["transcript"], &ours["continue"]),
            (&doc["transcript"], &doc["continue"])
        );
    }
    assert_eq!(sent[2]["transcript"], guide[2]["transcript"]);
    assert_eq!(
        (&sent[3]["transcript"], &sent[3]["continue"]),
        (&json!(""), &json!(false))
    );
    assert!(
        sent.iter()
            .all(|m| m["context_id"] == sent[0]["context_id"])
    );
}

#[tokio::test]
async fn documented_responses_become_audio_words_and_done() {
    let fake = FakeWs::start(|| Replay).await;
    let mut s = session(&fake, "sonic-3.5").await;
    s.sender().start_context(ctx(0)).await.unwrap();
    s.sender().send_text(ctx(0), "Hello, world!").await.unwrap();
    s.sender().flush(ctx(0)).await.unwrap();
    let mut events = Vec::new();
    loop {
        let e = next_event(&mut s).await;
        let done = matches!(e, TtsEvent::Done { .. });
        events.push(e);
        if done {
            break;
        }
    }
    let data = fixture(V, "chunk_response.json")["data"]
        .as_str()
        .unwrap()
        .to_owned();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let samples: Vec<i16> = bytes
        .chunks_exact(2)
        .map(|p| i16::from_le_bytes([p[0], p[1]]))
        .collect();
    assert_eq!(
        events,
        vec![
            TtsEvent::Audio {
                ctx: ctx(0),
                samples,
                sample_rate_hz: 8_000
            },
            TtsEvent::Words {
                ctx: ctx(0),
                words: vec![
                    WordTiming {
                        word: "Hello".into(),
                        start_ms: 0,
                        end_ms: 400
                    },
                    WordTiming {
                        word: "world".into(),
                        start_ms: 500,
                        end_ms: 900
                    },
                ]
            },
            TtsEvent::Done { ctx: ctx(0) },
        ]
    );
}

#[tokio::test]
async fn the_documented_cancel_and_error() {
    let fake = FakeWs::start(|| Replay).await;
    let mut s = session(&fake, "sonic-3.5").await;
    s.sender().start_context(ctx(0)).await.unwrap();
    s.sender().send_text(ctx(0), "Hello").await.unwrap();
    assert!(matches!(next_event(&mut s).await, TtsEvent::Audio { .. }));
    s.sender().cancel(ctx(0));
    s.sender().start_context(ctx(1)).await.unwrap();
    s.sender().flush(ctx(1)).await.unwrap();
    assert_eq!(next_event(&mut s).await, TtsEvent::Done { ctx: ctx(1) });
    let wire = fake.received()[0]["context_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancel: Value =
        serde_json::from_str(&with_context(V, "cancel_request.json", &wire)).unwrap();
    brisvox_testkit::eventually_async(Duration::from_secs(3), "the documented cancel", || {
        let sent = fake.received();
        let cancel = cancel.clone();
        async move { sent.contains(&cancel) }
    })
    .await;

    let fake = FakeWs::start(|| Replay).await;
    let mut s = session(&fake, "bad").await;
    s.sender().start_context(ctx(0)).await.unwrap();
    s.sender().send_text(ctx(0), "Hello").await.unwrap();
    assert_eq!(
        next_event(&mut s).await,
        TtsEvent::Error {
            ctx: Some(ctx(0)),
            error: ProviderError::server(400, "Cartesia refused the request")
        }
    );
}
