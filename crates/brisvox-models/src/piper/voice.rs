//! The Piper voice model on ONNX Runtime: one synthesis turns one sentence's
//! phonemes into PCM16 at the voice's rate.
//!
//! A synthesis is blocking CPU work (about half a second per sentence on the
//! build machine), so [`PiperVoice::synthesize`] runs it on the voice's own
//! [`InferencePool`] (not the VAD's: a long TTS run must never hold a VAD
//! worker) and returns a [`SynthesisJob`] future. Dropping the job cancels it:
//! a job that has not started is skipped, a running one is stopped through
//! ONNX Runtime's terminate flag.
//!
//! Model interface (Piper's VITS export): `input` int64 `[1, N]` phoneme ids,
//! `input_lengths` int64 `[1]`, `scales` f32 `[3]` (noise scale, length scale,
//! noise width, from the JSON), `sid` int64 `[1]` for multi-speaker voices;
//! output f32 audio in [-1, 1] (shape `[1, 1, 1, T]` or `[1, T]`), converted to
//! PCM16 by clipping and scaling by 32767 (no per-sentence gain, so sentences
//! keep the model's relative loudness).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use brisvox_audio::resample::StreamResampler;
use ort::session::{RunOptions, Session};
use ort::value::TensorRef;

use super::config::{VoiceConfig, VoiceConfigError};
use crate::pool::{InferencePool, JobHandle, PoolConfig, PoolError, Priority};
use crate::runtime::{self, RuntimeError};

/// File name of the default voice model inside the models folder.
pub const PIPER_VOICE_FILE: &str = "en_US-joe-medium.onnx";
/// File name of the default voice's configuration inside the models folder.
pub const PIPER_CONFIG_FILE: &str = "en_US-joe-medium.onnx.json";

/// Why a voice could not be loaded or could not speak.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PiperError {
    /// The model file or ONNX Runtime is missing or refused the model.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The configuration file could not be read.
    #[error("could not read the Piper voice configuration {path}: {reason}")]
    ConfigRead {
        /// The file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// The configuration file is not a usable Piper voice configuration.
    #[error("{path}: {source}")]
    BadConfig {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        source: VoiceConfigError,
    },
    /// The model's output is not what a Piper voice gives.
    #[error("the Piper model gave unexpected output: {reason}")]
    BadOutput {
        /// What was wrong.
        reason: String,
    },
    /// The audio could not be resampled to the asked rate.
    #[error("Piper audio could not be resampled: {reason}")]
    Resample {
        /// What the resampler said.
        reason: String,
    },
    /// The synthesis pool refused or dropped the job.
    #[error("Piper synthesis: {0}")]
    Pool(#[from] PoolError),
}

impl From<ort::Error> for PiperError {
    fn from(e: ort::Error) -> Self {
        PiperError::Runtime(RuntimeError::from(e))
    }
}

/// Where the voice is and how to run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiperSettings {
    /// The `.onnx` model; `None` finds [`PIPER_VOICE_FILE`] in the models folder.
    pub model_path: Option<PathBuf>,
    /// The `.onnx.json`; `None` is the model path with `.json` appended.
    pub config_path: Option<PathBuf>,
    /// Synthesis threads (each with its own session); at least 1.
    pub threads: usize,
    /// ONNX Runtime intra-op threads per session; at least 1.
    pub intra_threads: usize,
    /// Syntheses that may wait for a thread before new ones are refused.
    pub queue_capacity: usize,
}

impl Default for PiperSettings {
    /// The default voice from the models folder, one thread of one intra-op
    /// thread, 64 waiting syntheses.
    fn default() -> Self {
        PiperSettings {
            model_path: None,
            config_path: None,
            threads: 1,
            intra_threads: 1,
            queue_capacity: 64,
        }
    }
}

impl PiperSettings {
    /// The model and configuration paths these settings name (the model found
    /// in the models folder when not given).
    pub fn resolve_paths(&self) -> Result<(PathBuf, PathBuf), PiperError> {
        let model = match &self.model_path {
            Some(p) => p.clone(),
            None => runtime::find_model_file(PIPER_VOICE_FILE)?,
        };
        let config = match &self.config_path {
            Some(p) => p.clone(),
            None => json_next_to(&model),
        };
        Ok((model, config))
    }
}

/// `voice.onnx` -> `voice.onnx.json`, as Piper names them.
pub fn json_next_to(model: &Path) -> PathBuf {
    let mut s = model.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

/// Whether both files of the voice these settings name exist (no loading).
pub fn voice_files_present(settings: &PiperSettings) -> bool {
    settings
        .resolve_paths()
        .is_ok_and(|(m, c)| m.is_file() && c.is_file())
}

/// A loaded Piper voice. Load once per process and share it (`Arc`).
pub struct PiperVoice {
    lanes: Vec<Mutex<Session>>,
    config: VoiceConfig,
    model_path: PathBuf,
    pool: InferencePool,
}

impl std::fmt::Debug for PiperVoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PiperVoice")
            .field("model_path", &self.model_path)
            .field("sample_rate_hz", &self.config.sample_rate_hz)
            .finish_non_exhaustive()
    }
}

impl PiperVoice {
    /// Reads the configuration, loads ONNX Runtime (once per process) and
    /// builds one session per thread. Takes about a second: call it at startup.
    pub fn load(settings: PiperSettings) -> Result<Self, PiperError> {
        let (model_path, config_path) = settings.resolve_paths()?;
        let text = std::fs::read_to_string(&config_path).map_err(|e| PiperError::ConfigRead {
            path: config_path.clone(),
            reason: e.to_string(),
        })?;
        let config = VoiceConfig::from_json(&text).map_err(|source| PiperError::BadConfig {
            path: config_path.clone(),
            source,
        })?;
        if !model_path.is_file() {
            return Err(RuntimeError::ModelMissing {
                file: model_path.display().to_string(),
                searched: "the configured path".to_owned(),
            }
            .into());
        }
        let threads = settings.threads.max(1);
        let lanes = (0..threads)
            .map(|_| {
                let session = runtime::session_builder()?
                    .with_intra_threads(settings.intra_threads.max(1))
                    .map_err(ort::Error::from)?
                    .with_inter_threads(1)
                    .map_err(ort::Error::from)?
                    .commit_from_file(&model_path)?;
                Ok(Mutex::new(session))
            })
            .collect::<Result<Vec<_>, PiperError>>()?;
        let pool = InferencePool::new(PoolConfig {
            name: "piper".to_owned(),
            threads,
            high_capacity: 1,
            normal_capacity: settings.queue_capacity.max(1),
        });
        Ok(PiperVoice {
            lanes,
            config,
            model_path,
            pool,
        })
    }

    /// The voice's configuration.
    pub fn config(&self) -> &VoiceConfig {
        &self.config
    }

    /// Rate of the audio a synthesis gives, in Hz.
    pub fn sample_rate_hz(&self) -> u32 {
        self.config.sample_rate_hz
    }

    /// The model file in use.
    pub fn model_path(&self) -> &Path {
        &self.model_path
    }

    /// Speaks one sentence's phonemes on the voice's pool, resampled there to
    /// `out_rate_hz` (brisvox-audio's `StreamResampler`, flushed at the end).
    /// Returns at once; the job resolves to PCM16 at `out_rate_hz`. A full
    /// queue refuses with [`PiperError::Pool`], a zero rate with
    /// [`PiperError::Resample`].
    pub fn synthesize(
        self: &Arc<Self>,
        phonemes: &str,
        out_rate_hz: u32,
    ) -> Result<SynthesisJob, PiperError> {
        let ids = self.config.phoneme_ids(phonemes).ids;
        let in_rate_hz = self.config.sample_rate_hz;
        // The resampler is built in the job, on the pool thread (a sinc
        // filter to 8 kHz takes a while to construct).
        if out_rate_hz == 0 {
            return Err(PiperError::Resample {
                reason: "output rate 0 Hz".to_owned(),
            });
        }
        let run_options = Arc::new(RunOptions::new()?);
        let (voice, options) = (Arc::clone(self), Arc::clone(&run_options));
        let handle = self.pool.submit(Priority::Normal, None, move || {
            let audio = voice.run_ids(&ids, Some(&options))?;
            resample(&audio, in_rate_hz, out_rate_hz)
        })?;
        Ok(SynthesisJob {
            handle,
            run_options,
            done: false,
        })
    }

    /// Speaks one sentence's phonemes on the calling thread (blocks for the
    /// whole synthesis; never call it on an async worker).
    pub fn synthesize_blocking(&self, phonemes: &str) -> Result<Vec<i16>, PiperError> {
        self.run_ids(&self.config.phoneme_ids(phonemes).ids, None)
    }

    /// Runs the model on ids (from [`VoiceConfig::phoneme_ids`]), blocking.
    pub fn run_ids(
        &self,
        ids: &[i64],
        options: Option<&RunOptions>,
    ) -> Result<Vec<i16>, PiperError> {
        let mut session = self.lane();
        let c = &self.config;
        let lengths = [ids.len() as i64];
        let scales = [c.noise_scale, c.length_scale, c.noise_w];
        let sid = [0i64];
        let input = TensorRef::from_array_view(([1usize, ids.len()], ids))?;
        let lengths = TensorRef::from_array_view(([1usize], &lengths[..]))?;
        let scales = TensorRef::from_array_view(([3usize], &scales[..]))?;
        let outputs = if c.num_speakers > 1 {
            let sid = TensorRef::from_array_view(([1usize], &sid[..]))?;
            let inputs = ort::inputs!["input" => input, "input_lengths" => lengths, "scales" => scales, "sid" => sid];
            match options {
                Some(o) => session.run_with_options(inputs, o)?,
                None => session.run(inputs)?,
            }
        } else {
            let inputs =
                ort::inputs!["input" => input, "input_lengths" => lengths, "scales" => scales];
            match options {
                Some(o) => session.run_with_options(inputs, o)?,
                None => session.run(inputs)?,
            }
        };
        if outputs.len() == 0 {
            return Err(PiperError::BadOutput {
                reason: "no output".to_owned(),
            });
        }
        let (_, audio) = outputs[0].try_extract_tensor::<f32>()?;
        if audio.iter().any(|x| !x.is_finite()) {
            return Err(PiperError::BadOutput {
                reason: "audio with NaN or infinite values".to_owned(),
            });
        }
        Ok(audio.iter().map(|&x| to_pcm16(x)).collect())
    }

    /// A free session if there is one, else waits for the first.
    fn lane(&self) -> MutexGuard<'_, Session> {
        for lane in &self.lanes {
            if let Ok(guard) = lane.try_lock() {
                return guard;
            }
        }
        // A poisoned session holds no state between runs: still usable.
        self.lanes[0].lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `audio` at `in_rate_hz` to `out_rate_hz`, as one utterance (flushed).
pub fn resample(audio: &[i16], in_rate_hz: u32, out_rate_hz: u32) -> Result<Vec<i16>, PiperError> {
    if in_rate_hz == out_rate_hz {
        return Ok(audio.to_vec());
    }
    let mut resampler =
        StreamResampler::new(in_rate_hz, out_rate_hz).map_err(|e| PiperError::Resample {
            reason: e.to_string(),
        })?;
    let mut out =
        Vec::with_capacity(resampler.max_output_len(audio.len()) + resampler.max_flush_len());
    resampler.process_into(audio, &mut out);
    resampler.flush(&mut out);
    Ok(out)
}

/// Model audio in [-1, 1] to PCM16 (clipped).
pub fn to_pcm16(x: f32) -> i16 {
    (x.clamp(-1.0, 1.0) * 32767.0).round() as i16
}

/// A synthesis on the voice's pool: a future of the sentence's PCM16.
///
/// Dropping it before it resolves cancels it: skipped if not started, stopped
/// through ONNX Runtime's terminate flag if running.
pub struct SynthesisJob {
    handle: JobHandle<Result<Vec<i16>, PiperError>>,
    run_options: Arc<RunOptions>,
    done: bool,
}

impl std::fmt::Debug for SynthesisJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SynthesisJob")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Future for SynthesisJob {
    type Output = Result<Vec<i16>, PiperError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let out = Pin::new(&mut self.handle).poll(cx);
        if out.is_ready() {
            self.done = true;
        }
        out.map(|r| r.map_err(PiperError::from).and_then(|r| r))
    }
}

impl Drop for SynthesisJob {
    fn drop(&mut self) {
        if !self.done {
            // Stops a running synthesis at its next operator; harmless otherwise.
            let _ = self.run_options.terminate();
        }
    }
}
