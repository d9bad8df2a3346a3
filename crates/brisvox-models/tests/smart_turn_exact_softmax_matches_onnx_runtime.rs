//! The attention softmax on brisvox's kernel (the default) gives ONNX Runtime's
//! own output bit for bit: the same probability, to the last bit, on every
//! golden case, on features of the fixture audio, and on features far from
//! speech (silence, noise, a tone), side by side with a session on ONNX
//! Runtime's `QLinearSoftmax`. Both sessions run on this CPU's kernels for
//! everything else, so the comparison holds on any CPU, whichever recorded
//! kernel set it matches.
//!
//! Also: the kernel is used exactly where ONNX Runtime would fuse the softmax
//! (the four attention layers at EXTENDED and above), never at DISABLE or BASIC,
//! whose unfused float softmax gives other numbers; and only when the load-time
//! check found it equal to ONNX Runtime's kernel on this CPU (on a CPU where
//! it is not, ONNX Runtime's runs and the load says why).
//!
//! Skips with a message when the models are not fetched, fails when CI is set.

mod smart_turn_common;

use brisvox_models::smart_turn::{
    FEATURES_LEN, FeatureExtractor, GraphOptimization, SmartTurn, SmartTurnConfig, SoftmaxKernel,
};
use smart_turn_common::{case_input, cases, golden_features, models_available};

fn load(softmax: SoftmaxKernel, graph_optimization: GraphOptimization) -> SmartTurn {
    SmartTurn::load(SmartTurnConfig {
        softmax,
        graph_optimization,
        ..SmartTurnConfig::default()
    })
    .expect("Smart Turn loads")
}

/// Feature sets that are not speech: what the model may still be given.
fn other_features() -> Vec<(String, Vec<f32>)> {
    let mut extractor = FeatureExtractor::new();
    let mut out = Vec::new();
    let mut features = |name: &str, pcm: Vec<i16>| {
        let mut f = vec![0.0; FEATURES_LEN];
        extractor.compute_into(&pcm, &mut f).expect("features");
        out.push((name.to_owned(), f));
    };
    features("silence 8 s", vec![0; 128_000]);
    features("silence 0.5 s", vec![0; 8_000]);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise = (0..64_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 48) as i16 / 4
        })
        .collect();
    features("white noise 4 s", noise);
    let tone = (0..96_000)
        .map(|i| {
            ((i as f64 * 2.0 * std::f64::consts::PI * 440.0 / 16_000.0).sin() * 20_000.0) as i16
        })
        .collect();
    features("440 Hz tone 6 s, loud", tone);
    let clipped = (0..128_000)
        .map(|i| {
            if (i / 40) % 2 == 0 {
                i16::MAX
            } else {
                i16::MIN
            }
        })
        .collect();
    features("square wave at full scale", clipped);
    out
}

#[test]
fn the_exact_softmax_gives_onnx_runtimes_probabilities_bit_for_bit() {
    if !models_available("the_exact_softmax_gives_onnx_runtimes_probabilities_bit_for_bit") {
        return;
    }
    let ours = load(SoftmaxKernel::Exact, GraphOptimization::All);
    let theirs = load(SoftmaxKernel::OnnxRuntime, GraphOptimization::All);
    match SmartTurn::exact_softmax_check() {
        Ok(()) => {
            assert_eq!(
                ours.exact_softmax_nodes(),
                4,
                "the four attention softmaxes"
            );
            assert_eq!(ours.softmax_fallback(), None);
            // The default also runs elementwise chains as lookup tables
            // (qlookup.rs): the GELUs of the 4 FFN layers, the 2 convolutions
            // and the classifier, and the query, key and value projections'
            // bias (and scale) of the 4 attention layers; and the keys and
            // values enter their products as int8 (qsigned.rs).
            assert_eq!(ours.lookup_fallback(), None);
            assert_eq!(ours.lookup_chains(), 19, "7 GELUs and 12 projections");
            assert_eq!(ours.signed_operands(), 8, "keys and values of 4 layers");
        }
        Err(why) => {
            // Not this repository's machines so far: say so, and check the fallback.
            println!("the kernel differs from ONNX Runtime's on this CPU: {why}");
            assert_eq!(ours.exact_softmax_nodes(), 0);
            assert_eq!(ours.softmax_fallback(), Some(why.as_str()));
        }
    }
    assert_eq!(theirs.exact_softmax_nodes(), 0);
    assert_eq!(theirs.softmax_fallback(), None);

    let mut inputs: Vec<(String, Vec<f32>)> = Vec::new();
    for case in cases() {
        inputs.push((
            format!("{} (golden features)", case.name),
            golden_features(&case),
        ));
        let mut f = vec![0.0; FEATURES_LEN];
        FeatureExtractor::new()
            .compute_into(&case_input(&case), &mut f)
            .expect("features");
        inputs.push((format!("{} (from the audio)", case.name), f));
    }
    inputs.extend(other_features());
    assert!(inputs.len() >= 20, "{} inputs", inputs.len());

    for (name, features) in &inputs {
        let a = ours.probability_of_features(features).expect("ours runs");
        let b = theirs
            .probability_of_features(features)
            .expect("theirs runs");
        println!("{name:50} exact {a:.9} onnxruntime {b:.9}");
        assert_eq!(a.to_bits(), b.to_bits(), "{name}: {a} vs {b}");
    }
}

#[test]
fn the_kernel_runs_only_where_onnx_runtime_would_fuse_the_softmax() {
    if !models_available("the_kernel_runs_only_where_onnx_runtime_would_fuse_the_softmax") {
        return;
    }
    let fused = if SmartTurn::exact_softmax_check().is_ok() {
        4
    } else {
        0
    };
    for (level, expected) in [
        (GraphOptimization::Disable, 0),
        (GraphOptimization::Basic, 0),
        (GraphOptimization::Extended, fused),
        (GraphOptimization::Layout, fused),
    ] {
        let model = load(SoftmaxKernel::Exact, level);
        assert_eq!(model.exact_softmax_nodes(), expected, "{level:?}");
    }
    // At EXTENDED too, the output is ONNX Runtime's.
    let ours = load(SoftmaxKernel::Exact, GraphOptimization::Extended);
    let theirs = load(SoftmaxKernel::OnnxRuntime, GraphOptimization::Extended);
    for case in cases() {
        let f = golden_features(&case);
        let (a, b) = (
            ours.probability_of_features(&f).expect("runs"),
            theirs.probability_of_features(&f).expect("runs"),
        );
        assert_eq!(a.to_bits(), b.to_bits(), "{}: {a} vs {b}", case.name);
    }
}

/// A model without a quantised softmax to rewrite (here Silero's graph given as
/// the Smart Turn file) loads on ONNX Runtime's kernels, and the load says why.
#[test]
fn a_graph_without_a_quantised_softmax_loads_as_shipped_and_says_why() {
    if !models_available("a_graph_without_a_quantised_softmax_loads_as_shipped_and_says_why") {
        return;
    }
    let silero = brisvox_models::runtime::find_model_file(brisvox_models::runtime::SILERO_VAD_FILE)
        .expect("the Silero model is fetched with Smart Turn's");
    let model = SmartTurn::load(SmartTurnConfig {
        model_path: Some(silero),
        ..SmartTurnConfig::default()
    })
    .expect("ONNX Runtime loads the graph as it is");
    assert_eq!(model.exact_softmax_nodes(), 0);
    let why = model.softmax_fallback().expect("a reason");
    if SmartTurn::exact_softmax_check().is_ok() {
        assert!(why.contains("no quantised softmax"), "{why}");
    }
}

/// The elementwise chains as lookup tables with int8 attention operands (the
/// default), and with uint8 ones, against the same graph with the chains on
/// ONNX Runtime's operators: the same probability to the bit on every golden
/// case; turned off, no chain is tabulated and nothing is said.
#[test]
fn the_lookup_tables_give_the_bits_of_onnx_runtimes_operators() {
    if !models_available("the_lookup_tables_give_the_bits_of_onnx_runtimes_operators") {
        return;
    }
    if SmartTurn::exact_softmax_check().is_err() {
        println!("the tables ride on the exact-softmax graph, not used on this CPU");
        return;
    }
    let tabled = load(SoftmaxKernel::Exact, GraphOptimization::All);
    let plain = SmartTurn::load(SmartTurnConfig {
        lookup_tables: false,
        ..SmartTurnConfig::default()
    })
    .expect("Smart Turn loads");
    let unsigned = SmartTurn::load(SmartTurnConfig {
        signed_attention: false,
        ..SmartTurnConfig::default()
    })
    .expect("Smart Turn loads");
    assert_eq!(tabled.lookup_chains(), 19, "{:?}", tabled.lookup_fallback());
    assert_eq!(tabled.signed_operands(), 8);
    assert_eq!(
        (unsigned.lookup_chains(), unsigned.signed_operands()),
        (19, 0),
        "{:?}",
        unsigned.lookup_fallback()
    );
    assert_eq!((plain.lookup_chains(), plain.lookup_fallback()), (0, None));
    assert_eq!(plain.signed_operands(), 0);
    assert_eq!(plain.exact_softmax_nodes(), 4);
    for case in cases() {
        let f = golden_features(&case);
        let (a, b, c) = (
            tabled.probability_of_features(&f).expect("runs"),
            plain.probability_of_features(&f).expect("runs"),
            unsigned.probability_of_features(&f).expect("runs"),
        );
        assert_eq!(a.to_bits(), b.to_bits(), "{}: {a} vs {b}", case.name);
        assert_eq!(c.to_bits(), b.to_bits(), "{}: {c} vs {b}", case.name);
    }
    // The softmax on ONNX Runtime's kernel means the shipped graph: no tables.
    let shipped = load(SoftmaxKernel::OnnxRuntime, GraphOptimization::All);
    assert_eq!(shipped.lookup_chains(), 0);
}
