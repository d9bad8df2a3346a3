//! Shared helpers for the Silero VAD tests: the goldens, their fixture audio and the
//! skip-or-fail rule for missing models.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use brisvox_models::runtime;
use brisvox_models::vad::detector::{VadDetector, VadEvent, VadParams};
use brisvox_models::vad::silero::{
    SileroBatch, SileroKernel, SileroModel, SileroOptions, SileroRate, SileroState,
};

/// One golden file of `tests/golden/silero/`.
#[derive(Debug, Clone)]
pub struct Golden {
    pub fixture: String,
    pub rate: SileroRate,
    /// The fixture's audio as f32 (int16 / 32768).
    pub audio: Vec<f32>,
    /// Python onnxruntime's probability for every whole window.
    pub probabilities: Vec<f32>,
}

impl Golden {
    pub fn window(&self, i: usize) -> &[f32] {
        let n = self.rate.window_samples();
        &self.audio[i * n..(i + 1) * n]
    }
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn goldens() -> Vec<Golden> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/silero");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/golden/silero exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no goldens in {}", dir.display());
    files.iter().map(|p| load(p)).collect()
}

fn load(path: &Path) -> Golden {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("golden readable"))
            .expect("json");
    let rate_hz = doc["sample_rate_hz"].as_u64().expect("rate") as u32;
    let rate = SileroRate::from_hz(rate_hz).expect("8 or 16 kHz");
    assert_eq!(doc["window"].as_u64(), Some(rate.window_samples() as u64));
    assert_eq!(doc["context"].as_u64(), Some(rate.context_samples() as u64));
    let source = repo_root().join(doc["source"].as_str().expect("source"));
    let mut reader =
        hound::WavReader::open(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    assert_eq!(reader.spec().sample_rate, rate_hz);
    assert_eq!(reader.spec().channels, 1);
    let pcm: Vec<i16> = reader
        .samples::<i16>()
        .map(|s| s.expect("sample"))
        .collect();
    let hash = fnv1a64(pcm.iter().flat_map(|s| s.to_le_bytes()));
    assert_eq!(
        (pcm.len() as u64, format!("{hash:016x}")),
        (
            doc["samples"].as_u64().expect("samples"),
            doc["pcm_fnv1a64"].as_str().expect("hash").to_owned()
        ),
        "{} changed since its golden was made: run scripts/goldens/make-silero-goldens.sh",
        source.display()
    );
    let audio: Vec<f32> = pcm.iter().map(|&s| f32::from(s) / 32768.0).collect();
    let probabilities: Vec<f32> = doc["probabilities"]
        .as_array()
        .expect("probabilities")
        .iter()
        .map(|v| v.as_f64().expect("number") as f32)
        .collect();
    assert_eq!(probabilities.len(), audio.len() / rate.window_samples());
    Golden {
        fixture: doc["fixture"].as_str().expect("fixture").to_owned(),
        rate,
        audio,
        probabilities,
    }
}

fn fnv1a64(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The shared model, or `None` (test skipped, reason printed) when the models are
/// missing and CI is unset. With CI set a missing model fails the test.
pub fn model_or_skip() -> Option<Arc<SileroModel>> {
    static MODEL: OnceLock<Result<Arc<SileroModel>, String>> = OnceLock::new();
    loaded_or_skip(MODEL.get_or_init(|| {
        SileroModel::load_with(SileroOptions {
            sessions: 2,
            ..SileroOptions::default()
        })
        .map(Arc::new)
        .map_err(|e| e.to_string())
    }))
}

/// As [`model_or_skip`], on ONNX Runtime (`SileroKernel::OnnxRuntime`) instead of
/// the default kernel.
pub fn onnx_model_or_skip() -> Option<Arc<SileroModel>> {
    static MODEL: OnceLock<Result<Arc<SileroModel>, String>> = OnceLock::new();
    loaded_or_skip(MODEL.get_or_init(|| {
        SileroModel::load_with(onnx_options())
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }))
}

/// The default options with ONNX Runtime computing the windows.
pub fn onnx_options() -> SileroOptions {
    SileroOptions {
        sessions: 2,
        kernel: SileroKernel::OnnxRuntime,
        ..SileroOptions::default()
    }
}

fn loaded_or_skip(loaded: &Result<Arc<SileroModel>, String>) -> Option<Arc<SileroModel>> {
    match loaded {
        Ok(m) => Some(Arc::clone(m)),
        Err(e) if !runtime::models_required() => {
            eprintln!("skipped (Silero model or ONNX Runtime missing, CI unset): {e}");
            None
        }
        Err(e) => panic!("CI is set and the Silero model does not load: {e}"),
    }
}

/// Largest |a - b| over two equal-length series.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

pub const TOLERANCE: f32 = 1e-6;

/// Every window of `g` through `model` one at a time from a fresh state (each a
/// run of one row); the probabilities.
pub fn one_window_at_a_time(model: &SileroModel, g: &Golden) -> Vec<f32> {
    let mut state = SileroState::new(g.rate);
    let got: Vec<f32> = (0..g.probabilities.len())
        .map(|i| model.process(&mut state, g.window(i)).expect("window runs"))
        .collect();
    assert_eq!(state.windows(), g.probabilities.len() as u64);
    got
}

/// Every window of every golden of `group` (one rate) through `model` in explicit
/// batches shared by the streams: stream `s` runs its window `i` at tick
/// `starts[s] + i`, so streams join and leave and the batch size changes over time
/// (a tick with one live stream is a run of one row). The probabilities per stream.
pub fn run_in_shared_batches(
    model: &SileroModel,
    group: &[&Golden],
    starts: &[usize],
) -> Vec<Vec<f32>> {
    assert_eq!(group.len(), starts.len());
    let rate = group[0].rate;
    let mut states: Vec<SileroState> = group.iter().map(|_| SileroState::new(rate)).collect();
    let mut got: Vec<Vec<f32>> = group.iter().map(|_| Vec::new()).collect();
    let mut batch = SileroBatch::new(rate, group.len());
    let ticks = (0..group.len())
        .map(|s| starts[s] + group[s].probabilities.len())
        .max()
        .unwrap_or(0);
    for tick in 0..ticks {
        let live: Vec<usize> = (0..group.len())
            .filter(|&s| tick >= starts[s] && tick - starts[s] < group[s].probabilities.len())
            .collect();
        batch.clear();
        for &s in &live {
            let window = group[s].window(tick - starts[s]);
            batch.push(&states[s], window).expect("row fits");
        }
        model.run_batch(&mut batch).expect("batch runs");
        for (row, &s) in live.iter().enumerate() {
            got[s].push(batch.probability(row));
            batch.write_back(row, &mut states[s]);
        }
    }
    got
}

/// Occupies `pool`'s only worker with a Normal job until the returned sender
/// is used (or dropped); returns once the job runs, with its handle.
pub fn hold_the_worker(
    pool: &brisvox_models::pool::InferencePool,
) -> (
    std::sync::mpsc::Sender<()>,
    brisvox_models::pool::JobHandle<()>,
) {
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let blocker = pool
        .submit(brisvox_models::pool::Priority::Normal, None, move || {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv();
        })
        .unwrap();
    started_rx
        .recv_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    (release_tx, blocker)
}

/// The stop rule's decisions on `probabilities` (one per window of `g`): each
/// event with the sample count at the end of its window.
pub fn decisions(g: &Golden, probabilities: &[f32]) -> Vec<(u64, VadEvent)> {
    let mut detector = VadDetector::new(VadParams::default(), g.rate);
    let n = g.rate.window_samples() as u64;
    probabilities
        .iter()
        .enumerate()
        .filter_map(|(i, &p)| {
            let end = (i as u64 + 1) * n;
            detector.handle_window(end, p).map(|e| (end, e))
        })
        .collect()
}

/// The first 16 kHz golden.
pub fn golden_16k() -> Golden {
    goldens()
        .into_iter()
        .find(|g| g.rate == SileroRate::Hz16000)
        .expect("a 16 kHz golden")
}

/// The instant a frozen service clock always reads.
pub const FROZEN: std::time::Duration = std::time::Duration::from_secs(1);

/// A 16 kHz VAD service on one pool thread named `name`, with `linger` and
/// `max_batch`, whose clock is frozen at [`FROZEN`] (which streams count as
/// active and how long a job may wait do not depend on the machine's speed).
pub fn frozen_service(
    model: Arc<SileroModel>,
    name: &'static str,
    linger: brisvox_models::vad::linger::Linger,
    max_batch: usize,
) -> brisvox_models::vad::service::VadService {
    use brisvox_models::pool::{InferencePool, PoolConfig};
    use brisvox_models::vad::service::{VadService, VadServiceConfig};
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        ..PoolConfig::named(name)
    });
    let config = VadServiceConfig {
        linger,
        max_batch,
        ..VadServiceConfig::new(SileroRate::Hz16000)
    };
    VadService::with_clock(model, pool, config, || FROZEN)
}
