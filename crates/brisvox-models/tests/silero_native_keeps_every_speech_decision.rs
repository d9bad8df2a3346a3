//! Silero computed in Rust (`SileroKernel::Native`, the default) stays within
//! `NATIVE_TOLERANCE` of Python onnxruntime's probability on every window of
//! every golden, at both rates, one window at a time and in batches shared by
//! streams that join and leave; and the stop rule makes exactly the same speech
//! decisions (start, falling, stop, at the same windows) from its probabilities
//! as from the goldens'.

mod vad_common;

use brisvox_models::vad::silero::{
    NATIVE_TOLERANCE, SileroKernel, SileroModel, SileroOptions, SileroRate, SileroState,
};
use vad_common::{
    Golden, decisions, golden_16k, goldens, max_abs_diff, model_or_skip, one_window_at_a_time,
    run_in_shared_batches,
};

fn check(g: &Golden, got: &[f32], how: &str) -> (f32, usize) {
    let diff = max_abs_diff(got, &g.probabilities);
    assert!(
        diff <= NATIVE_TOLERANCE,
        "{} ({:?}, {how}): max |p - golden| {diff:e}",
        g.fixture,
        g.rate
    );
    let reference = decisions(g, &g.probabilities);
    assert_eq!(
        decisions(g, got),
        reference,
        "{} ({:?}, {how}): the same speech decisions",
        g.fixture,
        g.rate
    );
    (diff, reference.len())
}

#[test]
fn the_default_kernel_is_native() {
    let Some(model) = model_or_skip() else { return };
    assert_eq!(model.options().kernel, SileroKernel::Native);
    assert_eq!(SileroOptions::default().kernel, SileroKernel::Native);
}

#[test]
fn every_golden_window_alone_stays_within_the_bound_and_decides_the_same() {
    let Some(model) = model_or_skip() else { return };
    let all = goldens();
    let mut worst = 0.0f32;
    let mut events = 0;
    for rate in [SileroRate::Hz16000, SileroRate::Hz8000] {
        let group: Vec<&Golden> = all.iter().filter(|g| g.rate == rate).collect();
        assert!(!group.is_empty(), "a golden at {rate:?}");
        for g in group {
            let (d, e) = check(g, &one_window_at_a_time(&model, g), "alone");
            worst = worst.max(d);
            events += e;
        }
    }
    assert!(events > 0, "the fixtures hold speech");
    eprintln!("alone: max |p_native - p_python| {worst:e}, {events} speech decisions identical");
}

#[test]
fn shared_batches_give_each_stream_what_it_gets_alone() {
    let Some(model) = model_or_skip() else { return };
    let all = goldens();
    for rate in [SileroRate::Hz16000, SileroRate::Hz8000] {
        let group: Vec<&Golden> = all
            .iter()
            .filter(|g| g.rate == rate)
            .cycle()
            .take(3 * all.iter().filter(|g| g.rate == rate).count())
            .collect();
        let starts: Vec<usize> = (0..group.len()).map(|i| (i * 7) % 23).collect();
        let got = run_in_shared_batches(&model, &group, &starts);
        for (s, g) in group.iter().enumerate() {
            check(g, &got[s], "shared batches");
            // Rows do not interact: a stream's probabilities in a batch are those
            // it gets alone, bit for bit.
            let alone = one_window_at_a_time(&model, g);
            assert!(
                got[s]
                    .iter()
                    .zip(&alone)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{} ({rate:?}): batched equals alone",
                g.fixture
            );
        }
    }
}

#[test]
fn a_fresh_state_and_a_reset_state_score_alike() {
    let Some(model) = model_or_skip() else { return };
    let g = golden_16k();
    let mut a = SileroState::new(g.rate);
    let first: Vec<f32> = (0..8)
        .map(|i| model.process(&mut a, g.window(i)).unwrap())
        .collect();
    a.reset();
    let again: Vec<f32> = (0..8)
        .map(|i| model.process(&mut a, g.window(i)).unwrap())
        .collect();
    assert_eq!(first, again);
}

#[test]
fn a_model_file_without_the_weights_is_a_clear_error() {
    if model_or_skip().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("brisvox-native-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("not-silero.onnx");
    // A valid protobuf message that is not Silero: a graph with no nodes.
    std::fs::write(&path, [0x3a, 0x00]).unwrap();
    let err =
        SileroModel::load_from(&path, SileroOptions::default()).expect_err("no weights, no model");
    let text = err.to_string();
    assert!(text.contains("Silero"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}
