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

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::chunk_session::{ChunkSpeaker, Job, send_audio, spawn_session};
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
            Ok(spawn_session(EspeakSpeaker {
                config: self.config.clone(),
                counters: self.counters.clone(),
                voice: Arc::from(voice),
            }))
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

/// Speaks a session's chunks, one espeak-ng process each.
struct EspeakSpeaker {
    config: Arc<EspeakConfig>,
    counters: Arc<Counters>,
    voice: Arc<str>,
}

impl ChunkSpeaker for EspeakSpeaker {
    /// Dropping the job kills its process (`kill_on_drop`).
    fn job(
        &self,
        ctx: ContextId,
        text: String,
        _first: bool,
        events: mpsc::Sender<TtsEvent>,
    ) -> Job {
        let config = self.config.clone();
        let counters = self.counters.clone();
        let voice = self.voice.clone();
        Box::pin(async move {
            let (samples, rate) = synthesize(&config, &counters, &text, &voice).await?;
            // The engine gone, the session ends with its input.
            send_audio(&events, ctx, &samples, rate, config.chunk_ms).await;
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
