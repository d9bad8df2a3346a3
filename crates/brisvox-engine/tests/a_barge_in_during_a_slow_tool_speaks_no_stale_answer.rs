//! The bot says a few words and calls a slow tool; the caller talks over it
//! while the tool runs. The pending completion is never requested, the
//! result that arrives after the barge-in is recorded in the conversation
//! (the next turn's request carries it) and nothing of a stale answer is
//! spoken.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_engine::Models;
use brisvox_providers::Role;
use brisvox_providers::mock::{MockAnswer, MockToolCall};
use common::*;

#[tokio::test(start_paused = true)]
async fn the_late_result_is_recorded_and_never_spoken() {
    // Utterances at 0.5-3.1 s and 7.1-9.8 s; the first turn's tool runs
    // from about 4 s to 9 s, so the second utterance barges in on it.
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(15);
    mocks.llm.set_answer_responder(|request| {
        let users = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        if ends_with_tool_result(request) {
            MockAnswer::Text("STALE answer from the tool.".to_owned())
        } else if users == 1 {
            MockAnswer::ToolCalls {
                text: "Let me look that up.".to_owned(),
                calls: vec![MockToolCall::new("slow_lookup", "{}")],
            }
        } else {
            MockAnswer::Text("Fresh answer.".to_owned())
        }
    });
    let tools = ScriptedTools::new(vec![ScriptedTool {
        name: "slow_lookup",
        delay: Some(Duration::from_secs(5)),
        answer: |_| "the late result".to_owned(),
    }]);
    let mut providers = mocks.providers();
    providers.tools = Some(tools);
    let run = run_with(
        then_silence(fx.samples, 3_000),
        sim_config(),
        providers,
        Models::energy_and_complete(),
    )
    .await;

    let r = &run.report;
    assert_eq!(r.turn_counters.barge_ins, 1, "{:?}", r.turn_counters);
    assert_eq!(r.tools.late, 1, "the result came after the barge-in");
    let requests = mocks.llm.requests();
    assert_eq!(requests.len(), 2, "no completion for the interrupted turn");
    assert!(!ends_with_tool_result(&requests[1]));
    let recorded: Vec<&str> = requests[1]
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| &*m.text)
        .collect();
    assert_eq!(recorded, ["the late result"], "recorded in the context");
    let spoken = tts_texts(&mocks).join(" ");
    assert_eq!(spoken, "Let me look that up. Fresh answer.");
    assert_eq!(r.failed_responses, 0);
}
