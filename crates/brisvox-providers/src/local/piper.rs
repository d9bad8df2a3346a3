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
//! chunks are spoken in order; `Done` follows its flush.
//!
//! A cancel drops the retired contexts' waiting text and the running job:
//! dropping it kills the espeak-ng processes and cancels the synthesis (the
//! voice stops a running model at once), and no event of a retired context is
//! ever read (the session filters them).

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::phonemes;
use super::tts::{ESPEAK_PACKAGE, LocalTtsError};
use crate::tts::{TTS_INPUT_CAPACITY, TtsBackend, TtsInput};
use crate::{BoxFuture, ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession};

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
            let (session, backend) = TtsSession::channel();
            let actor = SessionActor {
                backend,
                provider: self.clone(),
                rate_hz: config.sample_rate_hz,
                pending: VecDeque::with_capacity(TTS_INPUT_CAPACITY),
                failed: None,
            };
            tokio::spawn(actor.run());
            Ok(session)
        })
    }
}

/// One queued piece of a context's work.
#[derive(Debug)]
enum Work {
    Speak(ContextId, String),
    Done(ContextId),
}

impl Work {
    fn ctx(&self) -> ContextId {
        match self {
            Work::Speak(ctx, _) | Work::Done(ctx) => *ctx,
        }
    }
}

/// A job: one chunk phonemised, synthesised and sent.
type Job = Pin<Box<dyn Future<Output = Result<(), ProviderError>> + Send>>;

/// Runs the current job, if any (never ends without one).
///
/// # Cancel safety
///
/// Cancel safe: the job stays in `job` and resumes on the next call.
async fn poll_job(job: &mut Option<(ContextId, Job)>) -> Result<(), ProviderError> {
    match job {
        Some((_, j)) => j.as_mut().await,
        None => std::future::pending().await,
    }
}

/// The task behind one session.
struct SessionActor {
    backend: TtsBackend,
    provider: PiperTts,
    rate_hz: u32,
    /// Work not started yet, in order; bounded by [`TTS_INPUT_CAPACITY`].
    pending: VecDeque<Work>,
    /// The newest context that failed: its remaining work is skipped.
    failed: Option<ContextId>,
}

impl SessionActor {
    async fn run(mut self) {
        let mut job: Option<(ContextId, Job)> = None;
        let mut input_open = true;
        loop {
            if job.is_none() {
                job = self.next_job().await;
            }
            if job.is_none() && !input_open {
                break;
            }
            let room = self.pending.len() < TTS_INPUT_CAPACITY;
            tokio::select! {
                biased;
                () = self.backend.cancels.cancelled() => self.on_cancel(&mut job),
                input = self.backend.input.recv(), if input_open && room => match input {
                    Some(TtsInput::Close) => {
                        self.pending.clear();
                        self.drop_job(&mut job);
                        input_open = false;
                    }
                    None => input_open = false,
                    Some(other) => self.on_input(other),
                },
                result = poll_job(&mut job), if job.is_some() => {
                    if let (Some((ctx, _)), Err(error)) = (job.take(), result) {
                        self.failed = Some(ctx);
                        let event = TtsEvent::Error { ctx: Some(ctx), error };
                        let _ = self.backend.events.send(event).await;
                    }
                }
            }
        }
        let _ = self.backend.events.send(TtsEvent::Closed).await;
    }

    fn on_input(&mut self, input: TtsInput) {
        match input {
            TtsInput::Text { ctx, text } if !text.trim().is_empty() => {
                self.pending.push_back(Work::Speak(ctx, text));
            }
            TtsInput::Flush(ctx) => self.pending.push_back(Work::Done(ctx)),
            _ => {}
        }
    }

    fn drop_job(&self, job: &mut Option<(ContextId, Job)>) {
        if job.take().is_some() {
            self.provider
                .counters
                .cancelled
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Drops the retired contexts' waiting work and the running job if its
    /// context is retired.
    fn on_cancel(&mut self, job: &mut Option<(ContextId, Job)>) {
        let cancels = &self.backend.cancels;
        self.pending.retain(|w| !cancels.is_cancelled(w.ctx()));
        if job
            .as_ref()
            .is_some_and(|(ctx, _)| cancels.is_cancelled(*ctx))
        {
            self.drop_job(job);
        }
    }

    /// The next job, skipping retired and failed contexts; sends `Done`s.
    async fn next_job(&mut self) -> Option<(ContextId, Job)> {
        while let Some(work) = self.pending.pop_front() {
            let ctx = work.ctx();
            if self.backend.cancels.is_cancelled(ctx) || self.failed == Some(ctx) {
                continue;
            }
            match work {
                Work::Done(ctx) => {
                    let done = TtsEvent::Done { ctx };
                    if self.backend.events.send(done).await.is_err() {
                        return None;
                    }
                }
                Work::Speak(ctx, text) => return Some((ctx, self.job(ctx, text))),
            }
        }
        None
    }

    fn job(&self, ctx: ContextId, text: String) -> Job {
        let provider = self.provider.clone();
        let events = self.backend.events.clone();
        let rate = self.rate_hz;
        provider.counters.started.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let sentences = provider.phonemize(&text).await?;
            let chunk = (rate as usize * provider.config.chunk_ms.max(1) as usize / 1000).max(1);
            for phonemes in sentences {
                let samples = provider.voice.speak(&phonemes, rate).await?;
                provider.counters.spoken.fetch_add(1, Ordering::Relaxed);
                for piece in samples.chunks(chunk) {
                    let event = TtsEvent::Audio {
                        ctx,
                        samples: piece.to_vec(),
                        sample_rate_hz: rate,
                    };
                    if events.send(event).await.is_err() {
                        return Ok(()); // the engine is gone
                    }
                }
            }
            Ok(())
        })
    }
}
