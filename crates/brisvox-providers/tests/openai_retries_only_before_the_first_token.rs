//! Retries: 429 / 5xx / a drop before the first token are retried with
//! backoff up to the attempt limit; after the first token nothing is retried.

mod support_vendors;

use std::time::{Duration, Instant};

use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, LlmStream, Message, ProviderError};
use serde_json::json;
use support_vendors::openai::{FakeOpenAi, Reply, Step, answer, text_chunk};

fn llm(fake: &FakeOpenAi, attempts: u32) -> OpenAiLlm {
    OpenAiLlm::new(
        OpenAiLlmConfig::new(ApiKey::new("k"), "gpt-test")
            .with_base_url(fake.base_url())
            .with_retries(attempts, 50),
    )
}

async fn collect(mut stream: LlmStream) -> Vec<LlmEvent> {
    let mut out = Vec::new();
    while let Some(e) = stream.next().await {
        out.push(e);
    }
    out
}

fn ask() -> LlmRequest {
    LlmRequest::new(vec![Message::user("hi")])
}

#[tokio::test]
async fn a_429_then_success_is_retried_after_a_backoff() {
    let fake = FakeOpenAi::start(vec![
        Reply::Status(429, json!({"error": {"code": "rate_limit_exceeded"}}), None),
        answer(&["fine"]),
    ])
    .await;
    let start = Instant::now();
    let events = collect(llm(&fake, 3).stream(ask())).await;
    assert_eq!(events[0], LlmEvent::TextDelta("fine".into()));
    assert_eq!(events.last(), Some(&LlmEvent::Done));
    assert_eq!(fake.seen().len(), 2);
    assert!(
        start.elapsed() >= Duration::from_millis(50),
        "backoff was skipped"
    );
}

#[tokio::test]
async fn a_5xx_is_retried_up_to_the_attempt_limit() {
    let fake = FakeOpenAi::start(vec![Reply::Status(
        503,
        json!({"error": {"code": "overloaded"}}),
        None,
    )])
    .await;
    let events = collect(llm(&fake, 3).stream(ask())).await;
    assert_eq!(
        events,
        vec![LlmEvent::Error(ProviderError::server(503, "overloaded"))]
    );
    assert_eq!(fake.seen().len(), 3);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_cap_is_not_waited_for() {
    let fake = FakeOpenAi::start(vec![Reply::Status(429, json!({}), Some("30"))]).await;
    let events = collect(llm(&fake, 3).stream(ask())).await;
    assert_eq!(
        events,
        vec![LlmEvent::Error(ProviderError::RateLimited {
            retry_after_ms: Some(30_000)
        })]
    );
    assert_eq!(fake.seen().len(), 1);
}

#[tokio::test]
async fn a_drop_before_the_first_token_is_retried() {
    let fake = FakeOpenAi::start(vec![
        Reply::Stream(vec![Step::Raw(": keep-alive\n\n".into()), Step::Abort]),
        answer(&["again"]),
    ])
    .await;
    let events = collect(llm(&fake, 2).stream(ask())).await;
    assert_eq!(events[0], LlmEvent::TextDelta("again".into()));
    assert_eq!(fake.seen().len(), 2);
}

#[tokio::test]
async fn a_500_after_the_first_token_ends_the_stream_without_retry() {
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        text_chunk("Half"),
        Step::Data(json!({"error": {"code": 500, "message": "Internal"}})),
    ])])
    .await;
    let events = collect(llm(&fake, 3).stream(ask())).await;
    assert_eq!(
        events,
        vec![
            LlmEvent::TextDelta("Half".into()),
            LlmEvent::Error(ProviderError::server(500, "error in stream")),
        ]
    );
    assert_eq!(fake.seen().len(), 1);
}

#[tokio::test]
async fn a_drop_after_the_first_token_is_a_disconnect_without_retry() {
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        text_chunk("Half"),
        Step::Delay(20),
        Step::Abort,
    ])])
    .await;
    let events = collect(llm(&fake, 3).stream(ask())).await;
    assert_eq!(events[0], LlmEvent::TextDelta("Half".into()));
    assert!(
        matches!(
            &events[1],
            LlmEvent::Error(ProviderError::Disconnected { .. })
        ),
        "{events:?}"
    );
    assert_eq!(events.len(), 2);
    assert_eq!(fake.seen().len(), 1);
}
