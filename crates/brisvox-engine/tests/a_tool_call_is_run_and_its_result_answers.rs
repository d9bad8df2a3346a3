//! The model calls a tool after a few words: the words are spoken, the tool
//! runs, the assistant's tool-call message and the result join the
//! conversation, and the next completion's answer (which uses the result)
//! is spoken in the same response. Timeline marks and counters say so.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use brisvox_providers::Role;
use brisvox_providers::mock::{MockAnswer, MockToolCall};
use common::*;

#[tokio::test(start_paused = true)]
async fn the_tool_result_reaches_the_model_and_its_answer_is_spoken() {
    let fx = fixture("en_long_question");
    let mocks = Mocks::fixed(11);
    mocks.llm.set_answer_responder(|request| {
        if ends_with_tool_result(request) {
            let result = last_text(request, Role::Tool);
            MockAnswer::Text(format!("Your order is {result}."))
        } else {
            MockAnswer::ToolCalls {
                text: "Let me check".to_owned(),
                calls: vec![MockToolCall::new("order_status", r#"{"order_id":"42"}"#)],
            }
        }
    });
    let tools = ScriptedTools::new(vec![ScriptedTool {
        name: "order_status",
        delay: Some(Duration::from_millis(400)),
        answer: |args| {
            assert_eq!(args, r#"{"order_id":"42"}"#);
            "shipped".to_owned()
        },
    }]);
    let mut providers = mocks.providers();
    providers.tools = Some(tools.clone());
    let run = run_with(
        then_silence(fx.samples, 4_000),
        sim_config(),
        providers,
        Models::energy_and_complete(),
    )
    .await;

    let requests = mocks.llm.requests();
    assert_eq!(
        requests.len(),
        2,
        "one completion before the tool, one after"
    );
    assert_eq!(requests[0].tools.len(), 1, "the tool is offered");
    assert_eq!(&*requests[0].tools[0].name, "order_status");
    let roles: Vec<Role> = requests[1].messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::Tool],
        "the call and its result follow the question"
    );
    let call_message = &requests[1].messages[2];
    assert_eq!(&*call_message.text, "Let me check");
    assert_eq!(&*call_message.tool_calls[0].name, "order_status");
    let result = &requests[1].messages[3];
    assert_eq!(
        result.tool_call_id,
        Some(Arc::clone(&call_message.tool_calls[0].id))
    );
    assert_eq!(&*result.text, "shipped");
    assert_eq!(tools.invocations().len(), 1);

    let spoken = tts_texts(&mocks).join(" ");
    assert!(spoken.starts_with("Let me check"), "{spoken}");
    assert!(spoken.ends_with("Your order is shipped."), "{spoken}");

    let r = &run.report;
    assert_eq!(r.turn_counters.responses, 1);
    assert_eq!(r.failed_responses, 0, "no stall while the tool ran");
    assert_eq!((r.tools.started, r.tools.rounds, r.tools.failed), (1, 1, 0));
    assert_eq!(r.llm_usage.requests, 2);
    assert!(r.llm_usage.input_tokens > 0 && r.llm_usage.output_tokens > 0);
    let turn = run.answered()[0];
    assert_eq!(
        turn.span(TurnEvent::ToolCallStart, TurnEvent::ToolCallEnd),
        Some(Duration::from_millis(400)),
        "the marks span the tool's run"
    );
    assert!(!run.audible_frames_ms().is_empty(), "the answer was played");
}
