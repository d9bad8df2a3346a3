//! Silero probabilities equal Python onnxruntime's on every window of the goldens
//! (tolerance 1e-6), one window at a time and as explicit batches of the shipped
//! graph. (Batches of the batch-folded graph, the default for two rows or more:
//! `silero_folded_batches_keep_every_speech_decision.rs`.)

mod vad_common;

use brisvox_models::vad::silero::{SileroModel, SileroOptions, SileroRate};
use vad_common::{
    TOLERANCE, goldens, max_abs_diff, one_window_at_a_time, onnx_model_or_skip,
    run_in_shared_batches,
};

#[test]
fn every_window_of_every_golden_matches_one_stream_at_a_time() {
    let Some(model) = onnx_model_or_skip() else {
        return;
    };
    let goldens = goldens();
    assert!(
        goldens.iter().any(|g| g.rate == SileroRate::Hz8000),
        "an 8 kHz golden"
    );
    assert!(
        goldens.iter().any(|g| g.rate == SileroRate::Hz16000),
        "a 16 kHz golden"
    );
    let mut windows = 0;
    let mut overall = 0.0_f32;
    for g in &goldens {
        let got = one_window_at_a_time(&model, g);
        let worst = max_abs_diff(&got, &g.probabilities);
        assert!(worst <= TOLERANCE, "{}: max |diff| {worst:e}", g.fixture);
        windows += got.len();
        overall = overall.max(worst);
    }
    eprintln!(
        "{windows} windows of {} goldens match, max |diff| {overall:e}",
        goldens.len()
    );
}

#[test]
fn the_same_windows_match_when_all_fixtures_of_a_rate_share_each_run() {
    if onnx_model_or_skip().is_none() {
        return;
    }
    let model = SileroModel::load_with(SileroOptions {
        fold_batches: false,
        ..vad_common::onnx_options()
    })
    .expect("the shipped graph loads");
    let goldens = goldens();
    for rate in [SileroRate::Hz8000, SileroRate::Hz16000] {
        let group: Vec<_> = goldens.iter().filter(|g| g.rate == rate).collect();
        let got = run_in_shared_batches(&model, &group, &vec![0; group.len()]);
        for (s, g) in group.iter().enumerate() {
            let worst = max_abs_diff(&got[s], &g.probabilities);
            assert!(
                worst <= TOLERANCE,
                "{} batched: max |diff| {worst:e}",
                g.fixture
            );
        }
    }
}
