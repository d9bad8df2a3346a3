//! The OpenAI-compatible adapter against a fake Chat Completions server: text,
//! tool calls, usage, the request body it sends, warm connections and prompt
//! delivery of the first token.

mod support_vendors;

use std::sync::Arc;

use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig, ToolCallAssembler};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, LlmStream, Message, ToolDefinition};
use brisvox_testkit::PATIENCE;
use serde_json::json;
use support_vendors::openai::{FakeOpenAi, Reply, Step, answer, done, finish_chunk, text_chunk};
use tokio::sync::Notify;

fn llm(fake: &FakeOpenAi) -> OpenAiLlm {
    OpenAiLlm::new(
        OpenAiLlmConfig::openrouter(ApiKey::new("test-key"), "openai/gpt-test")
            .with_base_url(fake.base_url())
            .with_provider_routing(vec!["openai".into()], false)
            .with_reasoning_effort("none"),
    )
}

async fn collect(mut stream: LlmStream) -> Vec<LlmEvent> {
    let mut out = Vec::new();
    while let Some(e) = stream.next().await {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn text_deltas_usage_and_done_arrive_in_order() {
    let fake = FakeOpenAi::start(vec![answer(&["Hello", " there", "."])]).await;
    let request = LlmRequest::new(vec![Message::system("be brief"), Message::user("hi")])
        .with_max_tokens(120);
    let events = collect(llm(&fake).stream(request)).await;
    assert_eq!(
        events,
        vec![
            LlmEvent::TextDelta("Hello".into()),
            LlmEvent::TextDelta(" there".into()),
            LlmEvent::TextDelta(".".into()),
            LlmEvent::Usage {
                input_tokens: 10,
                output_tokens: 3
            },
            LlmEvent::Done,
        ]
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer test-key"));
    let body = &seen[0].body;
    assert_eq!(body["model"], "openai/gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 120);
    assert_eq!(body["reasoning_effort"], "none");
    assert_eq!(
        body["provider"],
        json!({"order": ["openai"], "allow_fallbacks": false})
    );
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
}

#[tokio::test]
async fn streamed_tool_calls_assemble_into_calls() {
    let call = |v: serde_json::Value| {
        Step::Data(json!({"model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [v]}}]}))
    };
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        Step::Raw(": OPENROUTER PROCESSING\n\n".into()),
        call(json!({"index": 0, "id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": ""}})),
        call(json!({"index": 0, "function": {"arguments": "{\"city\":"}})),
        call(json!({"index": 0, "function": {"arguments": "\"Paris\"}"}})),
        call(json!({"index": 1, "id": "call_b", "type": "function", "function": {"name": "hang_up", "arguments": "{}"}})),
        finish_chunk("tool_calls"),
        done(),
    ])])
    .await;
    let tools = vec![ToolDefinition {
        name: "lookup".into(),
        description: "find a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}).into(),
    }];
    let request = LlmRequest::new(vec![Message::user("weather?")]).with_tools(tools);
    let events = collect(llm(&fake).stream(request)).await;
    assert_eq!(events.last(), Some(&LlmEvent::Done));
    let mut assembler = ToolCallAssembler::default();
    events.iter().for_each(|e| assembler.push(e));
    let calls = assembler.finish();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (&*calls[0].id, &*calls[0].name, &*calls[0].arguments),
        ("call_a", "lookup", "{\"city\":\"Paris\"}")
    );
    assert_eq!(
        (&*calls[1].id, &*calls[1].name, &*calls[1].arguments),
        ("call_b", "hang_up", "{}")
    );
    let body = &fake.seen()[0].body;
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "lookup");
}

#[tokio::test]
async fn the_first_token_is_delivered_before_the_rest_is_sent() {
    // The server holds the rest of the body back until the test has the first
    // token: a client that waited for more than the first chunk would never
    // get it (no clock: a loaded machine is slow, not wrong).
    let rest = Arc::new(Notify::new());
    let fake = FakeOpenAi::start(vec![Reply::Stream(vec![
        text_chunk("Okay,"),
        Step::Gate(Arc::clone(&rest)),
        text_chunk(" sure."),
        finish_chunk("stop"),
        done(),
    ])])
    .await;
    let mut stream = llm(&fake).stream(LlmRequest::new(vec![Message::user("hi")]));
    let first = tokio::time::timeout(PATIENCE, stream.next()).await;
    assert_eq!(
        first.expect("the first token comes while the rest is held back"),
        Some(LlmEvent::TextDelta("Okay,".into()))
    );
    rest.notify_one();
    assert_eq!(
        stream.next().await,
        Some(LlmEvent::TextDelta(" sure.".into()))
    );
}

#[tokio::test]
async fn warm_up_opens_the_connection_the_next_request_reuses() {
    let fake = FakeOpenAi::start(vec![answer(&["a"]), answer(&["b"])]).await;
    let llm = llm(&fake);
    llm.warm_up().await.unwrap();
    let first = collect(llm.stream(LlmRequest::new(vec![Message::user("1")]))).await;
    let second = collect(llm.stream(LlmRequest::new(vec![Message::user("2")]))).await;
    assert_eq!(first.last(), Some(&LlmEvent::Done));
    assert_eq!(second.last(), Some(&LlmEvent::Done));
    let seen = fake.seen();
    assert_eq!(seen[0].path, "/v1/models");
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|s| s.peer == seen[0].peer),
        "one warm connection: {seen:?}"
    );
}
