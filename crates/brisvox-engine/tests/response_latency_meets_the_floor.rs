//! Server-side response latency (FirstAudioOut - UserSpeechEnd) equals the
//! floor of the sim mode (end of turn + LLM first token + TTS first byte)
//! within one frame, and the end of turn is the VAD stop + the STT final
//! (within one VAD window).
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use common::*;

const FRAME: Duration = Duration::from_millis(20);
const VAD_WINDOW: Duration = Duration::from_millis(32);

#[tokio::test(start_paused = true)]
async fn first_audio_leaves_on_the_provider_floor() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(7);
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let answered = run.answered();
    assert_eq!(answered.len(), 2);
    let providers = Duration::from_millis(LLM_FIRST_TOKEN_MS + TTS_FIRST_BYTE_MS);
    let end_of_turn_floor = Duration::from_millis(MIN_SILENCE_MS + STT_FINAL_MS);
    for turn in answered {
        let m = turn.metrics();
        let end_of_turn = m.end_of_turn_delay.expect("end of turn");
        let response = m.response_latency.expect("response latency");
        let floor = end_of_turn + providers;
        println!(
            "turn {}: end_of_turn {:?} llm_ttft {:?} tts_ttfb {:?} post_endpoint {:?} response {:?} (floor {:?})",
            turn.epoch(),
            end_of_turn,
            m.llm_ttft,
            m.tts_ttfb,
            m.post_endpoint_latency,
            response,
            floor
        );
        assert_eq!(m.llm_ttft, Some(Duration::from_millis(LLM_FIRST_TOKEN_MS)));
        assert_eq!(m.tts_ttfb, Some(Duration::from_millis(TTS_FIRST_BYTE_MS)));
        assert!(response >= floor, "{response:?} below the floor {floor:?}");
        assert!(
            response <= floor + FRAME,
            "{response:?} over {floor:?} + a frame"
        );
        // End of turn: the VAD stop (hangover, rounded up to whole windows,
        // minus the pad) plus the STT final.
        assert!(
            end_of_turn >= end_of_turn_floor - VAD_WINDOW,
            "{end_of_turn:?}"
        );
        assert!(
            end_of_turn <= end_of_turn_floor + VAD_WINDOW,
            "{end_of_turn:?}"
        );
        // The first chunk went to the TTS with the first token.
        assert_eq!(
            turn.span(TurnEvent::LlmFirstToken, TurnEvent::TtsFirstText),
            Some(Duration::ZERO)
        );
    }
}
