//! The session task both local voices share: text chunks queued per context
//! and spoken one at a time, in order, by a [`ChunkSpeaker`].
//!
//! - A chunk of a context is one job (the speaker's future); one job runs at a
//!   time, so a context's chunks are spoken in order and its `Done` follows
//!   its flush.
//! - A cancel drops the retired contexts' waiting work and the running job if
//!   its context is retired (dropping the job is how a speaker stops: child
//!   processes are killed on drop, a model run is terminated).
//! - A job that fails sends one `Error` for its context and the context's
//!   remaining work is skipped.
//! - `Close` stops at once (waiting work and the running job dropped); the
//!   senders gone, what is queued is finished first. `Closed` is always the
//!   last event.
//! - The input queue is not read while [`TTS_INPUT_CAPACITY`] chunks wait.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use tracing::Instrument as _;

use tokio::sync::mpsc;

use crate::tts::{TTS_INPUT_CAPACITY, TtsBackend, TtsInput};
use crate::{ContextId, ProviderError, TtsEvent, TtsSession};

/// One chunk being spoken: ends when its audio was sent (or the engine left).
pub(crate) type Job = Pin<Box<dyn Future<Output = Result<(), ProviderError>> + Send>>;

/// What turns a text chunk into audio events.
pub(crate) trait ChunkSpeaker: Send + 'static {
    /// Starts speaking `text` for `ctx`; the job sends its audio on `events`.
    /// `first`: the first chunk spoken for `ctx` (the start of an answer).
    fn job(&self, ctx: ContextId, text: String, first: bool, events: mpsc::Sender<TtsEvent>)
    -> Job;

    /// A running job was dropped before it ended (a cancel or `Close`).
    fn dropped(&self) {}
}

/// Starts the session task for `speaker` and returns the engine's handle.
pub(crate) fn spawn_session(speaker: impl ChunkSpeaker) -> TtsSession {
    let (session, backend) = TtsSession::channel();
    let actor = SessionActor {
        backend,
        speaker,
        pending: VecDeque::with_capacity(TTS_INPUT_CAPACITY),
        failed: None,
        spoken: None,
    };
    tokio::spawn(actor.run().in_current_span());
    session
}

/// Sends `samples` as audio events of `chunk_ms` each; false when the engine
/// is gone (nobody reads the events any more).
pub(crate) async fn send_audio(
    events: &mpsc::Sender<TtsEvent>,
    ctx: ContextId,
    samples: &[i16],
    sample_rate_hz: u32,
    chunk_ms: u32,
) -> bool {
    let chunk = (sample_rate_hz as usize * chunk_ms.max(1) as usize / 1000).max(1);
    for piece in samples.chunks(chunk) {
        let event = TtsEvent::Audio {
            ctx,
            samples: piece.to_vec(),
            sample_rate_hz,
        };
        if events.send(event).await.is_err() {
            return false;
        }
    }
    true
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
struct SessionActor<S> {
    backend: TtsBackend,
    speaker: S,
    /// Work not started yet, in order; bounded by [`TTS_INPUT_CAPACITY`].
    pending: VecDeque<Work>,
    /// The newest context that failed: its remaining work is skipped.
    failed: Option<ContextId>,
    /// The context of the last job started.
    spoken: Option<ContextId>,
}

impl<S: ChunkSpeaker> SessionActor<S> {
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
                    // Close: stop now, as the trait says.
                    Some(TtsInput::Close) => {
                        self.pending.clear();
                        self.drop_job(&mut job);
                        input_open = false;
                    }
                    // The senders gone: nothing more comes; finish what is queued.
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
            // A start needs no work; empty text says nothing; Close is handled by the caller.
            _ => {}
        }
    }

    fn drop_job(&self, job: &mut Option<(ContextId, Job)>) {
        if job.take().is_some() {
            self.speaker.dropped();
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

    /// The next job, skipping retired and failed contexts; a `Done` is sent
    /// here (it needs no job).
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
                Work::Speak(ctx, text) => {
                    let events = self.backend.events.clone();
                    let first = self.spoken.replace(ctx) != Some(ctx);
                    return Some((ctx, self.speaker.job(ctx, text, first, events)));
                }
            }
        }
        None
    }
}
