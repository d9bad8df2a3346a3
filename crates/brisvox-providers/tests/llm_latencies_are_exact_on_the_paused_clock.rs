//! The mock LLM's first token and token gaps land exactly on the configured
//! (or sampled) times on the paused clock.

mod common;

use brisvox_providers::mock::{Latency, MockLlm, MockLlmConfig};
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message};
use common::collect_llm;
use tokio::time::Instant;

fn request() -> LlmRequest {
    LlmRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Hello there"),
    ])
}

#[tokio::test(start_paused = true)]
async fn fixed_first_token_then_a_token_per_interval_then_usage_and_done() {
    let llm = MockLlm::new(MockLlmConfig::default());
    llm.push_answer("Okay, got it.");
    let start = Instant::now();
    let events = collect_llm(llm.stream(request()), start).await;
    let expected = vec![
        (350, LlmEvent::TextDelta("Okay, ".into())),
        (380, LlmEvent::TextDelta("got ".into())),
        (410, LlmEvent::TextDelta("it.".into())),
        (
            410,
            LlmEvent::Usage {
                input_tokens: 5,
                output_tokens: 3,
            },
        ),
        (410, LlmEvent::Done),
    ];
    assert_eq!(events, expected);
}

#[tokio::test(start_paused = true)]
async fn log_normal_first_tokens_land_on_the_sampled_delay() {
    let llm = MockLlm::new(MockLlmConfig {
        seed: 42,
        first_token: Latency::LogNormal {
            median_ms: 350.0,
            sigma: 0.4,
        },
        token_interval: Latency::Fixed(10),
        ..MockLlmConfig::default()
    });
    let mut seen = Vec::new();
    for i in 0..5 {
        let start = Instant::now();
        let mut stream = llm.stream(request());
        let first = stream.next().await.unwrap();
        assert!(matches!(first, LlmEvent::TextDelta(_)));
        assert_eq!(start.elapsed(), llm.first_token_delay(i), "request {i}");
        seen.push(start.elapsed());
        while stream.next().await.is_some() {}
    }
    seen.dedup();
    assert!(seen.len() > 1, "log-normal draws should differ: {seen:?}");
}

#[tokio::test(start_paused = true)]
async fn a_whole_answer_can_be_one_token() {
    let llm = MockLlm::new(MockLlmConfig {
        words_per_token: 0,
        ..MockLlmConfig::default()
    });
    let start = Instant::now();
    let events = collect_llm(llm.stream(request()), start).await;
    assert_eq!(
        events[0],
        (350, LlmEvent::TextDelta("Okay, got it.".into()))
    );
    assert_eq!(events.last(), Some(&(350, LlmEvent::Done)));
}
