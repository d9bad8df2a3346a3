//! With a filler configured, a tool that runs past its delay makes the bot
//! say it (once per turn) while the answer waits; a fast tool does not.
//! Off by default: without the setting nothing is said.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_engine::{Models, ToolFiller};
use brisvox_providers::mock::{MockAnswer, MockToolCall};
use common::*;

async fn spoken_with(tool_ms: u64, filler: Option<ToolFiller>) -> String {
    let fx = fixture("en_long_question");
    let mocks = Mocks::fixed(16);
    mocks.llm.set_answer_responder(|request| {
        if ends_with_tool_result(request) {
            MockAnswer::Text("It is open.".to_owned())
        } else {
            MockAnswer::ToolCalls {
                text: String::new(),
                calls: vec![MockToolCall::new("hours", "{}")],
            }
        }
    });
    let tools = ScriptedTools::new(vec![ScriptedTool {
        name: "hours",
        delay: Some(Duration::from_millis(tool_ms)),
        answer: |_| "open".to_owned(),
    }]);
    let mut providers = mocks.providers();
    providers.tools = Some(tools);
    let mut config = sim_config();
    config.tools.filler = filler;
    let run = run_with(
        then_silence(fx.samples, 6_000),
        config,
        providers,
        Models::energy_and_complete(),
    )
    .await;
    assert_eq!(run.report.failed_responses, 0);
    assert_eq!(run.report.turn_counters.responses, 1);
    tts_texts(&mocks).join(" ")
}

#[tokio::test(start_paused = true)]
async fn the_filler_comes_only_when_the_tool_is_slow() {
    let filler = || {
        Some(ToolFiller {
            after: Duration::from_millis(800),
            text: "One moment.".to_owned(),
        })
    };
    assert_eq!(
        spoken_with(3_000, filler()).await,
        "One moment. It is open."
    );
    assert_eq!(spoken_with(300, filler()).await, "It is open.");
    assert_eq!(spoken_with(3_000, None).await, "It is open.");
}
