//! The TTS stage: text chunks to the provider, its audio to frames at the
//! transport rate.
//!
//! One provider context per response (`ContextId::new(epoch, seq)`, `seq`
//! counting the session's contexts). Each chunk is normalised on its way out
//! (inline up to [`INLINE_CHUNK_CHARS`](brisvox_text::normalize::INLINE_CHUNK_CHARS),
//! on a blocking thread above it, within [`NORMALIZE_OFFLOAD_TIMEOUT`]: a failed
//! or late offload speaks the written text and is counted in the report's
//! `normalize_failures`; the recorded text stays the raw chunk). Marks: `TtsRequest` when the context
//! starts, `TtsFirstText` when its first text is handed to the session,
//! `TtsFirstByte` at its first audio. Audio goes through the
//! [`OutputFramer`] (resampled to the transport rate, whole frames; built
//! off the workers before the call, and a provider's change of rate builds
//! the new resampler on a blocking thread) to the output stage, tagged with
//! the epoch; `Done` flushes the framer and ends the
//! response downstream.
//!
//! Failures end the response, never the call: a context error, a stall longer
//! than [`ProviderLimits::tts_stall`](crate::config::ProviderLimits) (the
//! context is cancelled) or a lost session (reconnected at the next response)
//! are counted, the audio already framed plays out, and the response ends.
//! When the epoch floor passes the response's epoch, its context is cancelled
//! (the session drops its queued audio) and the framer is reset.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use brisvox_audio::OutputFramer;
use brisvox_audio::resample::StreamResampler;
use brisvox_core::Epoch;
use brisvox_core::timeline::TurnEvent;
use brisvox_providers::{
    ContextId, ProviderError, TtsConfig, TtsEvent, TtsEvents, TtsProvider, TtsSender, TtsSession,
};
use brisvox_text::Language;
use brisvox_text::normalize::{needs_offload, normalize};
use tokio::sync::{mpsc, watch};

use super::inbox::{OutInput, TtsInput};
use super::{
    SharedTimeline, forward, mark, now, shutdown, sleep_until, stale_opt, unless_shutdown,
};
use crate::frame_queue::QueueSender;
use crate::report::{FailureBook, ProviderStage};

/// The response being spoken.
#[derive(Debug, Clone, Copy)]
struct Current {
    epoch: Epoch,
    ctx: ContextId,
    flushed: bool,
    got_audio: bool,
    /// The response failed (counted, ended downstream): its remaining chunks
    /// are dropped until its end.
    failed: bool,
    /// When a missing first byte or next chunk counts as a stall.
    deadline: Option<Instant>,
    /// The response waits for its tools: no stall is armed until more text.
    paused: bool,
}

/// The TTS stage actor.
pub(crate) struct TtsStage {
    provider: Arc<dyn TtsProvider>,
    config: TtsConfig,
    sender: Option<TtsSender>,
    events: Option<TtsEvents>,
    inbox: mpsc::Receiver<TtsInput>,
    output: QueueSender<OutInput>,
    framer: OutputFramer,
    language: Language,
    seq: u32,
    current: Option<Current>,
    stall_limit: Duration,
    timeline: SharedTimeline,
    failures: Arc<FailureBook>,
    failed_responses: Arc<AtomicU64>,
    normalize_failures: Arc<AtomicU64>,
    floor: watch::Receiver<Epoch>,
    shutdown: watch::Receiver<bool>,
}

/// What the TTS stage is built from.
pub(crate) struct TtsParts {
    pub(crate) provider: Arc<dyn TtsProvider>,
    pub(crate) config: TtsConfig,
    pub(crate) session: Option<TtsSession>,
    pub(crate) inbox: mpsc::Receiver<TtsInput>,
    pub(crate) output: QueueSender<OutInput>,
    pub(crate) framer: OutputFramer,
    pub(crate) language: Language,
    pub(crate) stall_limit: Duration,
    pub(crate) timeline: SharedTimeline,
    pub(crate) failures: Arc<FailureBook>,
    pub(crate) failed_responses: Arc<AtomicU64>,
    /// Chunks whose offloaded normalisation failed (the written text was spoken).
    pub(crate) normalize_failures: Arc<AtomicU64>,
    pub(crate) floor: watch::Receiver<Epoch>,
    pub(crate) shutdown: watch::Receiver<bool>,
}

impl TtsStage {
    /// Builds the actor.
    pub(crate) fn new(parts: TtsParts) -> Self {
        let (sender, events) = match parts.session.map(TtsSession::split) {
            Some((s, e)) => (Some(s), Some(e)),
            None => (None, None),
        };
        TtsStage {
            provider: parts.provider,
            config: parts.config,
            sender,
            events,
            inbox: parts.inbox,
            output: parts.output,
            framer: parts.framer,
            language: parts.language,
            seq: 0,
            current: None,
            stall_limit: parts.stall_limit,
            timeline: parts.timeline,
            failures: parts.failures,
            failed_responses: parts.failed_responses,
            normalize_failures: parts.normalize_failures,
            floor: parts.floor,
            shutdown: parts.shutdown,
        }
    }

    /// Speaks responses until the call shuts down.
    pub(crate) async fn run(mut self) {
        loop {
            let epoch = self.current.map(|c| c.epoch);
            let deadline = self.current.and_then(|c| c.deadline);
            tokio::select! {
                biased;
                () = shutdown(&mut self.shutdown) => break,
                () = stale_opt(&mut self.floor, epoch) => self.on_stale(),
                event = next_event(&mut self.events) => self.on_event(event).await,
                () = sleep_until(deadline), if deadline.is_some() => self.on_stall().await,
                input = self.inbox.recv() => match input {
                    Some(TtsInput::Chunk { epoch, text }) => self.on_chunk(epoch, text).await,
                    Some(TtsInput::Pause { epoch }) => self.on_pause(epoch),
                    Some(TtsInput::End { epoch }) => self.on_end(epoch).await,
                    None => break,
                },
            }
        }
        if let (Some(sender), Some(current)) = (&self.sender, self.current) {
            sender.cancel(current.ctx);
        }
    }

    async fn on_chunk(&mut self, epoch: Epoch, text: String) {
        if epoch.is_stale(*self.floor.borrow()) {
            return;
        }
        match self.current {
            Some(c) if c.failed && c.epoch == epoch && !c.flushed => return,
            Some(c) if c.failed => self.current = None,
            // Not expected (the driver starts a response once the last one
            // finished): end the old one rather than mix two responses.
            Some(c) if c.epoch != epoch || c.flushed => self.abandon().await,
            _ => {}
        }
        if self.current.is_none() {
            self.start(epoch).await;
        }
        let Some(current) = self.current.filter(|c| !c.failed) else {
            return;
        };
        let written = OutInput::Text {
            epoch,
            text: text.clone(),
        };
        if !forward(&self.output, written, epoch, &mut self.floor).await {
            return;
        }
        let spoken = spoken_form(text, self.language)
            .await
            .unwrap_or_else(|raw| {
                self.normalize_failures.fetch_add(1, Ordering::Relaxed);
                raw
            });
        let sent = match &self.sender {
            Some(sender) => {
                let send = sender.send_text(current.ctx, spoken);
                match unless_shutdown(&mut self.shutdown, send).await {
                    Some(sent) => sent.is_ok(),
                    None => return,
                }
            }
            None => false,
        };
        if !sent {
            self.fail(&ProviderError::disconnected("tts session closed"))
                .await;
            return;
        }
        mark(&self.timeline, epoch, TurnEvent::TtsFirstText, now());
        if let Some(c) = self.current.as_mut()
            && ((!c.got_audio && c.deadline.is_none()) || c.paused)
        {
            c.paused = false;
            c.deadline = Some(now() + self.stall_limit);
        }
    }

    /// The response waits for its tools: disarm the stall timer until more text.
    fn on_pause(&mut self, epoch: Epoch) {
        if let Some(c) = self.current.as_mut().filter(|c| c.epoch == epoch) {
            c.paused = true;
            c.deadline = None;
        }
    }

    /// Starts a context for `epoch`'s response (connecting a session first if
    /// the last one was lost).
    async fn start(&mut self, epoch: Epoch) {
        let ctx = ContextId::new(epoch, self.seq);
        self.seq += 1;
        self.framer.reset();
        mark(&self.timeline, epoch, TurnEvent::TtsRequest, now());
        let current = Current {
            epoch,
            ctx,
            flushed: false,
            got_audio: false,
            failed: false,
            deadline: None,
            paused: false,
        };
        let started = self.start_context(ctx).await;
        self.current = Some(current);
        if let Err(error) = started {
            self.fail(&error).await;
        }
    }

    async fn start_context(&mut self, ctx: ContextId) -> Result<(), ProviderError> {
        if self.sender.as_ref().is_none_or(TtsSender::is_closed) {
            let connect = self.provider.connect(self.config.clone());
            let session = unless_shutdown(&mut self.shutdown, connect)
                .await
                .unwrap_or(Err(ProviderError::Cancelled))?;
            let (sender, events) = session.split();
            self.sender = Some(sender);
            self.events = Some(events);
        }
        match &self.sender {
            Some(sender) => unless_shutdown(&mut self.shutdown, sender.start_context(ctx))
                .await
                .unwrap_or(Ok(()))
                .map_err(|_| ProviderError::disconnected("tts context refused")),
            None => Err(ProviderError::disconnected("tts session closed")),
        }
    }

    async fn on_end(&mut self, epoch: Epoch) {
        if epoch.is_stale(*self.floor.borrow()) {
            return;
        }
        match self.current {
            Some(c) if c.epoch == epoch && c.failed => self.current = None,
            Some(c) if c.epoch == epoch => {
                let flushed = match &self.sender {
                    Some(sender) => unless_shutdown(&mut self.shutdown, sender.flush(c.ctx))
                        .await
                        .is_none_or(|flushed| flushed.is_ok()),
                    None => false,
                };
                if flushed {
                    if let Some(c) = self.current.as_mut() {
                        c.flushed = true;
                    }
                } else {
                    self.fail(&ProviderError::disconnected("tts session closed"))
                        .await;
                    self.current = None;
                }
            }
            _ => self.end_downstream(epoch).await,
        }
    }

    async fn on_event(&mut self, event: Option<TtsEvent>) {
        match event {
            Some(TtsEvent::Audio {
                ctx,
                samples,
                sample_rate_hz,
            }) => self.on_audio(ctx, &samples, sample_rate_hz).await,
            Some(TtsEvent::Done { ctx }) => {
                if self.current.is_some_and(|c| c.ctx == ctx && !c.failed) {
                    self.framer.flush();
                    if self.frames_downstream().await {
                        self.finish().await;
                    }
                }
            }
            Some(TtsEvent::Error { ctx, error }) => {
                let ours = self
                    .current
                    .is_some_and(|c| Some(c.ctx) == ctx && !c.failed);
                if ours {
                    self.fail(&error).await;
                } else {
                    self.count(&error);
                }
            }
            Some(TtsEvent::Words { ctx, words }) => {
                if let Some(c) = self.current.filter(|c| c.ctx == ctx && !c.failed) {
                    let item = OutInput::Words {
                        epoch: c.epoch,
                        words,
                    };
                    forward(&self.output, item, c.epoch, &mut self.floor).await;
                }
            }
            Some(TtsEvent::Closed) | None => self.on_closed().await,
            Some(_) => {}
        }
    }

    async fn on_audio(&mut self, ctx: ContextId, samples: &[i16], rate_hz: u32) {
        let Some(current) = self.current.as_mut().filter(|c| c.ctx == ctx && !c.failed) else {
            return;
        };
        if !current.got_audio {
            current.got_audio = true;
            mark(
                &self.timeline,
                current.epoch,
                TurnEvent::TtsFirstByte,
                now(),
            );
        }
        if !current.paused {
            current.deadline = Some(now() + self.stall_limit);
        }
        if rate_hz != self.framer.in_rate_hz() && !self.switch_rate(rate_hz).await {
            self.fail(&ProviderError::protocol("tts audio at an unusable rate"))
                .await;
            return;
        }
        if self.framer.push(samples, rate_hz).is_err() {
            self.fail(&ProviderError::protocol("tts audio at an unusable rate"))
                .await;
            return;
        }
        self.frames_downstream().await;
    }

    /// The provider changed its audio rate: the framer's new resampler is
    /// built on a blocking thread (a sinc filter takes milliseconds), never on
    /// the worker. False if it cannot be built.
    async fn switch_rate(&mut self, rate_hz: u32) -> bool {
        let out_hz = self.framer.out_rate_hz();
        let built =
            tokio::task::spawn_blocking(move || StreamResampler::new(rate_hz, out_hz)).await;
        match built {
            Ok(Ok(next)) => self.framer.switch_input(next).is_ok(),
            _ => false,
        }
    }

    /// Sends every whole frame downstream; false if the response went stale.
    async fn frames_downstream(&mut self) -> bool {
        let Some(epoch) = self.current.map(|c| c.epoch) else {
            return false;
        };
        while let Some(frame) = self.framer.next_frame() {
            let item = OutInput::Frame { epoch, frame };
            if !forward(&self.output, item, epoch, &mut self.floor).await {
                return false;
            }
        }
        true
    }

    /// The session is gone: the response in progress fails; the next one reconnects.
    async fn on_closed(&mut self) {
        self.events = None;
        self.sender = None;
        if self.current.is_some_and(|c| !c.failed) {
            self.fail(&ProviderError::disconnected("tts session ended"))
                .await;
        }
    }

    async fn on_stall(&mut self) {
        let error = ProviderError::Timeout {
            waiting_for: "tts audio",
            after_ms: self.stall_limit.as_millis() as u64,
        };
        self.fail(&error).await;
    }

    /// Ends the current response as failed: counted, its context cancelled,
    /// ended downstream at once (what was framed plays out); its remaining
    /// text is dropped until its end.
    async fn fail(&mut self, error: &ProviderError) {
        self.count(error);
        self.failed_responses.fetch_add(1, Ordering::Relaxed);
        let Some(c) = self.current.as_mut() else {
            return;
        };
        c.failed = true;
        c.deadline = None;
        let (ctx, epoch) = (c.ctx, c.epoch);
        if let Some(sender) = &self.sender {
            sender.cancel(ctx);
        }
        self.framer.reset();
        self.end_downstream(epoch).await;
    }

    async fn abandon(&mut self) {
        if let (Some(sender), Some(c)) = (&self.sender, self.current) {
            sender.cancel(c.ctx);
        }
        self.framer.reset();
        self.finish().await;
    }

    async fn finish(&mut self) {
        if let Some(c) = self.current.take() {
            self.end_downstream(c.epoch).await;
        }
    }

    async fn end_downstream(&mut self, epoch: Epoch) {
        forward(
            &self.output,
            OutInput::End { epoch },
            epoch,
            &mut self.floor,
        )
        .await;
    }

    fn on_stale(&mut self) {
        if let Some(c) = self.current.take() {
            if let Some(sender) = &self.sender {
                sender.cancel(c.ctx);
            }
            self.framer.reset();
        }
    }

    fn count(&self, error: &ProviderError) {
        self.failures.count(ProviderStage::Tts, error.kind());
    }
}

/// How long the normalisation of a long chunk off the worker may take before
/// the written text is spoken instead (counted in `normalize_failures`).
pub(crate) const NORMALIZE_OFFLOAD_TIMEOUT: Duration = Duration::from_millis(200);

/// The words to speak for `chunk`: normalised inline up to
/// [`INLINE_CHUNK_CHARS`](brisvox_text::normalize::INLINE_CHUNK_CHARS), on a
/// blocking thread above it. `Err` holds the written text, to be spoken when the
/// offload failed or took longer than [`NORMALIZE_OFFLOAD_TIMEOUT`].
async fn spoken_form(chunk: String, language: Language) -> Result<String, String> {
    if !needs_offload(&chunk) {
        return Ok(normalize(&chunk, language).into_owned());
    }
    offload_or_raw(chunk, NORMALIZE_OFFLOAD_TIMEOUT, move |c| {
        normalize(c, language).into_owned()
    })
    .await
}

/// `rewrite(chunk)` on a blocking thread, or `Err(chunk)` when it panics or
/// takes longer than `limit` (the thread is left to finish; its result is dropped).
async fn offload_or_raw(
    chunk: String,
    limit: Duration,
    rewrite: impl FnOnce(&str) -> String + Send + 'static,
) -> Result<String, String> {
    let raw = chunk.clone();
    let job = tokio::task::spawn_blocking(move || rewrite(&chunk));
    match tokio::time::timeout(limit, job).await {
        Ok(Ok(spoken)) => Ok(spoken),
        Ok(Err(_)) | Err(_) => Err(raw),
    }
}

/// The session's next live event; `None` once it is gone, never without one.
///
/// # Cancel safety
///
/// Cancel safe: [`TtsEvents::recv`] is.
async fn next_event(events: &mut Option<TtsEvents>) -> Option<TtsEvent> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_slow_or_failed_offload_speaks_the_written_text() {
        let ms = Duration::from_millis;
        let ok = offload_or_raw("12".into(), ms(5_000), |c| format!("{c}!")).await;
        assert_eq!(ok, Ok("12!".to_owned()));
        let slow = offload_or_raw("%15".into(), ms(20), |c| {
            std::thread::sleep(Duration::from_millis(500));
            c.to_owned()
        })
        .await;
        assert_eq!(slow, Err("%15".to_owned()), "timed out: the written text");
        let panicked =
            offload_or_raw("%15".into(), ms(5_000), |_| panic!("a normaliser bug")).await;
        assert_eq!(panicked, Err("%15".to_owned()));
    }
}
