//! With ENABLE_ALL and sequential execution, the Rust session gives Python
//! onnxruntime's probabilities on every golden case, at 1 and 2 intra-op threads,
//! from the reference features and end to end from the fixture audio.
//!
//! Python's probabilities are those of ONNX Runtime's kernels on the CPU at hand
//! (the kernel sets of `smart_turn_common`): the tests find the recorded set this
//! CPU's kernels give on every case. On a CPU whose kernels match no recorded set
//! they say so and check what does not depend on the kernels (threads and
//! spinning change no bit; audio and golden features agree; the verdict is
//! p > 0.5).
//!
//! Skips with a message when the models are not fetched, fails when CI is set.

mod smart_turn_common;

use brisvox_models::smart_turn::{GraphOptimization, SmartTurn, SmartTurnConfig};
use smart_turn_common::{
    GoldenCase, KernelSet, case_input, cases, cases_for, golden_features, models_available,
    this_cpu_kernel_set,
};

const TOLERANCE: f32 = 1e-5;

fn load(intra_threads: usize, graph_optimization: GraphOptimization) -> SmartTurn {
    SmartTurn::load(SmartTurnConfig {
        intra_threads,
        graph_optimization,
        ..SmartTurnConfig::default()
    })
    .expect("Smart Turn loads")
}

/// The recorded kernel set this CPU's kernels give (ALL, 1 intra-op thread), if any.
fn this_cpus_set() -> Option<KernelSet> {
    let model = load(1, GraphOptimization::All);
    this_cpu_kernel_set(
        |features| model.probability_of_features(features).expect("model runs"),
        TOLERANCE,
    )
}

fn check(case: &GoldenCase, p: f32, what: &str) {
    let diff = (p - case.probability).abs();
    println!(
        "{what:28} {:34} p {p:.9} reference {:.9} |diff| {diff:.2e}{}",
        case.name,
        case.probability,
        if p.to_bits() == case.probability.to_bits() {
            " (bit-identical)"
        } else {
            ""
        }
    );
    assert!(
        diff <= TOLERANCE,
        "{what} {}: {p} vs reference {}",
        case.name,
        case.probability
    );
    assert_eq!(
        p > 0.5,
        case.complete,
        "{what} {}: verdict differs",
        case.name
    );
}

#[test]
fn probabilities_from_the_reference_features_match_at_1_and_2_intra_threads() {
    if !models_available("probabilities_from_the_reference_features_match") {
        return;
    }
    let expected = this_cpus_set().map(|set| cases_for(&set));
    let one = load(1, GraphOptimization::All);
    for threads in [1, 2] {
        let model = load(threads, GraphOptimization::All);
        model.warm_up().expect("warm-up");
        for (i, case) in cases().iter().enumerate() {
            let features = golden_features(case);
            let p = model
                .probability_of_features(&features)
                .expect("model runs");
            let what = format!("reference features, {threads} thr");
            match &expected {
                Some(expected) => check(&expected[i], p, &what),
                None => assert_eq!(
                    p.to_bits(),
                    one.probability_of_features(&features)
                        .expect("runs")
                        .to_bits(),
                    "{what} {}: differs from 1 thread",
                    case.name
                ),
            }
        }
    }
}

#[test]
fn turning_intra_op_spinning_off_changes_no_bit() {
    if !models_available("turning_intra_op_spinning_off_changes_no_bit") {
        return;
    }
    let expected = this_cpus_set().map(|set| cases_for(&set));
    let model = SmartTurn::load(SmartTurnConfig {
        intra_threads: 2,
        intra_op_spinning: false,
        ..SmartTurnConfig::default()
    })
    .expect("loads");
    let spinning = load(2, GraphOptimization::All);
    for (i, case) in cases().iter().enumerate() {
        let features = golden_features(case);
        let p = model.probability_of_features(&features).expect("runs");
        let on = spinning.probability_of_features(&features).expect("runs");
        assert_eq!(p.to_bits(), on.to_bits(), "{}", case.name);
        if let Some(expected) = &expected {
            check(&expected[i], p, "2 thr, spinning off");
            assert_eq!(
                p.to_bits(),
                expected[i].probability.to_bits(),
                "{}",
                case.name
            );
        }
    }
}

#[test]
fn probabilities_from_the_fixture_audio_match_end_to_end() {
    if !models_available("probabilities_from_the_fixture_audio_match_end_to_end") {
        return;
    }
    let expected = this_cpus_set().map(|set| cases_for(&set));
    let model = load(1, GraphOptimization::All);
    for (i, case) in cases().iter().enumerate() {
        let verdict = model.analyze(&case_input(case)).expect("analysis");
        match &expected {
            Some(expected) => {
                check(&expected[i], verdict.probability, "audio -> verdict");
                assert_eq!(verdict.complete, expected[i].complete);
            }
            None => {
                let from_features = model
                    .probability_of_features(&golden_features(case))
                    .expect("runs");
                let diff = (verdict.probability - from_features).abs();
                assert!(
                    diff <= TOLERANCE,
                    "{}: audio {} vs golden features {from_features}",
                    case.name,
                    verdict.probability
                );
                assert_eq!(verdict.complete, verdict.probability > 0.5, "{}", case.name);
            }
        }
    }
}

/// How the settings were found: each ONNX Runtime optimisation level gives the
/// probabilities Python gives at that level on the same kernels (the kernel
/// set's columns), and only ENABLE_ALL (and EXTENDED, and LAYOUT, which do the
/// same fusions on this graph) gives the reference; DISABLE and BASIC move
/// probabilities and flip verdicts.
#[test]
fn the_graph_optimisation_level_decides_whether_the_reference_is_reproduced() {
    if !models_available("the_graph_optimisation_level_decides") {
        return;
    }
    let set = this_cpus_set();
    let cases = cases();
    let all = load(1, GraphOptimization::All);
    let levels = [
        (GraphOptimization::Disable, Some(0)),
        (GraphOptimization::Basic, Some(1)),
        (GraphOptimization::Extended, Some(2)),
        (GraphOptimization::Layout, None),
        (GraphOptimization::All, Some(3)),
    ];
    let mut worst_disable = 0.0f32;
    for (level, column) in levels {
        let model = load(1, level);
        let mut worst_vs_all = 0.0f32;
        for case in &cases {
            let features = golden_features(case);
            let p = model.probability_of_features(&features).expect("runs");
            if let (Some(c), Some(set)) = (column, &set) {
                let python = set.levels(&case.name)[c];
                assert!(
                    (p - python).abs() <= TOLERANCE,
                    "{level:?} {}: {p} vs Python at the same level {python} (kernel set {})",
                    case.name,
                    set.label
                );
            }
            let reference = all.probability_of_features(&features).expect("runs");
            worst_vs_all = worst_vs_all.max((p - reference).abs());
        }
        println!("{level:?}: worst |p - ENABLE_ALL| = {worst_vs_all:.3e}");
        if level == GraphOptimization::Disable {
            worst_disable = worst_vs_all;
        }
        if matches!(
            level,
            GraphOptimization::All | GraphOptimization::Extended | GraphOptimization::Layout
        ) {
            assert!(worst_vs_all <= TOLERANCE, "{level:?}");
        }
    }
    assert!(
        worst_disable > 0.01,
        "with optimisation off the int8 model is expected to move (worst {worst_disable})"
    );
}
