//! Two tool calls in one completion run at the same time: the next
//! completion is requested when the slower one is done (not after the sum),
//! with both results in call order, each answering its own call id.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use brisvox_providers::Role;
use brisvox_providers::mock::{MockAnswer, MockToolCall};
use common::*;

#[tokio::test(start_paused = true)]
async fn both_calls_run_in_parallel_and_both_results_follow_the_calls() {
    let fx = fixture("en_long_question");
    let mocks = Mocks::fixed(12);
    mocks.llm.set_answer_responder(|request| {
        if ends_with_tool_result(request) {
            MockAnswer::Text("Done.".to_owned())
        } else {
            MockAnswer::ToolCalls {
                text: String::new(),
                calls: vec![
                    MockToolCall::new("slow", "{}"),
                    MockToolCall::new("fast", "{}"),
                ],
            }
        }
    });
    let tools = ScriptedTools::new(vec![
        ScriptedTool {
            name: "slow",
            delay: Some(Duration::from_millis(600)),
            answer: |_| "slow result".to_owned(),
        },
        ScriptedTool {
            name: "fast",
            delay: Some(Duration::from_millis(200)),
            answer: |_| "fast result".to_owned(),
        },
    ]);
    let mut providers = mocks.providers();
    providers.tools = Some(tools);
    let run = run_with(
        then_silence(fx.samples, 4_000),
        sim_config(),
        providers,
        Models::energy_and_complete(),
    )
    .await;

    let requests = mocks.llm.requests();
    assert_eq!(requests.len(), 2);
    let messages = &requests[1].messages;
    let call = &messages[2];
    assert_eq!(call.tool_calls.len(), 2);
    let results: Vec<(&str, &str)> = messages[3..]
        .iter()
        .map(|m| {
            assert_eq!(m.role, Role::Tool);
            (m.tool_call_id.as_deref().unwrap(), &*m.text)
        })
        .collect();
    assert_eq!(
        results,
        [
            (&*call.tool_calls[0].id, "slow result"),
            (&*call.tool_calls[1].id, "fast result")
        ]
    );
    let turn = run.answered()[0];
    assert_eq!(
        turn.span(TurnEvent::ToolCallStart, TurnEvent::ToolCallEnd),
        Some(Duration::from_millis(600)),
        "the round took the slower call's time, not the sum"
    );
    assert_eq!(run.report.tools.started, 2);
    assert_eq!(tts_texts(&mocks).join(" "), "Done.");
}
