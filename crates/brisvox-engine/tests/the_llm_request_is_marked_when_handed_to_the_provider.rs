//! Every answered turn carries the engine's own hand-offs: the request handed
//! to the LLM provider (`LlmRequestSent`) no earlier than the turn end, and the
//! first frame handed to the transport no earlier than the TTS's first audio;
//! both hops are short (the engine's queues, not a provider's latency).
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use common::*;

#[tokio::test(start_paused = true)]
async fn each_answered_turn_has_both_engine_hops() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(5);
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let answered = run.answered();
    assert_eq!(answered.len(), 2);
    for turn in answered {
        let sent = turn.at(TurnEvent::LlmRequestSent).expect("request sent");
        let end = turn.at(TurnEvent::TurnEnd).expect("turn end");
        assert!(sent >= end);
        let first_token = turn.at(TurnEvent::LlmFirstToken).expect("first token");
        assert!(
            first_token > sent,
            "the provider's latency follows the send"
        );
        let hops = turn.engine_hops();
        // On the paused clock the hand-offs take no time; a frame is the bound.
        let frame = Duration::from_millis(20);
        assert!(hops.turn_end_to_llm.expect("llm hop") < frame, "{hops:?}");
        assert!(
            hops.tts_first_byte_to_transport.expect("audio hop") < frame,
            "{hops:?}"
        );
        assert_eq!(hops.interrupt_to_clear, None);
    }
}
