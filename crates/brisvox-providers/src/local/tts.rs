//! Local speech from the `espeak-ng` program: no key, no network, robotic voice.
//!
//! Each text chunk is spoken by its own `espeak-ng --stdout` process (the
//! Debian package [`ESPEAK_PACKAGE`]; a separate process keeps its GPL code out
//! of our binary), fed the text on stdin, so nothing blocks a tokio worker: the
//! session task only awaits the child's pipes. The WAV it prints (22.05 kHz
//! mono PCM16) is parsed with [`brisvox_audio::wav::read_wav`] and sent as
//! [`EspeakConfig::chunk_ms`] audio events at the program's own rate; the
//! engine's output framer resamples.
//!
//! One session task runs one process at a time, so a response's chunks are
//! spoken in order; `Done` follows its flush. A cancel kills the running
//! process if its context is retired and drops the retired contexts' waiting
//! text.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncWriteExt;

use crate::tts::{TTS_INPUT_CAPACITY, TtsBackend, TtsInput};
use crate::{BoxFuture, ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession};

/// The Debian package that provides the `espeak-ng` program.
pub const ESPEAK_PACKAGE: &str = "espeak-ng";

/// How to run espeak-ng.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EspeakConfig {
    /// The program (a name looked up on `PATH`, or a path).
    pub program: PathBuf,
    /// The espeak-ng voice (`en-us`, `en-gb`, `tr`, ...); a session's
    /// [`TtsConfig::voice`] overrides it.
    pub voice: String,
    /// Speaking rate, in words per minute (`-s`).
    pub words_per_minute: u32,
    /// Audio per event, in milliseconds.
    pub chunk_ms: u32,
}

impl Default for EspeakConfig {
    /// `espeak-ng` on `PATH`, voice `en-us`, 170 words per minute, 40 ms events.
    fn default() -> Self {
        EspeakConfig {
            program: PathBuf::from("espeak-ng"),
            voice: "en-us".to_owned(),
            words_per_minute: 170,
            chunk_ms: 40,
        }
    }
}

/// Why espeak-ng could not speak.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalTtsError {
    /// The program is not installed (or not where the configuration says).
    #[error(
        "the local TTS needs the program `{program}`, which was not found: install the Debian package `{package}` (apt-get install -y {package})"
    )]
    ProgramMissing {
        /// The program looked for.
        program: String,
        /// The package to install.
        package: &'static str,
    },
    /// The program could not be run, or exited with a failure.
    #[error("`{program}` failed: {reason}")]
    ProgramFailed {
        /// The program.
        program: String,
        /// Its exit status or the OS error.
        reason: String,
    },
    /// The program's output was not a PCM16 WAV.
    #[error("`{program}` printed audio that is not a PCM16 WAV: {reason}")]
    BadAudio {
        /// The program.
        program: String,
        /// What was wrong.
        reason: String,
    },
}

impl From<LocalTtsError> for ProviderError {
    fn from(e: LocalTtsError) -> Self {
        match e {
            LocalTtsError::ProgramMissing { .. } => ProviderError::Connect {
                reason: e.to_string().into(),
            },
            LocalTtsError::ProgramFailed { .. } => ProviderError::Server {
                status: 500,
                reason: e.to_string().into(),
            },
            LocalTtsError::BadAudio { .. } => ProviderError::Protocol {
                reason: e.to_string().into(),
            },
        }
    }
}

/// What the provider has done since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EspeakStats {
    /// Processes started to speak a chunk.
    pub processes_started: u64,
    /// Processes that ran to their end.
    pub processes_finished: u64,
    /// Processes killed because their context was cancelled.
    pub processes_killed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    started: AtomicU64,
    finished: AtomicU64,
    killed: AtomicU64,
}

/// The espeak-ng TTS provider. Cheap to clone; clones share their counters.
#[derive(Debug, Clone)]
pub struct EspeakTts {
    config: Arc<EspeakConfig>,
    counters: Arc<Counters>,
}

impl EspeakTts {
    /// A provider running espeak-ng as `config` says.
    pub fn new(config: EspeakConfig) -> Self {
        EspeakTts {
            config: Arc::new(config),
            counters: Arc::default(),
        }
    }

    /// Checks that the program runs (`--version`). Blocking: for startup,
    /// before the server runs, not on an async worker.
    pub fn probe_blocking(&self) -> Result<(), LocalTtsError> {
        let status = std::process::Command::new(&self.config.program)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        self.check_status(status)
    }

    /// Checks that the program runs (`--version`), without blocking.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future kills the probe.
    pub async fn probe(&self) -> Result<(), LocalTtsError> {
        let status = tokio::process::Command::new(&self.config.program)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .status()
            .await;
        self.check_status(status)
    }

    fn check_status(
        &self,
        status: std::io::Result<std::process::ExitStatus>,
    ) -> Result<(), LocalTtsError> {
        let program = self.config.program.display().to_string();
        match status {
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
    pub fn stats(&self) -> EspeakStats {
        EspeakStats {
            processes_started: self.counters.started.load(Ordering::Relaxed),
            processes_finished: self.counters.finished.load(Ordering::Relaxed),
            processes_killed: self.counters.killed.load(Ordering::Relaxed),
        }
    }

    /// Speaks `text` with one process: mono PCM16 samples and their rate in Hz.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills the process; nothing is left running.
    pub async fn synthesize(
        &self,
        text: &str,
        voice: &str,
    ) -> Result<(Vec<i16>, u32), LocalTtsError> {
        synthesize(&self.config, &self.counters, text, voice).await
    }
}

impl TtsProvider for EspeakTts {
    fn connect(&self, config: TtsConfig) -> BoxFuture<'_, Result<TtsSession, ProviderError>> {
        Box::pin(async move {
            self.probe().await?;
            let voice = config
                .voice
                .as_deref()
                .unwrap_or(&self.config.voice)
                .to_owned();
            let (session, backend) = TtsSession::channel();
            let actor = SessionActor {
                backend,
                config: self.config.clone(),
                counters: self.counters.clone(),
                voice: Arc::from(voice),
                pending: VecDeque::with_capacity(TTS_INPUT_CAPACITY),
                failed: None,
            };
            tokio::spawn(actor.run());
            Ok(session)
        })
    }
}

/// Runs one espeak-ng process over `text`.
async fn synthesize(
    config: &EspeakConfig,
    counters: &Counters,
    text: &str,
    voice: &str,
) -> Result<(Vec<i16>, u32), LocalTtsError> {
    let program = config.program.display().to_string();
    let failed = |reason: String| LocalTtsError::ProgramFailed {
        program: program.clone(),
        reason,
    };
    let mut child = tokio::process::Command::new(&config.program)
        .args(["--stdout", "-b", "1", "-v", voice, "-s"])
        .arg(config.words_per_minute.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => LocalTtsError::ProgramMissing {
                program: program.clone(),
                package: ESPEAK_PACKAGE,
            },
            _ => failed(e.to_string()),
        })?;
    counters.started.fetch_add(1, Ordering::Relaxed);
    let mut kill_guard = KillCounter {
        counters,
        armed: true,
    };
    let stdin = child.stdin.take();
    let input = text.to_owned();
    let write = async move {
        if let Some(mut stdin) = stdin {
            // A failed write shows as the program's failure below.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
    };
    let (_, output) = tokio::join!(write, child.wait_with_output());
    kill_guard.armed = false;
    let output = output.map_err(|e| failed(e.to_string()))?;
    counters.finished.fetch_add(1, Ordering::Relaxed);
    if !output.status.success() {
        return Err(failed(format!("exited with {}", output.status)));
    }
    let wav =
        brisvox_audio::wav::read_wav(&output.stdout).map_err(|e| LocalTtsError::BadAudio {
            program,
            reason: e.to_string(),
        })?;
    let rate = wav.spec.sample_rate_hz;
    let samples = if wav.spec.channels == 1 {
        wav.samples
    } else {
        wav.to_mono()
    };
    Ok((samples, rate))
}

/// Counts the process as killed if its future is dropped before it ends.
struct KillCounter<'a> {
    counters: &'a Counters,
    armed: bool,
}

impl Drop for KillCounter<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.counters.killed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs the current job, if any (never ends without one).
///
/// # Cancel safety
///
/// Cancel safe: the job stays in `job` and resumes on the next call.
async fn poll_job(job: &mut Option<(ContextId, Job)>) -> Result<(), LocalTtsError> {
    match job {
        Some((_, j)) => j.as_mut().await,
        None => std::future::pending().await,
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

/// A job: one chunk spoken and its audio sent.
type Job = Pin<Box<dyn Future<Output = Result<(), LocalTtsError>> + Send>>;

/// The task behind one session.
struct SessionActor {
    backend: TtsBackend,
    config: Arc<EspeakConfig>,
    counters: Arc<Counters>,
    voice: Arc<str>,
    /// Work not started yet, in order; bounded by [`TTS_INPUT_CAPACITY`] (the
    /// input queue is not read while it is full).
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
                () = self.backend.cancels.cancelled() => {
                    self.on_cancel(&mut job);
                }
                input = self.backend.input.recv(), if input_open && room => {
                    match input {
                        // Close: stop now, as the trait says. The senders
                        // gone: nothing more comes; finish what is queued.
                        Some(TtsInput::Close) => {
                            self.pending.clear();
                            job = None; // kills a running process
                            input_open = false;
                        }
                        None => input_open = false,
                        Some(other) => self.on_input(other),
                    }
                }
                result = poll_job(&mut job), if job.is_some() => {
                    if let (Some((ctx, _)), Err(error)) = (job.take(), result) {
                        self.failed = Some(ctx);
                        let _ = self.backend.events.send(TtsEvent::Error { ctx: Some(ctx), error: error.into() }).await;
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
            // A start needs no work; empty text says nothing; Close is handled by the caller.
            _ => {}
        }
    }

    /// Drops the retired contexts' waiting work and kills the running job if
    /// its context is retired.
    fn on_cancel(&mut self, job: &mut Option<(ContextId, Job)>) {
        let cancels = &self.backend.cancels;
        self.pending.retain(|w| !cancels.is_cancelled(w.ctx()));
        if job
            .as_ref()
            .is_some_and(|(ctx, _)| cancels.is_cancelled(*ctx))
        {
            *job = None; // drops the child: kill_on_drop
        }
    }

    /// The next job to run, skipping retired and failed contexts. A `Done` is
    /// sent here (it needs no process).
    async fn next_job(&mut self) -> Option<(ContextId, Job)> {
        while let Some(work) = self.pending.pop_front() {
            let ctx = work.ctx();
            if self.backend.cancels.is_cancelled(ctx) || self.failed == Some(ctx) {
                continue;
            }
            match work {
                Work::Done(ctx) => {
                    if self
                        .backend
                        .events
                        .send(TtsEvent::Done { ctx })
                        .await
                        .is_err()
                    {
                        return None;
                    }
                }
                Work::Speak(ctx, text) => return Some((ctx, self.job(ctx, text))),
            }
        }
        None
    }

    fn job(&self, ctx: ContextId, text: String) -> Job {
        let config = self.config.clone();
        let counters = self.counters.clone();
        let voice = self.voice.clone();
        let events = self.backend.events.clone();
        Box::pin(async move {
            let (samples, rate) = synthesize(&config, &counters, &text, &voice).await?;
            let chunk = (rate as usize * config.chunk_ms.max(1) as usize / 1000).max(1);
            for piece in samples.chunks(chunk) {
                let event = TtsEvent::Audio {
                    ctx,
                    samples: piece.to_vec(),
                    sample_rate_hz: rate,
                };
                if events.send(event).await.is_err() {
                    break; // the engine is gone; the session ends with its input
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_the_package() {
        let tts = EspeakTts::new(EspeakConfig {
            program: PathBuf::from("/nonexistent/espeak-ng"),
            ..EspeakConfig::default()
        });
        let err = tts.probe_blocking().unwrap_err();
        assert!(matches!(
            err,
            LocalTtsError::ProgramMissing {
                package: "espeak-ng",
                ..
            }
        ));
        assert!(
            err.to_string().contains("apt-get install -y espeak-ng"),
            "{err}"
        );
    }
}
