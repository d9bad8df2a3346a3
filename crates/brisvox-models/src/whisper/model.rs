//! Whisper on ONNX Runtime: the two graphs of `scripts/whisper-to-onnx.py`
//! (encoder, decoder with a key/value cache) and one transcription.
//!
//! A transcription (blocking, tens to hundreds of milliseconds: call it from a
//! recognition thread):
//!
//! 1. the audio (16 kHz, `-1.0..=1.0`) is zero-padded at the end to a window
//!    of [`WhisperSettings::min_window_ms`], or to the audio plus
//!    [`WhisperSettings::pad_ms`] when that is longer, at most 30 s (Whisper's
//!    own window; it was trained on 30 s windows, and windows much shorter
//!    than the audio plus a few seconds of silence make it repeat itself);
//! 2. [`LogMel`] computes the spectrogram of the window;
//! 3. the encoder turns it into every decoder layer's cross-attention keys and
//!    values;
//! 4. a draft (the tokens of an earlier transcript of the start of the same
//!    speech, say the one of a moment ago) is checked in one decoder step
//!    ([`confirmed_draft`](super::search::confirmed_draft)): the leading
//!    tokens the model picks itself with a probability of at least
//!    [`DRAFT_MIN_PROB`] are kept;
//! 5. [`beam_search`](super::search::beam_search) decodes from
//!    `<|startoftranscript|><|notimestamps|>` and the confirmed tokens.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use ort::session::Session;
use ort::value::{DynValue, Tensor, TensorRef};

use super::search::{DecoderStep, SearchRules, beam_search, confirmed_draft};
use super::tokenizer::{Tokenizer, TokenizerError};
use crate::mel::{HOP, LogMel, N_MELS, SAMPLE_RATE_HZ};
use crate::runtime::{self, RuntimeError};

/// The encoder graph's file in the model folder.
pub const ENCODER_FILE: &str = "encoder.onnx";
/// The decoder graph's file in the model folder.
pub const DECODER_FILE: &str = "decoder.onnx";
/// The vocabulary's file in the model folder.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The generation settings' file (suppressed tokens) in the model folder.
pub const CONFIG_FILE: &str = "config.json";
/// Every file a model folder must hold.
pub const MODEL_FILES: [&str; 4] = [ENCODER_FILE, DECODER_FILE, TOKENIZER_FILE, CONFIG_FILE];

/// Whisper's window: 30 s.
pub const MAX_WINDOW_SAMPLES: usize = 30 * SAMPLE_RATE_HZ as usize;
/// Longest decoder context (prompt and sampled tokens).
const MAX_CONTEXT: usize = 448;
/// The encoder halves the frames: windows are whole multiples of two hops.
const WINDOW_STEP: usize = 2 * HOP;
/// A draft token is kept when the model picks it with at least this probability.
pub const DRAFT_MIN_PROB: f64 = 0.6;

/// Why Whisper could not be loaded or could not transcribe.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum WhisperError {
    /// A file of the model folder is missing.
    #[error(
        "the Whisper model in {dir} is incomplete (missing {missing}): run scripts/fetch-models.sh --whisper"
    )]
    ModelMissing {
        /// The folder.
        dir: PathBuf,
        /// The missing files, comma-separated.
        missing: String,
    },
    /// A file could not be read or is not what it should be.
    #[error("{path}: {reason}")]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// ONNX Runtime failed (loading the library, a graph, or a run).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A graph gave output of an unexpected shape.
    #[error("the Whisper model gave unexpected output: {reason}")]
    BadOutput {
        /// What was wrong.
        reason: String,
    },
    /// The caller cancelled the transcription.
    #[error("the transcription was cancelled")]
    Cancelled,
    /// A setting is out of range.
    #[error("Whisper setting {setting}: {reason}")]
    BadSetting {
        /// The setting.
        setting: &'static str,
        /// Why.
        reason: &'static str,
    },
}

impl From<ort::Error> for WhisperError {
    fn from(e: ort::Error) -> Self {
        WhisperError::Runtime(RuntimeError::from(e))
    }
}

/// Where the model is and how to run it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WhisperSettings {
    /// The model folder ([`MODEL_FILES`]).
    pub dir: PathBuf,
    /// ONNX Runtime intra-op threads of the decoder (many small steps, where
    /// waking a second thread costs about what it saves).
    pub intra_threads: usize,
    /// ONNX Runtime intra-op threads of the encoder (one large run per
    /// recognition, most of its time at the end of a turn).
    pub encoder_threads: usize,
    /// Beam width (1 is greedy search).
    pub beam_size: usize,
    /// The shortest window the audio is padded to, in ms.
    pub min_window_ms: u32,
    /// Silence added after the audio when that makes a longer window, in ms.
    pub pad_ms: u32,
}

impl WhisperSettings {
    /// The defaults for the model in `dir`: one decoder thread,
    /// [`default_encoder_threads`] encoder threads, beam width 5, windows
    /// of at least 15 s and 2 s of padding (the fixtures' word error rate
    /// equals a full 30 s window's with these; shorter ones made Whisper
    /// repeat a sentence or lose a word, see docs/providers/local.md).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WhisperSettings {
            dir: dir.into(),
            intra_threads: 1,
            encoder_threads: default_encoder_threads(),
            beam_size: 5,
            min_window_ms: 15_000,
            pad_ms: 2_000,
        }
    }
}

/// The encoder's default intra-op threads: two when the machine has two
/// cores or more, else one. The encoder is most of a recognition's time and
/// the final that ends a turn waits for it; ONNX Runtime's threads claim its
/// work in blocks, so a second core busy elsewhere slows it to about one
/// thread's speed, not below.
pub fn default_encoder_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// A transcription: the text and its tokens (a later draft).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    /// The text, trimmed.
    pub text: String,
    /// The tokens, without special tokens.
    pub tokens: Vec<u32>,
}

/// Whisper loaded from a model folder. One transcription at a time per
/// instance (the sessions are behind a lock); load one per recognition thread
/// for parallel transcriptions.
pub struct Whisper {
    sessions: Mutex<Sessions>,
    tokenizer: Tokenizer,
    rules: SearchRules,
    settings: WhisperSettings,
}

struct Sessions {
    encoder: Session,
    decoder: Session,
    mel: LogMel,
}

impl std::fmt::Debug for Whisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Whisper")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The files of [`MODEL_FILES`] missing from `dir`, comma-separated (`None` if none).
pub fn missing_files(dir: &Path) -> Option<String> {
    let missing: Vec<&str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    (!missing.is_empty()).then(|| missing.join(", "))
}

impl Whisper {
    /// Loads ONNX Runtime (once per process), the two graphs and the
    /// vocabulary. Blocking (about a second): call it at startup.
    pub fn load(settings: WhisperSettings) -> Result<Self, WhisperError> {
        for (setting, threads) in [
            ("intra_threads", settings.intra_threads),
            ("encoder_threads", settings.encoder_threads),
        ] {
            if threads == 0 {
                return Err(WhisperError::BadSetting {
                    setting,
                    reason: "must be at least 1",
                });
            }
        }
        let dir = &settings.dir;
        if let Some(missing) = missing_files(dir) {
            return Err(WhisperError::ModelMissing {
                dir: dir.clone(),
                missing,
            });
        }
        let tokenizer = read(&dir.join(TOKENIZER_FILE), |text| {
            Tokenizer::from_json(text).map_err(|e: TokenizerError| e.to_string())
        })?;
        let rules = read(&dir.join(CONFIG_FILE), |text| {
            search_rules(text, &tokenizer)
        })?;
        let sessions = Sessions {
            encoder: session(&dir.join(ENCODER_FILE), settings.encoder_threads)?,
            decoder: session(&dir.join(DECODER_FILE), settings.intra_threads)?,
            mel: LogMel::new(),
        };
        Ok(Whisper {
            sessions: Mutex::new(sessions),
            tokenizer,
            rules,
            settings,
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &WhisperSettings {
        &self.settings
    }

    /// The vocabulary.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Transcribes `samples` (16 kHz mono, `-1.0..=1.0`; the last 30 s are
    /// used). `draft` (empty for none) holds the tokens of an earlier
    /// transcript of the start of the same speech: the ones the model confirms
    /// are not decoded again (a wrong draft costs one decoder step).
    pub fn transcribe(&self, samples: &[f32], draft: &[u32]) -> Result<Transcript, WhisperError> {
        self.transcribe_unless(samples, draft, &AtomicBool::new(false))
    }

    /// [`transcribe`](Self::transcribe), giving up with
    /// [`WhisperError::Cancelled`] once `cancel` is set (checked before the
    /// encoder and before every decoder step, so a cancel takes effect within
    /// one step, or the encoder when it is running).
    pub fn transcribe_unless(
        &self,
        samples: &[f32],
        draft: &[u32],
        cancel: &AtomicBool,
    ) -> Result<Transcript, WhisperError> {
        let cancelled = || cancel.load(Ordering::Relaxed);
        if cancelled() {
            return Err(WhisperError::Cancelled);
        }
        let samples = &samples[samples.len().saturating_sub(MAX_WINDOW_SAMPLES)..];
        let window = window_samples(samples.len(), &self.settings);
        let mut audio = samples.to_vec();
        audio.resize(window, 0.0);
        let mut guard = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let sessions = &mut *guard;
        let frames = window / HOP;
        let mut mel = vec![0.0; N_MELS * frames];
        sessions
            .mel
            .compute_into(&audio, &mut mel)
            .map_err(|e| WhisperError::BadOutput {
                reason: e.to_string(),
            })?;
        let (cross_k, cross_v) = encode(&mut sessions.encoder, &mel, frames)?;
        let special = self.tokenizer.special();
        let mut prompt = vec![special.sot, special.no_timestamps];
        let draft = &draft[..draft.len().min(MAX_CONTEXT / 2)];
        let mut step = Step::new(&mut sessions.decoder, &cross_k, &cross_v, &cancelled)?;
        let confirmed =
            confirmed_draft(&mut step, &prompt, draft, &self.rules, DRAFT_MIN_PROB, true)?;
        let prefix = &draft[..confirmed];
        prompt.extend_from_slice(prefix);
        // A fresh cache: the draft's rejected tokens are in the old one.
        let mut step = Step::new(step.decoder, &cross_k, &cross_v, &cancelled)?;
        let budget = max_new_tokens(samples.len()).min(MAX_CONTEXT - prompt.len());
        let sampled = beam_search(
            &mut step,
            &prompt,
            &self.rules,
            self.settings.beam_size,
            budget,
            prefix.is_empty(),
        )?;
        let mut tokens = prefix.to_vec();
        tokens.extend(sampled);
        Ok(Transcript {
            text: self.tokenizer.decode(&tokens),
            tokens,
        })
    }
}

/// The window for `samples` samples: at least the minimum, the audio plus the
/// padding when longer, whole multiples of two hops, at most 30 s.
pub fn window_samples(samples: usize, settings: &WhisperSettings) -> usize {
    let ms = |v: u32| v as usize * SAMPLE_RATE_HZ as usize / 1000;
    let wanted = (samples + ms(settings.pad_ms)).max(ms(settings.min_window_ms));
    wanted
        .div_ceil(WINDOW_STEP)
        .saturating_mul(WINDOW_STEP)
        .clamp(WINDOW_STEP, MAX_WINDOW_SAMPLES)
}

/// Sampled tokens allowed for `samples` of audio: 16 plus 10 per second
/// (speech is 3-4 tokens per second), which ends a runaway repetition early.
fn max_new_tokens(samples: usize) -> usize {
    16 + samples * 10 / SAMPLE_RATE_HZ as usize
}

fn read<T>(path: &Path, parse: impl FnOnce(&str) -> Result<T, String>) -> Result<T, WhisperError> {
    let bad = |reason: String| WhisperError::BadFile {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    parse(&text).map_err(bad)
}

/// The suppressed tokens of the model's CTranslate2 `config.json`.
fn search_rules(json: &str, tokenizer: &Tokenizer) -> Result<SearchRules, String> {
    let root: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let ids = |key: &str| -> Result<Vec<u32>, String> {
        root.get(key)
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| format!("no {key} list"))?
            .iter()
            .map(|v| {
                v.as_u64()
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| format!("{key} holds a value that is not a token id"))
            })
            .collect()
    };
    let special = tokenizer.special();
    Ok(SearchRules {
        eot: special.eot,
        timestamp_begin: special.timestamp_begin,
        suppress: ids("suppress_ids")?,
        suppress_at_begin: ids("suppress_ids_begin")?,
    })
}

fn session(path: &Path, threads: usize) -> Result<Session, WhisperError> {
    Ok(runtime::session_builder()?
        .with_intra_threads(threads)
        .map_err(ort::Error::from)?
        .with_inter_threads(1)
        .map_err(ort::Error::from)?
        .with_intra_op_spinning(false)
        .map_err(ort::Error::from)?
        .commit_from_file(path)?)
}

/// Runs the encoder: the cross-attention keys and values of every layer.
fn encode(
    encoder: &mut Session,
    mel: &[f32],
    frames: usize,
) -> Result<(DynValue, DynValue), WhisperError> {
    let input = TensorRef::from_array_view(([1usize, N_MELS, frames], mel))?;
    let mut outputs = encoder.run(ort::inputs!["mel" => input])?;
    let mut take = |name: &str| {
        outputs.remove(name).ok_or_else(|| WhisperError::BadOutput {
            reason: format!("the encoder has no output {name}"),
        })
    };
    Ok((take("cross_k")?, take("cross_v")?))
}

/// The decoder with its cache: a [`DecoderStep`].
struct Step<'s> {
    decoder: &'s mut Session,
    cancelled: &'s dyn Fn() -> bool,
    cross_k: &'s DynValue,
    cross_v: &'s DynValue,
    past_k: DynValue,
    past_v: DynValue,
    /// Tokens already in the cache.
    past: usize,
    logits: Vec<f32>,
}

impl<'s> Step<'s> {
    fn new(
        decoder: &'s mut Session,
        cross_k: &'s DynValue,
        cross_v: &'s DynValue,
        cancelled: &'s dyn Fn() -> bool,
    ) -> Result<Self, WhisperError> {
        // cross_k is [layers, 1, heads, 64, frames]: an empty cache of the same layers and heads.
        let shape = cross_k.shape().to_vec();
        let (layers, heads) = match shape.as_slice() {
            [l, 1, h, 64, _] => (*l, *h),
            other => {
                return Err(WhisperError::BadOutput {
                    reason: format!("cross_k has shape {other:?}"),
                });
            }
        };
        let empty = || -> Result<DynValue, WhisperError> {
            let dims = [layers, 1, heads, 0, 64].map(|d| usize::try_from(d).unwrap_or(0));
            Ok(Tensor::<f32>::from_array((dims, Vec::<f32>::new()))?.into_dyn())
        };
        Ok(Step {
            decoder,
            cancelled,
            cross_k,
            cross_v,
            past_k: empty()?,
            past_v: empty()?,
            past: 0,
            logits: Vec::new(),
        })
    }
}

impl DecoderStep for Step<'_> {
    type Error = WhisperError;

    fn step(&mut self, tokens: &[u32], n: usize, from: &[usize]) -> Result<&[f32], WhisperError> {
        if (self.cancelled)() {
            return Err(WhisperError::Cancelled);
        }
        let rows = from.len();
        let ids: Vec<i64> = tokens.iter().map(|&t| i64::from(t)).collect();
        let positions: Vec<i64> = (self.past..self.past + n).map(|p| p as i64).collect();
        let total = self.past + n;
        let mut mask = vec![0f32; n * total];
        for i in 0..n {
            mask[i * total + self.past + i + 1..(i + 1) * total].fill(f32::NEG_INFINITY);
        }
        let beam: Vec<i64> = from.iter().map(|&r| r as i64).collect();
        let mut outputs = self.decoder.run(ort::inputs![
            "tokens" => TensorRef::from_array_view(([rows, n], &ids[..]))?,
            "positions" => TensorRef::from_array_view(([n], &positions[..]))?,
            "mask" => TensorRef::from_array_view(([n, total], &mask[..]))?,
            "beam" => TensorRef::from_array_view(([rows], &beam[..]))?,
            "past_k" => &self.past_k,
            "past_v" => &self.past_v,
            "cross_k" => self.cross_k,
            "cross_v" => self.cross_v,
        ])?;
        let missing = |name: &str| WhisperError::BadOutput {
            reason: format!("the decoder has no output {name}"),
        };
        let new_k = outputs.remove("new_k").ok_or_else(|| missing("new_k"))?;
        let new_v = outputs.remove("new_v").ok_or_else(|| missing("new_v"))?;
        let logits = outputs.remove("logits").ok_or_else(|| missing("logits"))?;
        drop(outputs);
        let (shape, values) = logits.try_extract_tensor::<f32>()?;
        match **shape {
            [r, m, v] if r as usize == rows && m as usize == n && v > 0 => {}
            _ => {
                return Err(WhisperError::BadOutput {
                    reason: format!("logits have shape {shape:?} for {rows} rows of {n}"),
                });
            }
        }
        self.logits.clear();
        self.logits.extend_from_slice(values);
        self.past_k = new_k;
        self.past_v = new_v;
        self.past = total;
        Ok(&self.logits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_at_least_the_minimum_padded_rounded_and_capped() {
        let s = WhisperSettings::new("m");
        assert_eq!(window_samples(16_000, &s), 15 * 16_000);
        assert_eq!(window_samples(14 * 16_000, &s), 16 * 16_000);
        assert_eq!(window_samples(14 * 16_000 + 1, &s) % 320, 0);
        assert_eq!(window_samples(29 * 16_000, &s), MAX_WINDOW_SAMPLES);
        let tiny = WhisperSettings {
            min_window_ms: 0,
            pad_ms: 0,
            ..s
        };
        assert_eq!(window_samples(0, &tiny), 320);
    }

    #[test]
    fn the_encoder_gets_two_threads_at_most_and_never_more_than_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = WhisperSettings::new("m").encoder_threads;
        assert_eq!(threads, cores.min(2));
        assert_eq!(WhisperSettings::new("m").intra_threads, 1);
    }

    #[test]
    fn zero_threads_are_refused_before_the_files_are_read() {
        for (setting, s) in [
            (
                "intra_threads",
                WhisperSettings {
                    intra_threads: 0,
                    ..WhisperSettings::new("/nonexistent-brisvox")
                },
            ),
            (
                "encoder_threads",
                WhisperSettings {
                    encoder_threads: 0,
                    ..WhisperSettings::new("/nonexistent-brisvox")
                },
            ),
        ] {
            let err = Whisper::load(s).unwrap_err();
            assert!(
                matches!(err, WhisperError::BadSetting { setting: got, .. } if got == setting),
                "{err}"
            );
        }
    }

    #[test]
    fn a_missing_model_file_is_named() {
        let dir = std::env::temp_dir().join(format!("brisvox-whisper-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(ENCODER_FILE), b"x").unwrap();
        let missing = missing_files(&dir).unwrap();
        assert_eq!(missing, "decoder.onnx, tokenizer.json, config.json");
        let err = Whisper::load(WhisperSettings::new(&dir)).unwrap_err();
        assert!(
            err.to_string().contains("fetch-models.sh --whisper"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
