//! The answer reaches the transport as whole frames of the configured
//! duration at the configured rate, whatever the TTS rate (a sweep over
//! telephony, wideband and browser rates), paced one frame duration apart,
//! and the first frame still leaves on the provider floor.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_engine::Models;
use brisvox_engine::sim::SinkEvent;
use common::*;

async fn check(tts_rate_hz: u32, output_rate_hz: u32, frame_ms: u32) {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(40);
    let mut config = sim_config();
    config.tts.sample_rate_hz = tts_rate_hz;
    config.output_rate_hz = output_rate_hz;
    config.output_frame_ms = frame_ms;
    let caller = then_silence(fx.samples[..3_600 * 16].to_vec(), 3_000);
    let run = run(caller, config, &mocks, Models::energy_and_complete()).await;
    let frames: Vec<(f64, usize, u32)> = run
        .sink
        .events()
        .iter()
        .filter_map(|e| match e {
            SinkEvent::Frame {
                at, len, rate_hz, ..
            } => Some((run.ms(*at), *len, *rate_hz)),
            SinkEvent::Clear { .. } => None,
        })
        .collect();
    let expected_len = (output_rate_hz * frame_ms / 1000) as usize;
    assert!(
        frames.len() > 10,
        "{tts_rate_hz}->{output_rate_hz}: an answer"
    );
    for (_, len, rate) in &frames {
        assert_eq!((*len, *rate), (expected_len, output_rate_hz));
    }
    for pair in frames.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!((gap - f64::from(frame_ms)).abs() < 1e-6, "paced: {gap} ms");
    }
    let m = run.answered()[0].metrics();
    let floor = m.end_of_turn_delay.expect("end of turn")
        + Duration::from_millis(LLM_FIRST_TOKEN_MS + TTS_FIRST_BYTE_MS);
    let response = m.response_latency.expect("answered");
    assert!(response >= floor && response <= floor + Duration::from_millis(frame_ms.into()));
}

#[tokio::test(start_paused = true)]
async fn frames_follow_the_transport_rate_and_duration() {
    for (tts, out, frame_ms) in [
        (24_000, 8_000, 20),
        (24_000, 16_000, 20),
        (16_000, 16_000, 20),
        (22_050, 48_000, 20),
        (24_000, 8_000, 40),
        (16_000, 24_000, 10),
    ] {
        check(tts, out, frame_ms).await;
    }
}
