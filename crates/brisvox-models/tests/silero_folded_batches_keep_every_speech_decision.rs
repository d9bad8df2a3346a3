//! Batched runs of the batch-folded Silero graph (the default for runs of two rows
//! or more) stay within `FOLDED_TOLERANCE` of Python onnxruntime's probabilities on
//! every window of every golden, and the stop rule makes exactly the same speech
//! decisions (start, falling, stop, at the same windows) from them as from the
//! goldens. Single windows keep the shipped graph: bit for bit the reference.

mod vad_common;

use brisvox_models::vad::silero::{
    FOLDED_TOLERANCE, SileroModel, SileroOptions, SileroRate, SileroState,
};
use vad_common::{
    Golden, decisions, goldens, max_abs_diff, onnx_model_or_skip, run_in_shared_batches,
};

/// Three copies of each golden of a rate, staggered so that streams join and leave
/// and runs hold from one row to all of them.
fn staggered(rate: SileroRate) -> (Vec<Golden>, Vec<usize>) {
    let group: Vec<Golden> = goldens().into_iter().filter(|g| g.rate == rate).collect();
    let copies: Vec<Golden> = group
        .iter()
        .cycle()
        .take(group.len() * 3)
        .cloned()
        .collect();
    let starts = (0..copies.len()).map(|i| (i * 7) % 23).collect();
    (copies, starts)
}

#[test]
fn folded_batches_stay_within_the_bound_and_decide_the_same() {
    let Some(model) = onnx_model_or_skip() else {
        return;
    };
    for rate in [SileroRate::Hz16000, SileroRate::Hz8000] {
        let (group, starts) = staggered(rate);
        let refs: Vec<&Golden> = group.iter().collect();
        let got = run_in_shared_batches(&model, &refs, &starts);
        let mut worst = 0.0f32;
        let mut events = 0;
        for (s, g) in group.iter().enumerate() {
            let diff = max_abs_diff(&got[s], &g.probabilities);
            assert!(
                diff <= FOLDED_TOLERANCE,
                "{} ({rate:?}, stream {s}): max |p - golden| {diff:e}",
                g.fixture
            );
            worst = worst.max(diff);
            let reference = decisions(g, &g.probabilities);
            assert_eq!(
                decisions(g, &got[s]),
                reference,
                "{} ({rate:?}, stream {s}): the same speech decisions",
                g.fixture
            );
            events += reference.len();
        }
        assert!(events > 0, "the fixtures hold speech");
        eprintln!(
            "{rate:?}: {} streams, {} windows, max |p_folded_batch - p_python| {worst:e}, \
             {events} speech decisions identical",
            group.len(),
            got.iter().map(Vec::len).sum::<usize>()
        );
    }
}

#[test]
fn the_folded_graph_is_what_runs_a_batch_and_a_lone_window_keeps_the_shipped_one() {
    let Some(folded) = onnx_model_or_skip() else {
        return;
    };
    let shipped = SileroModel::load_with(SileroOptions {
        fold_batches: false,
        ..vad_common::onnx_options()
    })
    .expect("the shipped graph loads");
    let (group, starts) = staggered(SileroRate::Hz16000);
    let refs: Vec<&Golden> = group.iter().collect();
    let a = run_in_shared_batches(&folded, &refs, &starts);
    let b = run_in_shared_batches(&shipped, &refs, &starts);
    // The same sums in another order: some window differs in its last bits (else
    // the folded graph did not run), none by more than the bound.
    let differs = a.iter().zip(&b).any(|(x, y)| x != y);
    assert!(differs, "batches ran on the folded graph");
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| max_abs_diff(x, y))
        .fold(0.0, f32::max);
    assert!(worst <= FOLDED_TOLERANCE, "folded vs shipped {worst:e}");

    // One window at a time: identical bits whichever way the model was loaded.
    let g = &group[0];
    let (mut s1, mut s2) = (SileroState::new(g.rate), SileroState::new(g.rate));
    for i in 0..g.probabilities.len() {
        let p1 = folded.process(&mut s1, g.window(i)).unwrap();
        let p2 = shipped.process(&mut s2, g.window(i)).unwrap();
        assert_eq!(p1.to_bits(), p2.to_bits(), "window {i} alone");
    }
}
