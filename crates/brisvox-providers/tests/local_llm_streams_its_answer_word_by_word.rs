//! The local rules agent streams its answer one word per delta: the first at
//! 150 ms, then one every 25 ms, then `Done` (exact on the paused clock); the
//! words make up the rules' reply; cancelling or dropping the stream stops it.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use brisvox_providers::local::{LocalLlmConfig, LocalRulesLlm, reply};
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message};
use tokio::time::Instant;

/// 2026-11-29 14:05:09 UTC.
const FIXED: u64 = 1_795_961_109;

fn agent() -> LocalRulesLlm {
    LocalRulesLlm::new(LocalLlmConfig {
        clock: Arc::new(|| UNIX_EPOCH + Duration::from_secs(FIXED)),
        ..LocalLlmConfig::default()
    })
}

fn request(text: &str) -> LlmRequest {
    LlmRequest::new(vec![
        Message::system("You are a helpful agent."),
        Message::user("an older message"),
        Message::assistant("an older answer"),
        Message::user(text),
    ])
}

#[tokio::test(start_paused = true)]
async fn words_arrive_on_schedule_and_make_up_the_reply() {
    let llm = agent();
    let t0 = Instant::now();
    let mut stream = llm.stream(request("Hello, what time is it?"));
    let mut text = String::new();
    let mut at_ms = Vec::new();
    loop {
        match stream.next().await {
            Some(LlmEvent::TextDelta(word)) => {
                at_ms.push(t0.elapsed().as_millis());
                text.push_str(&word);
            }
            Some(LlmEvent::Done) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(stream.next().await, None);
    assert_eq!(
        text,
        "You said: Hello, what time is it. Hello! I am a local demo agent without a \
         language model. It is 14:05 UTC on this server."
    );
    let expected: Vec<u128> = (0..at_ms.len() as u128).map(|i| 150 + 25 * i).collect();
    assert_eq!(at_ms, expected);
}

#[tokio::test(start_paused = true)]
async fn each_intent_gets_its_answer_and_anything_else_an_honest_echo() {
    let now = UNIX_EPOCH + Duration::from_secs(FIXED);
    let cases = [
        ("who are you?", "not a language model"),
        ("thanks a lot", "You are welcome."),
        ("ok goodbye", "Goodbye"),
        ("good morning", "Hello!"),
        (
            "what is the weather in Paris",
            "without a language model, so I can only repeat it",
        ),
    ];
    for (said, answer) in cases {
        let r = reply(&request(said), now);
        let echoed = said.trim_end_matches(['?', '.']);
        assert!(r.starts_with(&format!("You said: {echoed}.")), "{r}");
        assert!(r.contains(answer), "{said:?} -> {r}");
    }
    let silent = reply(&LlmRequest::new(vec![Message::system("x")]), now);
    assert!(silent.contains("did not catch that"), "{silent}");
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_the_words_at_once() {
    let llm = agent();
    let mut stream = llm.stream(request("tell me a long story about anything at all"));
    assert!(matches!(stream.next().await, Some(LlmEvent::TextDelta(_))));
    assert!(matches!(stream.next().await, Some(LlmEvent::TextDelta(_))));
    stream.cancel();
    assert!(stream.is_finished());
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(stream.next().await, None);
}

#[tokio::test(start_paused = true)]
async fn a_stream_dropped_before_its_first_word_yields_nothing() {
    let llm = agent();
    let mut stream = llm.stream(request("hi"));
    let raced = tokio::time::timeout(Duration::from_millis(149), stream.next()).await;
    assert!(raced.is_err(), "no word before 150 ms");
    drop(stream);
    // A new request is independent and starts its own 150 ms.
    let t0 = Instant::now();
    let mut next = llm.stream(request("hi"));
    assert!(matches!(next.next().await, Some(LlmEvent::TextDelta(w)) if w == "You "));
    assert_eq!(t0.elapsed(), Duration::from_millis(150));
}
