//! Fed a fixture in 20 ms frames, with the VAD's start marked on the frame that
//! confirms speech and the previous turn ended at its VAD stop, the ring's snapshot
//! is exactly the span the goldens were made from (the span Pipecat analyses).

mod smart_turn_common;

use brisvox_models::smart_turn::{FRAME_SAMPLES, RING_SAMPLES, SmartTurnRing, snapshot_buffer};
use smart_turn_common::{case_input, cases, read_fixture};

/// Pipecat's VAD start delay (`start_secs`), which the goldens assume.
const VAD_START_DELAY_MS: u32 = 200;

#[test]
fn the_snapshot_at_the_vad_stop_is_the_golden_span() {
    for case in cases() {
        let pcm = read_fixture(&case.fixture);
        let expected = case_input(&case);
        let mut ring = SmartTurnRing::new();
        let mut out = snapshot_buffer();
        for (k, frame) in pcm[..case.end_sample].chunks(FRAME_SAMPLES).enumerate() {
            ring.push(frame);
            if case.previous_turn_end_frames == Some(k + 1) {
                ring.end_turn();
            }
            if case.confirm_frame == Some(k) {
                ring.mark_speech_start(VAD_START_DELAY_MS);
            }
        }
        ring.snapshot_into(&mut out);
        let tail = &expected[expected.len().saturating_sub(RING_SAMPLES)..];
        assert_eq!(out.len(), tail.len(), "{}: snapshot length", case.name);
        assert!(
            out == tail,
            "{}: snapshot differs from the golden span",
            case.name
        );
    }
}
