//! With `SileroOptions::inline_16k` (the default: the top-level `If` on `sr`
//! replaced by its 16 kHz branch), every golden window still gets Python
//! onnxruntime's
//! probability: one window at a time within the shipped graph's 1e-6 (8 kHz
//! windows run on the shipped graph, built at the first of them), and in shared
//! batches exactly what the folded graph with the `If` gives.

mod vad_common;

use brisvox_models::vad::silero::{SileroModel, SileroOptions, SileroRate};
use vad_common::{
    TOLERANCE, goldens, max_abs_diff, one_window_at_a_time, onnx_model_or_skip,
    run_in_shared_batches,
};

fn load(inline_16k: bool) -> SileroModel {
    SileroModel::load_with(SileroOptions {
        inline_16k,
        ..vad_common::onnx_options()
    })
    .expect("the graphs load")
}

#[test]
fn one_window_at_a_time_every_golden_matches_at_both_rates() {
    if onnx_model_or_skip().is_none() {
        return;
    }
    let model = load(true);
    let goldens = goldens();
    for rate in [SileroRate::Hz16000, SileroRate::Hz8000] {
        assert!(goldens.iter().any(|g| g.rate == rate), "a {rate:?} golden");
    }
    for g in &goldens {
        let got = one_window_at_a_time(&model, g);
        let worst = max_abs_diff(&got, &g.probabilities);
        assert!(worst <= TOLERANCE, "{}: max |diff| {worst:e}", g.fixture);
    }
}

#[test]
fn shared_batches_give_the_same_bits_as_the_graph_with_the_if() {
    if onnx_model_or_skip().is_none() {
        return;
    }
    let (with_if, model) = (load(false), load(true));
    for rate in [SileroRate::Hz16000, SileroRate::Hz8000] {
        let group: Vec<_> = goldens().into_iter().filter(|g| g.rate == rate).collect();
        let refs: Vec<_> = group.iter().collect();
        let starts: Vec<usize> = (0..refs.len()).map(|i| i * 5).collect();
        let a = run_in_shared_batches(&with_if, &refs, &starts);
        let b = run_in_shared_batches(&model, &refs, &starts);
        assert_eq!(a, b, "{rate:?}: the same nodes give the same probabilities");
    }
}
