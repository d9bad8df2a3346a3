//! Failures of the OpenAI-compatible adapter, each against the fake server:
//! refused key, garbage, a truncated stream, both timeouts, a refused
//! connection, and a cancel that drops the response at once.

mod support_vendors;

use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{
    ErrorKind, LlmEvent, LlmProvider, LlmRequest, LlmStream, Message, ProviderError,
};
use brisvox_testkit::{PATIENCE, eventually_async};
use serde_json::json;
use support_vendors::openai::{FakeOpenAi, Reply, Step, text_chunk};
use tokio::sync::Notify;

fn config(base_url: String) -> OpenAiLlmConfig {
    OpenAiLlmConfig::new(ApiKey::new("k"), "gpt-test")
        .with_base_url(base_url)
        .with_retries(3, 20)
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

fn only_error(events: &[LlmEvent]) -> &ProviderError {
    match events.last() {
        Some(LlmEvent::Error(e)) => e,
        other => panic!("expected an error, got {other:?} in {events:?}"),
    }
}

#[tokio::test]
async fn a_refused_key_is_an_auth_error_and_is_not_retried() {
    for status in [401, 403] {
        let fake = FakeOpenAi::start(vec![Reply::Status(
            status,
            json!({"error": {"code": "invalid_api_key"}}),
            None,
        )])
        .await;
        let events = collect(OpenAiLlm::new(config(fake.base_url())).stream(ask())).await;
        assert_eq!(
            events,
            vec![LlmEvent::Error(ProviderError::Auth {
                status: Some(status)
            })]
        );
        assert_eq!(fake.seen().len(), 1);
    }
}

#[tokio::test]
async fn a_garbage_chunk_is_a_protocol_error() {
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        text_chunk("ok"),
        Step::Raw("data: {\"choices\": [oops\n\n".into()),
    ])])
    .await;
    let events = collect(OpenAiLlm::new(config(fake.base_url())).stream(ask())).await;
    assert_eq!(
        only_error(&events),
        &ProviderError::protocol("malformed chunk")
    );
}

#[tokio::test]
async fn a_stream_that_ends_without_done_is_a_disconnect() {
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![text_chunk("cut")])]).await;
    let events = collect(OpenAiLlm::new(config(fake.base_url())).stream(ask())).await;
    assert_eq!(events[0], LlmEvent::TextDelta("cut".into()));
    assert_eq!(only_error(&events).kind(), ErrorKind::Disconnected);
}

#[tokio::test]
async fn no_first_token_in_time_is_a_timeout() {
    let fake = FakeOpenAi::start(vec![Reply::Hang]).await;
    let start = Instant::now();
    let llm = OpenAiLlm::new(config(fake.base_url()).with_timeouts(300, 1_000));
    let events = collect(llm.stream(ask())).await;
    assert_eq!(
        only_error(&events),
        &ProviderError::Timeout {
            waiting_for: "first token",
            after_ms: 300
        }
    );
    // Not before the timeout (a lower bound holds on any machine; the error
    // above says which timeout it was).
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
}

#[tokio::test]
async fn keep_alive_comments_do_not_count_as_a_first_token() {
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        Step::Raw(": OPENROUTER PROCESSING\n\n".into()),
        Step::Delay(150),
        Step::Raw(": OPENROUTER PROCESSING\n\n".into()),
        Step::Gate(Arc::new(Notify::new())),
        text_chunk("never"),
    ])])
    .await;
    let llm = OpenAiLlm::new(config(fake.base_url()).with_timeouts(300, 1_000));
    let events = collect(llm.stream(ask())).await;
    assert_eq!(events.len(), 1);
    assert_eq!(only_error(&events).kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn a_stall_after_the_first_token_is_a_chunk_timeout() {
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        text_chunk("a"),
        Step::Gate(Arc::new(Notify::new())),
        text_chunk("b"),
    ])])
    .await;
    let llm = OpenAiLlm::new(config(fake.base_url()).with_timeouts(10_000, 200));
    let events = collect(llm.stream(ask())).await;
    assert_eq!(events[0], LlmEvent::TextDelta("a".into()));
    assert_eq!(
        only_error(&events),
        &ProviderError::Timeout {
            waiting_for: "next chunk",
            after_ms: 200
        }
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_after_the_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let llm = OpenAiLlm::new(config(format!("http://{addr}/v1")));
    let events = collect(llm.stream(ask())).await;
    let error = only_error(&events);
    assert_eq!(error.kind(), ErrorKind::Connect);
    assert!(
        error
            .to_string()
            .contains(&format!("http://{addr}/v1/chat/completions"))
    );
    assert!(llm.warm_up().await.is_err());
}

#[tokio::test]
async fn cancel_drops_the_response_at_once() {
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        text_chunk("one"),
        Step::Gate(Arc::new(Notify::new())),
        text_chunk("two"),
    ])])
    .await;
    let mut stream = OpenAiLlm::new(config(fake.base_url())).stream(ask());
    assert_eq!(stream.next().await, Some(LlmEvent::TextDelta("one".into())));
    stream.cancel();
    assert_eq!(stream.next().await, None);
    eventually_async(PATIENCE, "the server sees the stream close", || async {
        fake.body_dropped()
    })
    .await;
}
