//! The mock LLM answers by responder when one is set (so a discarded request
//! consumes nothing), else from its queue, else with its default answer; tool
//! calls stream as pieces that concatenate to the arguments.

use brisvox_providers::mock::{MockAnswer, MockLlm, MockLlmConfig};
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, LlmStream, Message};

fn request(text: &str) -> LlmRequest {
    LlmRequest::new(vec![Message::user(text)])
}

async fn text_of(mut stream: LlmStream) -> String {
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let LlmEvent::TextDelta(delta) = event {
            text.push_str(&delta);
        }
    }
    text
}

#[tokio::test(start_paused = true)]
async fn queue_then_default() {
    let llm = MockLlm::new(MockLlmConfig {
        default_answer: "Sorry?".into(),
        ..MockLlmConfig::default()
    });
    llm.push_answer("First answer.");
    assert_eq!(text_of(llm.stream(request("a"))).await, "First answer.");
    assert_eq!(text_of(llm.stream(request("b"))).await, "Sorry?");
}

#[tokio::test(start_paused = true)]
async fn the_responder_answers_by_request_and_ignores_the_queue() {
    let llm = MockLlm::default();
    llm.push_answer("never used");
    llm.set_responder(|req| format!("You said {}.", req.last_user_text().unwrap_or("nothing")));
    // A speculative request that is dropped does not shift the next answer.
    drop(llm.stream(request("maybe")));
    assert_eq!(text_of(llm.stream(request("yes"))).await, "You said yes.");
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_streams_its_name_then_its_arguments() {
    let llm = MockLlm::default();
    let arguments = r#"{"city":"Istanbul","unit":"celsius"}"#;
    llm.push_answer(MockAnswer::ToolCall {
        name: "weather".into(),
        arguments: arguments.into(),
    });
    let mut stream = llm.stream(request("weather?"));
    let (mut name, mut joined, mut pieces) = (None, String::new(), 0);
    while let Some(event) = stream.next().await {
        if let LlmEvent::ToolCallDelta {
            index,
            name: n,
            arguments_delta,
            ..
        } = event
        {
            assert_eq!(index, 0);
            name = name.or(n);
            joined.push_str(&arguments_delta);
            pieces += 1;
        }
    }
    assert_eq!(name.as_deref(), Some("weather"));
    assert_eq!(joined, arguments);
    assert!(
        pieces > 2,
        "arguments should stream in pieces, got {pieces}"
    );
    let parsed: serde_json::Value = serde_json::from_str(&joined).unwrap();
    assert_eq!(parsed["city"], "Istanbul");
}
