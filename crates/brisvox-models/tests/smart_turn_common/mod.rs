//! Shared helpers for the Smart Turn golden tests: the manifest, the fixtures, the
//! golden feature files and the skip-or-fail rule for missing models.

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
