//! The API key travels only in the Authorization header: no log line (at any
//! level) and no error carries it, even when the vendor echoes it back. The
//! upstream of the first chunk is logged at INFO.

mod support_vendors;

use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message};
use serde_json::json;
use support_vendors::logs;
use support_vendors::openai::{FakeOpenAi, Reply, answer};

const KEY: &str = "sk-or-v1-SECRETKEY0123456789";

#[tokio::test]
async fn the_key_is_in_the_header_only() {
    let (captured, _guard) = logs::capture();
    let fake = FakeOpenAi::start(vec![
        answer(&["hi"]),
        Reply::Status(401, json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "code": 401}}), None),
    ])
    .await;
    let config = OpenAiLlmConfig::openrouter(ApiKey::new(KEY), "m").with_base_url(fake.base_url());
    assert!(!format!("{config:?}").contains(KEY));
    let llm = OpenAiLlm::new(config);
    let mut errors = Vec::new();
    for _ in 0..2 {
        let mut stream = llm.stream(LlmRequest::new(vec![Message::user("hello")]));
        while let Some(event) = stream.next().await {
            if let LlmEvent::Error(e) = event {
                errors.push(e);
            }
        }
    }
    assert_eq!(errors.len(), 1);
    for e in &errors {
        assert!(!format!("{e} {e:?}").contains(KEY));
    }
    assert_eq!(
        fake.seen()[0].authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    let text = captured.text();
    assert!(text.contains("llm upstream"), "{text}");
    assert!(text.contains("upstream_provider=\"OpenAI\""), "{text}");
    assert!(
        text.contains("upstream_model=\"openai/gpt-test\""),
        "{text}"
    );
    assert!(!text.contains("SECRETKEY"), "key in the logs:\n{text}");
}
