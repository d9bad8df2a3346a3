//! After construction, pushing frames into the ring, snapshotting it into a sized
//! buffer and computing features into a caller's buffer allocate nothing (counted
//! on the calling thread by the test kit's counting global allocator).

use brisvox_models::smart_turn::{
    FEATURES_LEN, FRAME_SAMPLES, FeatureExtractor, SmartTurnRing, snapshot_buffer,
};
use brisvox_testkit::alloc::{CountingAllocator, allocations_during};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn ring_pushes_and_snapshots_do_not_allocate() {
    let mut ring = SmartTurnRing::new();
    let mut out = snapshot_buffer();
    let frame: Vec<i16> = (0..FRAME_SAMPLES as i16).collect();
    let n = allocations_during(|| {
        for k in 0..1_000 {
            ring.push(&frame);
            if k == 10 {
                ring.mark_speech_start(200);
            }
            if k % 50 == 0 {
                ring.snapshot_into(&mut out);
            }
        }
        ring.end_turn();
        ring.snapshot_into(&mut out);
    });
    assert_eq!(n, 0, "allocations on the media path");
}

#[test]
fn features_into_a_callers_buffer_do_not_allocate_after_construction() {
    let mut extractor = FeatureExtractor::new();
    let mut out = vec![0.0f32; FEATURES_LEN];
    let audio: Vec<i16> = (0..96_000)
        .map(|i| ((i as f64 * 0.05).sin() * 5_000.0) as i16)
        .collect();
    let n = allocations_during(|| {
        for len in [96_000, 20_000, 1] {
            extractor
                .compute_into(&audio[..len], &mut out)
                .expect("sized");
        }
    });
    assert_eq!(n, 0, "allocations per analysis");
}
