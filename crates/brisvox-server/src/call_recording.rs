//! A call's recorder actor: what the call's edge sees, fed to the engine's
//! sans-IO [`CallRecorder`] on a task of its own, written at the call's end.
//!
//! The route's reader taps each caller frame (16 kHz, with its arrival time),
//! its writer each bot frame as written to the transport (at the transport's
//! rate, resampled to 16 kHz here) and each clear; the call's event bus hands
//! it the caller's final transcripts, the bot's turns, the barge-ins (the bot
//! is cut at the engine's `Interrupted`, before the writer's clear) and what
//! the caller heard of a cut answer (an [`EventObserver`]). Every tap is a `try_send` into a bounded queue: a full
//! queue drops the item for the recording only (counted, logged at the end),
//! never delaying the call. When every tap is gone (the call ended), the task
//! renders the recording and writes it on the blocking pool; a failure (a full
//! disk, the directory's budget) fails the recording, counted in
//! `brisvox_recordings_total{result="failed"}`, never the call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use brisvox_audio::resample::StreamResampler;
use brisvox_core::AudioFrame;
use brisvox_core::frame::{INTERNAL_FRAME_SAMPLES, INTERNAL_RATE_HZ};
use brisvox_engine::recording::{CallRecorder, RecordingLimits};
use brisvox_engine::{EngineEvent, EventObserver};
use tokio::sync::mpsc;

use crate::agent::RecordingSettings;
use crate::clock::{now, wall_clock};
use crate::metrics::ServerMetrics;

/// Items the recorder's queue holds: about five seconds of both tracks.
const RECORDER_QUEUE: usize = 512;

/// What the call's edge saw, for the recorder.
#[allow(clippy::large_enum_variant)] // Frames stay inline: boxing would allocate per frame.
enum Item {
    Caller {
        at: Instant,
        samples: [i16; INTERNAL_FRAME_SAMPLES],
    },
    Bot {
        at: Instant,
        frame: AudioFrame,
    },
    Cleared {
        at: Instant,
    },
    UserText {
        at: Instant,
        text: String,
    },
    BotStarted {
        at: Instant,
        turn: u64,
    },
    BotText {
        turn: u64,
        text: String,
    },
    BotStopped {
        at: Instant,
        turn: u64,
    },
}

/// A tap into a call's recorder. Clones feed the same recording.
#[derive(Clone)]
pub(crate) struct RecordingTap {
    tx: mpsc::Sender<Item>,
    dropped: Arc<AtomicU64>,
}

impl std::fmt::Debug for RecordingTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingTap").finish_non_exhaustive()
    }
}

impl RecordingTap {
    fn offer(&self, item: Item) {
        if self.tx.try_send(item).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A caller frame (16 kHz, 20 ms) that arrived at `at`.
    pub(crate) fn caller(&self, samples: &[i16], at: Instant) {
        let mut frame = [0; INTERNAL_FRAME_SAMPLES];
        let n = samples.len().min(INTERNAL_FRAME_SAMPLES);
        frame[..n].copy_from_slice(&samples[..n]);
        self.offer(Item::Caller { at, samples: frame });
    }

    /// A bot frame written to the transport now.
    pub(crate) fn bot(&self, frame: &AudioFrame) {
        self.offer(Item::Bot {
            at: now(),
            frame: frame.clone(),
        });
    }

    /// The transport was told to drop its queued bot audio now.
    pub(crate) fn cleared(&self) {
        self.offer(Item::Cleared { at: now() });
    }
}

impl EventObserver for RecordingTap {
    fn observe(&self, event: &EngineEvent) {
        let at = now();
        let item = match event {
            EngineEvent::Transcript {
                text,
                is_final: true,
            } => Item::UserText {
                at,
                text: text.clone(),
            },
            EngineEvent::BotSpeakingStarted { epoch } => Item::BotStarted { at, turn: epoch.0 },
            EngineEvent::BotSpeakingStopped { epoch } => Item::BotStopped { at, turn: epoch.0 },
            // The engine's barge-in: the bot was cut now (the writer's clear
            // follows, a moment later, on its own task).
            EngineEvent::Interrupted { .. } => Item::Cleared { at },
            EngineEvent::Heard { epoch, heard, .. } => Item::BotText {
                turn: epoch.0,
                text: heard.clone(),
            },
            _ => return,
        };
        self.offer(item);
    }
}

/// Starts the recorder of call `call_id`, whose bot audio is written at
/// `out_rate_hz`, when `[recording]` asks for one.
pub(crate) fn start(
    settings: Option<&RecordingSettings>,
    metrics: &ServerMetrics,
    call_id: &str,
    out_rate_hz: u32,
) -> Option<RecordingTap> {
    let settings = settings?.clone();
    let (tx, rx) = mpsc::channel(RECORDER_QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let limits = RecordingLimits {
        max_duration_ms: u64::from(settings.max_duration_s) * 1000,
    };
    let started_unix_ms = u64::try_from(wall_clock().as_millis()).unwrap_or(u64::MAX);
    let recorder = CallRecorder::new(call_id, now(), started_unix_ms, limits);
    let actor = Recorder {
        recorder,
        bot_rate_hz: out_rate_hz,
        settings,
        metrics: metrics.clone(),
        dropped: Arc::clone(&dropped),
    };
    tokio::spawn(actor.run(rx));
    Some(RecordingTap { tx, dropped })
}

struct Recorder {
    recorder: CallRecorder,
    bot_rate_hz: u32,
    settings: RecordingSettings,
    metrics: ServerMetrics,
    dropped: Arc<AtomicU64>,
}

impl Recorder {
    async fn run(mut self, mut rx: mpsc::Receiver<Item>) {
        let mut resampler = match self.bot_resampler().await {
            Ok(r) => r,
            Err(e) => return failed(&self.metrics, &e),
        };
        let mut resampled = Vec::new();
        while let Some(item) = rx.recv().await {
            let r = &mut self.recorder;
            match item {
                Item::Caller { at, samples } => r.handle_caller_audio(at, &samples),
                Item::Bot { at, frame } => match &mut resampler {
                    Some(rs) => {
                        rs.process_into(frame.samples(), &mut resampled);
                        r.handle_bot_audio(at, &resampled);
                    }
                    None => r.handle_bot_audio(at, frame.samples()),
                },
                Item::Cleared { at } => r.handle_bot_cleared(at),
                Item::UserText { at, text } => r.handle_user_text(at, &text),
                Item::BotStarted { at, turn } => r.handle_bot_started(at, turn),
                Item::BotText { turn, text } => r.handle_bot_text(turn, &text),
                Item::BotStopped { at, turn } => r.handle_bot_stopped(at, turn),
            }
        }
        self.write().await;
    }

    /// The bot track's resampler to 16 kHz (none at 16 kHz), built off the workers.
    async fn bot_resampler(&self) -> Result<Option<StreamResampler>, String> {
        let rate = self.bot_rate_hz;
        if rate == INTERNAL_RATE_HZ {
            return Ok(None);
        }
        tokio::task::spawn_blocking(move || StreamResampler::new(rate, INTERNAL_RATE_HZ))
            .await
            .map_err(|e| e.to_string())?
            .map(Some)
            .map_err(|e| e.to_string())
    }

    async fn write(self) {
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(dropped, "items the recorder could not keep up with");
        }
        let recording = self.recorder.finish(now());
        let dir = self.settings.directory.clone();
        let budget = self.settings.max_directory_bytes;
        let written = tokio::task::spawn_blocking(move || {
            brisvox_engine::recording::write(&dir, &recording, budget)
        })
        .await;
        match written {
            Ok(Ok(files)) => {
                self.metrics
                    .recordings_total
                    .with_label_values(&["written"])
                    .inc();
                tracing::info!(wav = %files.wav.display(), "call recording written");
            }
            Ok(Err(e)) => failed(&self.metrics, &e.to_string()),
            Err(e) => failed(&self.metrics, &e.to_string()),
        }
    }
}

/// Counts and logs a recording that was not written.
fn failed(metrics: &ServerMetrics, reason: &str) {
    metrics
        .recordings_total
        .with_label_values(&["failed"])
        .inc();
    tracing::warn!(reason, "call recording failed; the call was not affected");
}
