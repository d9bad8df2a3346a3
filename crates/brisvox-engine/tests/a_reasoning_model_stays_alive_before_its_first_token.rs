//! A reasoning model may stream reasoning for longer than the engine's
//! first-token limit before its first answer token (issue #23; OpenRouter's
//! `delta.reasoning`, surfaced as `LlmEvent::ReasoningDelta`). The reasoning
//! is never spoken, but each delta is liveness: it restarts the limit, so the
//! answer still comes and is spoken, and no LLM failure is counted.
//! (Paused clock, energy VAD, fixed "complete" verdict.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{Models, ProviderStage};
use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, LlmStream};
use common::*;
use futures_util::StreamExt;

/// Each event 600 ms after the one before: four reasoning deltas (2.4 s,
/// more than twice the 1 s limit of the test), then the answer.
struct ThinkingLlm;

impl LlmProvider for ThinkingLlm {
    fn stream(&self, _request: LlmRequest) -> LlmStream {
        let mut events: Vec<LlmEvent> = (0..4)
            .map(|_| LlmEvent::ReasoningDelta { bytes: 40 })
            .collect();
        events.extend([LlmEvent::TextDelta("Okay, got it.".into()), LlmEvent::Done]);
        LlmStream::new(futures_util::stream::iter(events).then(|event| async move {
            tokio::time::sleep(Duration::from_millis(600)).await;
            event
        }))
    }
}

#[tokio::test(start_paused = true)]
async fn reasoning_longer_than_the_limit_still_gets_its_answer_spoken() {
    let mocks = Mocks::fixed(23);
    let mut providers = mocks.providers();
    providers.llm = Arc::new(ThinkingLlm);
    let mut config = sim_config();
    config.limits.llm_first_token = Duration::from_secs(1);
    let fx = fixture("en_two_utterances");
    let mut caller = fx.samples[..3_600 * 16].to_vec();
    caller.extend(std::iter::repeat_n(0, 8_000 * 16));
    let run = run_with(caller, config, providers, Models::energy_and_complete()).await;
    let r = &run.report;
    let llm_failures: u64 = r
        .provider_failures
        .iter()
        .filter(|c| {
            matches!(
                c.stage,
                ProviderStage::LlmBeforeFirstToken | ProviderStage::LlmAfterFirstToken
            )
        })
        .map(|c| c.count)
        .sum();
    assert_eq!(llm_failures, 0, "{:?}", r.provider_failures);
    let answered = run.answered();
    assert_eq!(answered.len(), 1);
    assert!(
        answered[0].at(TurnEvent::FirstAudioOut).is_some(),
        "the answer after the reasoning is spoken"
    );
}
