//! A reasoning model may stream reasoning (`delta.reasoning`, OpenRouter;
//! `delta.reasoning_content` elsewhere) long before its first answer token.
//! Each reasoning delta restarts the first-token wait, so an answer that
//! comes after more reasoning than the wait itself still arrives; a server
//! silent for the whole wait still times out.

mod support_vendors;

use brisvox_providers::openai_llm::{OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::vendors::ApiKey;
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message, ProviderError};
use serde_json::json;
use support_vendors::openai::{FakeOpenAi, Reply, Step, done, finish_chunk, text_chunk};

fn reasoning(text: &str) -> Step {
    Step::Data(json!({"choices": [{"index": 0, "delta": {"reasoning": text}}]}))
}

fn llm(fake: &FakeOpenAi) -> OpenAiLlm {
    OpenAiLlm::new(
        OpenAiLlmConfig::openrouter(ApiKey::new("k"), "openai/gpt-5-mini")
            .with_base_url(fake.base_url())
            .with_timeouts(400, 5_000)
            .with_retries(1, 0),
    )
}

async fn events(llm: &OpenAiLlm) -> Vec<LlmEvent> {
    let mut stream = llm.stream(LlmRequest::new(vec![Message::user("hi")]));
    let mut out = Vec::new();
    while let Some(e) = stream.next().await {
        out.push(e);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn reasoning_deltas_restart_the_wait() {
    let mut steps = Vec::new();
    for _ in 0..4 {
        steps.push(Step::Delay(300));
        steps.push(reasoning("thinking"));
    }
    steps.extend([
        Step::Delay(300),
        text_chunk("Hi"),
        finish_chunk("stop"),
        done(),
    ]);
    let fake = FakeOpenAi::start(vec![Reply::Stream(steps)]).await;
    let got = events(&llm(&fake)).await;
    assert_eq!(got.last(), Some(&LlmEvent::Done), "{got:?}");
    assert!(got.contains(&LlmEvent::TextDelta("Hi".into())));
    assert_eq!(
        got.iter()
            .filter(|e| matches!(e, LlmEvent::ReasoningDelta { .. }))
            .count(),
        4
    );
}

#[tokio::test(start_paused = true)]
async fn silence_still_times_out() {
    let steps = vec![Step::Delay(1_000), text_chunk("late"), done()];
    let fake = FakeOpenAi::start(vec![Reply::Stream(steps)]).await;
    let got = events(&llm(&fake)).await;
    assert!(
        matches!(
            got.as_slice(),
            [LlmEvent::Error(ProviderError::Timeout {
                waiting_for: "first token",
                ..
            })]
        ),
        "{got:?}"
    );
}
