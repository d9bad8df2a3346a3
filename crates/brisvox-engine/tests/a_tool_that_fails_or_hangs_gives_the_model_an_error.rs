//! A tool that never answers is cut at the per-call timeout and an unknown
//! tool fails at once: the model reads an error result for each, the next
//! completion is requested, and the turn is answered (never hung).
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use brisvox_providers::Role;
use brisvox_providers::mock::{MockAnswer, MockToolCall};
use common::*;

#[tokio::test(start_paused = true)]
async fn a_timeout_and_an_unknown_tool_are_error_results() {
    let fx = fixture("en_long_question");
    let mocks = Mocks::fixed(13);
    mocks.llm.set_answer_responder(|request| {
        if ends_with_tool_result(request) {
            MockAnswer::Text("Sorry, I could not look that up.".to_owned())
        } else {
            MockAnswer::ToolCalls {
                text: String::new(),
                calls: vec![
                    MockToolCall::new("hangs", "{}"),
                    MockToolCall::new("no_such_tool", "{}"),
                ],
            }
        }
    });
    let tools = ScriptedTools::new(vec![ScriptedTool {
        name: "hangs",
        delay: None,
        answer: |_| String::new(),
    }]);
    let mut providers = mocks.providers();
    providers.tools = Some(tools);
    let mut config = sim_config();
    config.tools.timeout = Duration::from_millis(1_500);
    let run = run_with(
        then_silence(fx.samples, 5_000),
        config,
        providers,
        Models::energy_and_complete(),
    )
    .await;

    let requests = mocks.llm.requests();
    assert_eq!(requests.len(), 2);
    let results: Vec<serde_json::Value> = requests[1]
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| serde_json::from_str(&m.text).expect("an error result is JSON"))
        .collect();
    assert_eq!(
        results[0]["error"], "tool hangs timed out after 1500 ms",
        "{results:?}"
    );
    assert_eq!(results[1]["error"], "unknown tool no_such_tool");
    let r = &run.report;
    assert_eq!(
        (r.tools.started, r.tools.failed, r.tools.timed_out),
        (2, 2, 1)
    );
    assert_eq!(r.turn_counters.responses, 1);
    assert_eq!(
        run.answered()[0].span(TurnEvent::ToolCallStart, TurnEvent::ToolCallEnd),
        Some(Duration::from_millis(1_500))
    );
    assert_eq!(
        tts_texts(&mocks).join(" "),
        "Sorry, I could not look that up."
    );
}
