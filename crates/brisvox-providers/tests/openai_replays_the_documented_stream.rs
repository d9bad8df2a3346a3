//! OpenAI's own documented streaming example (tests/fixtures/vendors/openai):
//! the adapter's request carries the example's fields (model, the two
//! messages, `stream`), and the documented chunks, replayed by the fake as
//! server-sent events, become exactly the text "Hello" and the end.

mod support_fixtures;
mod support_vendors;

use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message};
use serde_json::json;
use support_vendors::openai::{FakeOpenAi, Reply, Step, done};

const V: &str = "openai";

#[tokio::test]
async fn the_documented_request_and_chunks() {
    let chunks = support_fixtures::lines(V, "chat_stream_response.jsonl");
    let mut steps: Vec<Step> = chunks.into_iter().map(Step::Data).collect();
    steps.push(done());
    let fake = FakeOpenAi::start(vec![Reply::Stream(steps)]).await;
    let doc = support_fixtures::json(V, "chat_stream_request.json");
    let llm = OpenAiLlm::new(
        OpenAiLlmConfig::new(ApiKey::new("sk-test"), doc["model"].as_str().unwrap())
            .with_base_url(fake.base_url()),
    );
    let text = |i: usize| doc["messages"][i]["content"].as_str().unwrap().to_owned();
    let request = LlmRequest::new(vec![Message::system(text(0)), Message::user(text(1))]);
    let mut stream = llm.stream(request);
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e);
    }
    assert_eq!(
        events,
        vec![LlmEvent::TextDelta("Hello".into()), LlmEvent::Done]
    );

    let sent = &fake.seen()[0].body;
    assert_eq!(sent["model"], doc["model"]);
    assert_eq!(sent["stream"], doc["stream"]);
    // The system prompt keeps the `system` role (docs/providers/openai.md).
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": text(0)})
    );
    assert_eq!(sent["messages"][1], doc["messages"][1]);
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
}
