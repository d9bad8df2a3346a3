//! A model that keeps calling tools gets `max_rounds` rounds; the completion
//! after the last round is requested without tools, and calls it makes anyway
//! are dropped (counted): the turn ends instead of looping.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_engine::Models;
use brisvox_providers::mock::{MockAnswer, MockToolCall};
use common::*;

#[tokio::test(start_paused = true)]
async fn the_round_limit_ends_a_tool_loop() {
    let fx = fixture("en_long_question");
    let mocks = Mocks::fixed(14);
    mocks.llm.set_answer_responder(|_| MockAnswer::ToolCalls {
        text: String::new(),
        calls: vec![MockToolCall::new("again", "{}")],
    });
    let tools = ScriptedTools::new(vec![ScriptedTool {
        name: "again",
        delay: Some(Duration::from_millis(50)),
        answer: |_| "more".to_owned(),
    }]);
    let mut providers = mocks.providers();
    providers.tools = Some(tools.clone());
    let mut config = sim_config();
    config.tools.max_rounds = 2;
    let run = run_with(
        then_silence(fx.samples, 4_000),
        config,
        providers,
        Models::energy_and_complete(),
    )
    .await;

    let requests = mocks.llm.requests();
    let offered: Vec<usize> = requests.iter().map(|r| r.tools.len()).collect();
    assert_eq!(offered, [1, 1, 0], "two rounds with tools, then none");
    assert_eq!(tools.invocations().len(), 2);
    let r = &run.report;
    assert_eq!((r.tools.rounds, r.tools.over_limit), (2, 1));
    assert_eq!(r.turn_counters.responses, 1, "the turn ended");
}
