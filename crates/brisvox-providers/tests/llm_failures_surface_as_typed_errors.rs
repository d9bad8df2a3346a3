//! Each injected LLM failure reaches the engine as a typed `ProviderError` with
//! the right `is_retryable`, at the time the provider would have failed.

mod common;

use std::time::Duration;

use brisvox_providers::mock::{Fault, FaultPlan, MockLlm, MockLlmConfig};
use brisvox_providers::{ErrorKind, LlmEvent, LlmProvider, LlmRequest, Message, ProviderError};
use common::collect_llm;
use tokio::time::Instant;

fn request() -> LlmRequest {
    LlmRequest::new(vec![Message::user("hi")])
}

fn llm_with(fault: Fault) -> MockLlm {
    let llm = MockLlm::default();
    llm.push_answer("one two three");
    llm.set_faults(FaultPlan::none().at(0, fault));
    llm
}

#[tokio::test(start_paused = true)]
async fn a_refused_request_fails_at_once_and_is_not_retryable() {
    let llm = llm_with(Fault::Refuse(ProviderError::Auth { status: Some(401) }));
    let events = collect_llm(llm.stream(request()), Instant::now()).await;
    assert_eq!(
        events,
        [(
            0,
            LlmEvent::Error(ProviderError::Auth { status: Some(401) })
        )]
    );
    assert!(!ProviderError::Auth { status: Some(401) }.is_retryable());
    assert_eq!(llm.stats().failed, 1);
}

#[tokio::test(start_paused = true)]
async fn a_5xx_before_the_first_token_is_retryable() {
    let llm = llm_with(Fault::FailAfter {
        items: 0,
        error: ProviderError::server(503, "overloaded"),
    });
    let events = collect_llm(llm.stream(request()), Instant::now()).await;
    let [(350, LlmEvent::Error(error))] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind(), ErrorKind::Server);
    assert!(error.is_retryable());
    // The next request is not affected.
    let ok = collect_llm(llm.stream(request()), Instant::now()).await;
    assert_eq!(ok.last().unwrap().1, LlmEvent::Done);
}

#[tokio::test(start_paused = true)]
async fn a_5xx_after_the_first_token_comes_when_the_next_token_was_due() {
    let llm = llm_with(Fault::FailAfter {
        items: 1,
        error: ProviderError::server(500, "internal"),
    });
    let events = collect_llm(llm.stream(request()), Instant::now()).await;
    assert_eq!(events[0], (350, LlmEvent::TextDelta("one ".into())));
    assert_eq!(
        events[1],
        (380, LlmEvent::Error(ProviderError::server(500, "internal")))
    );
    assert_eq!(events.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_disconnect_mid_stream_is_retryable() {
    let llm = llm_with(Fault::DisconnectAfter { items: 2 });
    let events = collect_llm(llm.stream(request()), Instant::now()).await;
    assert_eq!(events.len(), 3);
    let (410, LlmEvent::Error(error)) = &events[2] else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind(), ErrorKind::Disconnected);
    assert!(error.is_retryable());
}

#[tokio::test(start_paused = true)]
async fn a_stall_yields_nothing_until_cancelled() {
    let llm = llm_with(Fault::StallAfter { items: 1 });
    let mut stream = llm.stream(request());
    assert_eq!(
        stream.next().await,
        Some(LlmEvent::TextDelta("one ".into()))
    );
    let waited = tokio::time::timeout(Duration::from_secs(30), stream.next()).await;
    assert!(waited.is_err(), "a stalled stream must not yield");
    stream.cancel();
    assert_eq!(llm.stats().cancelled, 1);
}

#[tokio::test(start_paused = true)]
async fn a_slow_first_token_is_scaled_and_delayed() {
    let llm = llm_with(Fault::SlowStart {
        factor: 2.0,
        extra_ms: 100,
    });
    let events = collect_llm(llm.stream(request()), Instant::now()).await;
    assert_eq!(events[0].0, 800, "350 ms x 2 + 100 ms");
    assert_eq!(events[1].0, 830, "later tokens keep their interval");
}

#[tokio::test(start_paused = true)]
async fn random_faults_hit_about_the_planned_share_of_requests_and_follow_the_seed() {
    let run = |seed| async move {
        let llm = MockLlm::new(MockLlmConfig {
            seed,
            ..MockLlmConfig::default()
        });
        let fault = Fault::Refuse(ProviderError::RateLimited {
            retry_after_ms: Some(1000),
        });
        llm.set_faults(FaultPlan::none().with_probability(0.25, fault));
        let mut failed = Vec::new();
        for i in 0..200 {
            let mut stream = llm.stream(request());
            if let Some(LlmEvent::Error(e)) = stream.next().await {
                assert!(e.is_retryable());
                failed.push(i);
            }
        }
        failed
    };
    let a = run(5).await;
    assert_eq!(a, run(5).await);
    assert_ne!(a, run(6).await);
    assert!(
        (30..70).contains(&a.len()),
        "{} of 200 at p = 0.25",
        a.len()
    );
}
