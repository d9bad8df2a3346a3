//! Shared helpers for the Smart Turn golden tests: the manifest, the fixtures, the
//! golden feature files, the kernel sets and the skip-or-fail rule for missing
//! models.
//!
//! **Kernel sets.** ONNX Runtime picks its CPU kernels by instruction set, and the
//! fused int8 kernels of the optimised graph give different probabilities on
//! different CPUs (up to 0.38 apart on the same features, one verdict flipping,
//! between the goldens' machine and an AMD EPYC without AVX-512), while Python
//! onnxruntime and the Rust session agree to the bit on any one machine. So the
//! goldens hold one set of probabilities per kernel family seen:
//! `optimisation-levels.tsv` (the goldens' machine; its ALL column is the
//! manifest's probability) and `kernel-sets/*.tsv`
//! (`scripts/goldens/smart_turn_kernel_set.py`). [`this_cpu_kernel_set`] finds
//! the set this CPU's kernels give, and [`cases_for_this_cpu`] the cases with its
//! probabilities and verdicts.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use brisvox_models::runtime;
use brisvox_models::smart_turn::FEATURES_LEN;

/// One golden case from `tests/golden/smart_turn/manifest.tsv`.
#[derive(Debug, Clone)]
pub struct GoldenCase {
    pub name: String,
    pub fixture: String,
    pub start_sample: usize,
    pub end_sample: usize,
    /// The 20 ms frame on which the VAD confirms speech (None: no start marked).
    pub confirm_frame: Option<usize>,
    /// Frames pushed when the previous turn ended (None: first turn).
    pub previous_turn_end_frames: Option<usize>,
    pub input_fnv1a64: String,
    pub probability: f32,
    pub complete: bool,
    pub features_file: String,
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/smart_turn")
}

/// One kernel family's probabilities: per case, at DISABLE, BASIC, EXTENDED, ALL.
#[derive(Debug, Clone)]
pub struct KernelSet {
    pub label: String,
    pub rows: Vec<(String, [f32; 4])>,
}

impl KernelSet {
    /// The case's probabilities at the four levels.
    pub fn levels(&self, case: &str) -> [f32; 4] {
        self.rows
            .iter()
            .find(|(name, _)| name == case)
            .unwrap_or_else(|| panic!("kernel set {}: no row for {case}", self.label))
            .1
    }
}

fn read_kernel_set(path: &Path, label: &str) -> KernelSet {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 5, "{}: {line}", path.display());
            let p = |i: usize| -> f32 { f[i].parse().expect("probability") };
            (f[0].to_owned(), [p(1), p(2), p(3), p(4)])
        })
        .collect();
    KernelSet {
        label: label.to_owned(),
        rows,
    }
}

/// Every recorded kernel set, the goldens' machine's first (`reference`).
pub fn kernel_sets() -> Vec<KernelSet> {
    let mut sets = vec![read_kernel_set(
        &golden_dir().join("optimisation-levels.tsv"),
        "reference",
    )];
    let dir = golden_dir().join("kernel-sets");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.sort();
    for path in paths
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
    {
        let label = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("?")
            .to_owned();
        sets.push(read_kernel_set(&path, &label));
    }
    for set in &sets {
        for case in cases() {
            set.levels(&case.name);
        }
    }
    sets
}

/// The recorded kernel set whose ALL probabilities this CPU's kernels give
/// (within `tolerance` on every case, from the golden features), or None with
/// the reason printed: the caller then checks what does not depend on the
/// kernels and says so.
pub fn this_cpu_kernel_set(all_level: impl Fn(&[f32]) -> f32, tolerance: f32) -> Option<KernelSet> {
    let cases = cases();
    let got: Vec<f32> = cases
        .iter()
        .map(|c| all_level(&golden_features(c)))
        .collect();
    for set in kernel_sets() {
        let worst = cases
            .iter()
            .zip(&got)
            .map(|(c, p)| (p - set.levels(&c.name)[3]).abs())
            .fold(0.0f32, f32::max);
        if worst <= tolerance {
            println!(
                "kernel set of this CPU: {} (worst |diff| {worst:.2e})",
                set.label
            );
            return Some(set);
        }
        println!(
            "kernel set {}: not this CPU's (worst |diff| {worst:.2e})",
            set.label
        );
    }
    eprintln!(
        "no recorded Smart Turn kernel set matches this CPU's ONNX Runtime kernels; \
         record one with scripts/goldens/smart_turn_kernel_set.py (probabilities at ALL: {got:?})"
    );
    None
}

/// The cases with the probabilities and verdicts of `set` (at ALL).
pub fn cases_for(set: &KernelSet) -> Vec<GoldenCase> {
    cases()
        .into_iter()
        .map(|mut case| {
            case.probability = set.levels(&case.name)[3];
            case.complete = case.probability > 0.5;
            case
        })
        .collect()
}

/// The manifest's cases, probabilities and verdicts as recorded on the
/// goldens' machine (the `reference` kernel set).
pub fn cases() -> Vec<GoldenCase> {
    let text = std::fs::read_to_string(golden_dir().join("manifest.tsv")).expect("manifest.tsv");
    let cases: Vec<GoldenCase> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 10, "manifest line: {line}");
            let frame = |s: &str| -> Option<usize> {
                let v: i64 = s.parse().expect("frame index");
                usize::try_from(v).ok()
            };
            GoldenCase {
                name: f[0].to_owned(),
                fixture: f[1].to_owned(),
                start_sample: f[2].parse().expect("start"),
                end_sample: f[3].parse().expect("end"),
                confirm_frame: frame(f[4]),
                previous_turn_end_frames: frame(f[5]),
                input_fnv1a64: f[6].to_owned(),
                probability: f[7].parse().expect("probability"),
                complete: f[8] == "1",
                features_file: f[9].to_owned(),
            }
        })
        .collect();
    assert!(
        cases.len() >= 12,
        "at least 12 golden cases, found {}",
        cases.len()
    );
    cases
}

/// The 16 kHz int16 samples of a fixture WAV (mono PCM16 only).
pub fn read_fixture(name: &str) -> Vec<i16> {
    let path = repo_root().join("fixtures").join(format!("{name}.wav"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[0..4], b"RIFF", "{}", path.display());
    assert_eq!(&bytes[8..12], b"WAVE", "{}", path.display());
    let mut pos = 12;
    let mut format_ok = false;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let len = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().unwrap()) as usize;
        let body = &bytes[pos + 8..(pos + 8 + len).min(bytes.len())];
        if id == b"fmt " {
            let format = u16::from_le_bytes([body[0], body[1]]);
            let channels = u16::from_le_bytes([body[2], body[3]]);
            let rate = u32::from_le_bytes(body[4..8].try_into().unwrap());
            let bits = u16::from_le_bytes([body[14], body[15]]);
            assert_eq!(
                (format, channels, rate, bits),
                (1, 1, 16_000, 16),
                "{}",
                path.display()
            );
            format_ok = true;
        } else if id == b"data" {
            assert!(format_ok, "fmt chunk before data in {}", path.display());
            return body
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect();
        }
        pos += 8 + len + (len & 1);
    }
    panic!("no data chunk in {}", path.display());
}

/// FNV-1a 64 of the little-endian bytes, as the golden script writes it.
pub fn fnv1a64(samples: &[i16]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for s in samples {
        for b in s.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The case's input span, checked against the digest the goldens were made from.
pub fn case_input(case: &GoldenCase) -> Vec<i16> {
    let pcm = read_fixture(&case.fixture);
    assert!(
        case.end_sample <= pcm.len(),
        "{}: span beyond the fixture",
        case.name
    );
    let span = pcm[case.start_sample..case.end_sample].to_vec();
    assert_eq!(
        fnv1a64(&span),
        case.input_fnv1a64,
        "{}: fixtures/{}.wav changed since the goldens were made; \
         run scripts/goldens/make-smart-turn-goldens.sh",
        case.name,
        case.fixture
    );
    span
}

pub fn golden_features(case: &GoldenCase) -> Vec<f32> {
    let path = golden_dir().join(&case.features_file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(bytes.len(), FEATURES_LEN * 4, "{}", path.display());
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// True when the model can be loaded. When it cannot: prints why and returns false
/// (the test then skips) unless `runtime::models_required()`, when it panics.
pub fn models_available(test: &str) -> bool {
    let missing = runtime::ort_library_path()
        .and_then(|_| runtime::find_model_file(runtime::SMART_TURN_FILE))
        .err();
    match missing {
        None => true,
        Some(e) if !runtime::models_required() => {
            eprintln!("{test}: skipped (models not fetched and CI unset): {e}");
            false
        }
        Some(e) => panic!("{test}: models are required (CI is set): {e}"),
    }
}

/// Runs a future to completion on this thread (the tests need no async runtime:
/// the executor's results arrive from its own threads).
pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}
