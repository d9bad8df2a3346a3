//! Cancelling or dropping an LLM stream stops its tokens at once, and the mock
//! counts started, completed and cancelled requests.

use std::time::Duration;

use brisvox_providers::mock::{LlmStats, MockLlm};
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message};

fn request(text: &str) -> LlmRequest {
    LlmRequest::new(vec![Message::user(text)])
}

#[tokio::test(start_paused = true)]
async fn cancel_ends_the_stream_and_counts_it() {
    let llm = MockLlm::default();
    llm.push_answer("one two three four five six");
    let mut stream = llm.stream(request("hi"));
    assert_eq!(
        stream.next().await,
        Some(LlmEvent::TextDelta("one ".into()))
    );
    assert_eq!(
        stream.next().await,
        Some(LlmEvent::TextDelta("two ".into()))
    );
    stream.cancel();
    assert!(stream.is_finished());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(stream.next().await, None);
    let stats = llm.stats();
    assert_eq!(
        stats,
        LlmStats {
            started: 1,
            completed: 0,
            failed: 0,
            cancelled: 1,
            warm_ups: 0,
        }
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_stream_while_it_waits_for_the_first_token_cancels_it() {
    let llm = MockLlm::default();
    let mut stream = llm.stream(request("hi"));
    // Wait inside the first-token delay, then give up (a select! losing to barge-in).
    let raced = tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
    assert!(raced.is_err());
    drop(stream);
    assert_eq!(llm.stats().cancelled, 1);
    // A complete request afterwards counts as completed, not cancelled.
    let mut next = llm.stream(request("again"));
    while next.next().await.is_some() {}
    assert_eq!(
        llm.stats(),
        LlmStats {
            started: 2,
            completed: 1,
            failed: 0,
            cancelled: 1,
            warm_ups: 0,
        }
    );
}

#[tokio::test(start_paused = true)]
async fn one_request_per_turn_is_visible_in_the_counters_and_history() {
    let llm = MockLlm::default();
    for turn in ["first", "second", "third"] {
        let mut stream = llm.stream(request(turn));
        while stream.next().await.is_some() {}
    }
    assert_eq!(llm.stats().started, 3);
    let asked: Vec<String> = llm
        .requests()
        .iter()
        .map(|r| r.last_user_text().unwrap().to_owned())
        .collect();
    assert_eq!(asked, ["first", "second", "third"]);
}
