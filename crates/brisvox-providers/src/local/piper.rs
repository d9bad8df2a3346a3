//! A local neural voice (Piper): phonemes from the `espeak-ng` program, speech
//! from a [`PhonemeVoice`] (the Piper model on ONNX Runtime, wired in by the
//! server from `brisvox-models`, which this crate does not depend on).
//!
//! Each text chunk of a context is one job: its clauses are phonemised by
//! `espeak-ng -q --ipa` processes ([`super::phonemes`]), then each of its
//! sentences (usually one per segmenter chunk) is synthesised by the voice,
//! resampled to the session's [`TtsConfig::sample_rate_hz`] on the voice's own
//! threads, and sent as [`PiperConfig::chunk_ms`] audio events as soon as that
//! sentence is ready. One job runs at a time per session, so a context's
//! chunks are spoken in order; `Done` follows its flush. The first sentence
//! of a context (the start of an answer) loses the quiet Piper puts before
//! it (about 65 ms with `en_US-joe-medium`), all but the last
//! [`LEAD_IN_KEEP_MS`]: before an answer it is only a wait; between the
//! sentences of an answer it is the pause, and it stays.
//!
//! A cancel drops the retired contexts' waiting text and the running job:
//! dropping it kills the espeak-ng processes and cancels the synthesis (the
//! voice stops a running model at once), and no event of a retired context is
//! ever read (the session filters them).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;

use super::chunk_session::{ChunkSpeaker, Job, send_audio, spawn_session};
use super::phonemes;
use super::tts::{ESPEAK_PACKAGE, LocalTtsError};
use crate::{BoxFuture, ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession};

/// A sample at least this loud (about -60 dBFS) is where an answer's sound starts.
pub const LEAD_IN_THRESHOLD: u16 = 33;
/// The quiet kept before an answer's first sound, in ms.
pub const LEAD_IN_KEEP_MS: u32 = 10;

/// `samples` (at `rate_hz`) from where their sound starts, with
/// [`LEAD_IN_KEEP_MS`] of the quiet before it; whole when all are quiet.
pub fn without_lead_in(samples: &[i16], rate_hz: u32) -> &[i16] {
    let keep = (rate_hz * LEAD_IN_KEEP_MS / 1000) as usize;
    &samples[brisvox_audio::pcm::leading_quiet_len(samples, LEAD_IN_THRESHOLD, keep)..]
}

/// A voice that speaks phonemes (espeak-ng IPA with Piper's punctuation).
pub trait PhonemeVoice: Send + Sync + fmt::Debug {
    /// A short name for logs (`piper:en_US-joe-medium`).
    fn name(&self) -> &str;

    /// The espeak-ng voice the phonemes must come from (`en-us`).
    fn espeak_voice(&self) -> &str;

    /// Speaks one sentence's phonemes: mono PCM16 at `rate_hz`. The work runs
    /// off the async workers.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the synthesis.
    fn speak(
        &self,
        phonemes: &str,
        rate_hz: u32,
    ) -> BoxFuture<'static, Result<Vec<i16>, ProviderError>>;
}

/// How to run the Piper TTS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiperConfig {
    /// The espeak-ng program (for phonemes only).
    pub espeak_program: PathBuf,
    /// Audio per event, in milliseconds.
    pub chunk_ms: u32,
}

impl Default for PiperConfig {
    /// `espeak-ng` on `PATH`, 40 ms events.
    fn default() -> Self {
        PiperConfig {
            espeak_program: PathBuf::from("espeak-ng"),
            chunk_ms: 40,
        }
    }
}

/// What the provider has done since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PiperStats {
    /// Text chunks whose job started.
    pub chunks_started: u64,
    /// Sentences synthesised to the end.
    pub sentences_spoken: u64,
    /// Jobs dropped by a cancel while running.
    pub jobs_cancelled: u64,
}

#[derive(Debug, Default)]
struct Counters {
    started: AtomicU64,
    spoken: AtomicU64,
    cancelled: AtomicU64,
}

/// The Piper TTS provider. Cheap to clone; clones share the voice and counters.
#[derive(Debug, Clone)]
pub struct PiperTts {
    voice: Arc<dyn PhonemeVoice>,
    config: Arc<PiperConfig>,
    counters: Arc<Counters>,
}

impl PiperTts {
    /// A provider speaking with `voice`.
    pub fn new(voice: Arc<dyn PhonemeVoice>, config: PiperConfig) -> Self {
        PiperTts {
            voice,
            config: Arc::new(config),
            counters: Arc::default(),
        }
    }

    /// The voice's name.
    pub fn voice_name(&self) -> &str {
        self.voice.name()
    }

    /// Checks that the espeak-ng program runs (`--version`). Blocking: for
    /// startup, not on an async worker.
    pub fn probe_blocking(&self) -> Result<(), LocalTtsError> {
        let program = self.config.espeak_program.display().to_string();
        match std::process::Command::new(&self.config.espeak_program)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
        {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(LocalTtsError::ProgramFailed {
                program,
                reason: format!("`--version` exited with {s}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(LocalTtsError::ProgramMissing {
                    program,
                    package: ESPEAK_PACKAGE,
                })
            }
            Err(e) => Err(LocalTtsError::ProgramFailed {
                program,
                reason: e.to_string(),
            }),
        }
    }

    /// The counters.
    pub fn stats(&self) -> PiperStats {
        PiperStats {
            chunks_started: self.counters.started.load(Ordering::Relaxed),
            sentences_spoken: self.counters.spoken.load(Ordering::Relaxed),
            jobs_cancelled: self.counters.cancelled.load(Ordering::Relaxed),
        }
    }

    /// Piper's sentences (phonemes) for `text`, from espeak-ng.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills the processes.
    pub async fn phonemize(&self, text: &str) -> Result<Vec<String>, LocalTtsError> {
        phonemes::phonemize(&self.config.espeak_program, self.voice.espeak_voice(), text).await
    }
}

impl TtsProvider for PiperTts {
    fn connect(&self, config: TtsConfig) -> BoxFuture<'_, Result<TtsSession, ProviderError>> {
        Box::pin(async move {
            if config.sample_rate_hz == 0 {
                return Err(ProviderError::Connect {
                    reason: "the local Piper voice needs an output rate above 0 Hz".into(),
                });
            }
            Ok(spawn_session(PiperSpeaker {
                provider: self.clone(),
                rate_hz: config.sample_rate_hz,
            }))
        })
    }
}

/// Speaks a session's chunks with the voice, at the session's rate.
struct PiperSpeaker {
    provider: PiperTts,
    rate_hz: u32,
}

impl ChunkSpeaker for PiperSpeaker {
    /// Phonemises the chunk, then synthesises and sends it sentence by
    /// sentence (the first audio leaves as soon as the first sentence is done);
    /// the context's first sentence without its lead-in.
    fn job(
        &self,
        ctx: ContextId,
        text: String,
        first: bool,
        events: mpsc::Sender<TtsEvent>,
    ) -> Job {
        let provider = self.provider.clone();
        let rate = self.rate_hz;
        provider.counters.started.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let sentences = provider.phonemize(&text).await?;
            for (i, phonemes) in sentences.iter().enumerate() {
                let samples = provider.voice.speak(phonemes, rate).await?;
                provider.counters.spoken.fetch_add(1, Ordering::Relaxed);
                let samples = if first && i == 0 {
                    without_lead_in(&samples, rate)
                } else {
                    &samples
                };
                if !send_audio(&events, ctx, samples, rate, provider.config.chunk_ms).await {
                    return Ok(()); // the engine is gone
                }
            }
            Ok(())
        })
    }

    fn dropped(&self) {
        self.provider
            .counters
            .cancelled
            .fetch_add(1, Ordering::Relaxed);
    }
}
