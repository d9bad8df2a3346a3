//! Live check against the real API; runs only when `OPENROUTER_API_KEY` or
//! `OPENAI_API_KEY` is set (model from `BRISVOX_LIVE_LLM_MODEL`, default
//! `openai/gpt-4o-mini` on OpenRouter, `gpt-4o-mini` on OpenAI).

use std::time::Instant;

use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message};

#[tokio::test]
async fn live_streams_an_answer_with_usage() {
    let config = if let Some(key) = ApiKey::from_env("OPENROUTER_API_KEY") {
        let model = std::env::var("BRISVOX_LIVE_LLM_MODEL").unwrap_or("openai/gpt-4o-mini".into());
        OpenAiLlmConfig::openrouter(key, model)
    } else if let Some(key) = ApiKey::from_env("OPENAI_API_KEY") {
        let model = std::env::var("BRISVOX_LIVE_LLM_MODEL").unwrap_or("gpt-4o-mini".into());
        OpenAiLlmConfig::new(key, model)
    } else {
        println!("skipped: neither OPENROUTER_API_KEY nor OPENAI_API_KEY is set");
        return;
    };
    let llm = OpenAiLlm::new(config.with_timeouts(10_000, 10_000));
    llm.warm_up().await.expect("warm-up");
    let start = Instant::now();
    let mut stream = llm.stream(
        LlmRequest::new(vec![Message::user(
            "Say the word 'ready' and nothing else.",
        )])
        .with_max_tokens(16),
    );
    let (mut text, mut first, mut usage, mut done) = (String::new(), None, false, false);
    while let Some(event) = stream.next().await {
        match event {
            LlmEvent::TextDelta(t) => {
                first.get_or_insert(start.elapsed());
                text.push_str(&t);
            }
            LlmEvent::Usage { .. } => usage = true,
            LlmEvent::Done => done = true,
            LlmEvent::Error(e) => panic!("live request failed: {e}"),
            _ => {}
        }
    }
    println!("live: first token after {first:?}, answer {text:?}");
    assert!(done && usage && !text.is_empty());
}
