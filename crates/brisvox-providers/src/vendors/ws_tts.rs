//! The session task shared by the websocket TTS adapters (Cartesia,
//! ElevenLabs): one socket, many contexts, cancels on barge-in.
//!
//! The vendor's wire format lives in a [`TtsWire`] codec (pure functions from
//! our inputs to its messages and from its messages to [`Incoming`]); this
//! task owns the socket and the per-context state, and turns engine inputs,
//! socket messages, cancels and timers into sends and [`TtsEvent`]s.
//!
//! Each context gets a wire id; a context the vendor refuses for capacity
//! (`Incoming::ContextError { refused: true }`) is re-opened under a fresh wire
//! id after [`WsTtsTiming::refusal_retry_ms`], up to
//! [`WsTtsTiming::refusal_retries`] times, replaying its text so far. The
//! per-context rules for expiry and open-context limits live in
//! [`super::ws_ctx`].

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

use super::{VendorSocket, WsSocket, pending_close};

pub(crate) use super::ws_ctx::WordsFrom;
use super::ws_ctx::{ClosingBook, Ctx};
use crate::tts::{TtsBackend, TtsInput};
use crate::{ContextId, ProviderError, TtsEvent, WordTiming};

/// What a vendor message means to the session.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// PCM s16le bytes for a context.
    Audio { wire: String, pcm: Vec<u8> },
    /// Word timing for a context, counted from `from`.
    Words {
        wire: String,
        words: Vec<WordTiming>,
        from: WordsFrom,
    },
    /// The context's last audio has been sent.
    Done { wire: String },
    /// The context failed; `refused` when the vendor refused it for capacity
    /// (worth re-opening after a pause).
    ContextError {
        wire: String,
        error: ProviderError,
        refused: bool,
    },
    /// The whole session failed.
    SessionError(ProviderError),
    /// Nothing for us (flush acknowledgements, phoneme timing).
    Ignore,
}

/// A vendor's TTS websocket format.
pub(crate) trait TtsWire: Send + 'static {
    /// Messages carrying `text` for context `wire`; `first` on its first text.
    fn text(&self, wire: &str, text: &str, first: bool) -> Vec<String>;
    /// Messages ending context `wire` (speak what is pending, then finish).
    fn flush(&self, wire: &str, any_text: bool) -> Vec<String>;
    /// The message that stops context `wire` now.
    fn cancel(&self, wire: &str) -> String;
    /// Messages that keep the connection (and `open` contexts) alive.
    fn keepalive(&self, open: &[&str]) -> Vec<WsMessage>;
    /// The message to send before closing the socket, if any.
    fn goodbye(&self) -> Option<String>;
    /// Parses one text message (one message may carry audio and an end).
    fn parse(&self, text: &str) -> Vec<Incoming>;
    /// The error for a close frame from the vendor.
    fn close_error(&self, frame: Option<&CloseFrame>) -> ProviderError;
}

/// Timing of a websocket TTS session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WsTtsTiming {
    /// From a context's first text to its first audio, in ms.
    pub first_audio_timeout_ms: u64,
    /// Pause before re-opening a refused context, in ms.
    pub refusal_retry_ms: u64,
    /// Re-openings of a refused context before its error is reported.
    pub refusal_retries: u32,
    /// Interval of keep-alive messages when nothing else was sent, in ms.
    pub keepalive_ms: u64,
    /// Output rate of the PCM the vendor sends, in Hz.
    pub sample_rate_hz: u32,
    /// A context that has spoken all it was given and had no audio for this
    /// long may have expired at the vendor (Cartesia): later text goes to a
    /// fresh wire id. `None`: contexts do not expire this way.
    pub idle_rotate_ms: Option<u64>,
    /// Most contexts the vendor keeps open on one socket (ElevenLabs: 5).
    pub max_open_contexts: Option<usize>,
    /// How long a cancelled context still counts as open without its end, ms.
    pub close_grace_ms: u64,
}

impl WsTtsTiming {
    /// Timing with no expiry rotation and no open-context limit.
    pub(crate) fn new(first_audio_timeout_ms: u64, keepalive_ms: u64, sample_rate_hz: u32) -> Self {
        WsTtsTiming {
            first_audio_timeout_ms,
            refusal_retry_ms: 0,
            refusal_retries: 0,
            keepalive_ms,
            sample_rate_hz,
            idle_rotate_ms: None,
            max_open_contexts: None,
            close_grace_ms: 1_000,
        }
    }

    fn first_audio_timeout(&self) -> Duration {
        Duration::from_millis(self.first_audio_timeout_ms)
    }

    fn idle_rotate(&self) -> Option<Duration> {
        self.idle_rotate_ms.map(Duration::from_millis)
    }
}

/// Why the session task stops.
enum Stop {
    /// The engine closed the session or went away.
    Closed,
    /// The socket or the vendor failed.
    Failed(ProviderError),
}

/// The task behind one websocket TTS session.
pub(crate) struct WsTtsSession<W, S = VendorSocket> {
    wire: W,
    socket: S,
    backend: TtsBackend,
    timing: WsTtsTiming,
    contexts: Vec<Ctx>,
    closing: ClosingBook,
    last_sent: Instant,
}

impl<W: TtsWire, S: WsSocket> WsTtsSession<W, S> {
    pub(crate) fn new(wire: W, socket: S, backend: TtsBackend, timing: WsTtsTiming) -> Self {
        WsTtsSession {
            wire,
            socket,
            backend,
            timing,
            contexts: Vec::new(),
            closing: ClosingBook::default(),
            last_sent: Instant::now(),
        }
    }

    /// Runs until the engine closes the session or the socket fails; always
    /// ends with [`TtsEvent::Closed`] (if the engine still listens).
    pub(crate) async fn run(mut self) {
        let stop = loop {
            if let Err(stop) = self.turn().await {
                break stop;
            }
        };
        if let Stop::Failed(error) = stop {
            tracing::warn!(kind = ?error.kind(), %error, "tts session failed");
            let _ = self
                .backend
                .events
                .send(TtsEvent::Error { ctx: None, error })
                .await;
        } else {
            if let Some(goodbye) = self.wire.goodbye() {
                let _ = self.socket.send(WsMessage::text(goodbye)).await;
            }
            let _ = SinkExt::close(&mut self.socket).await;
        }
        let _ = self.backend.events.send(TtsEvent::Closed).await;
    }

    async fn turn(&mut self) -> Result<(), Stop> {
        let deadline = self.next_deadline();
        tokio::select! {
            biased;
            () = self.backend.cancels.cancelled() => self.on_cancel().await,
            input = self.backend.input.recv() => match input {
                None | Some(TtsInput::Close) => Err(Stop::Closed),
                Some(input) => self.on_input(input).await,
            },
            message = self.socket.next() => self.on_socket(message).await,
            () = tokio::time::sleep_until(deadline) => self.on_timer().await,
        }
    }

    fn next_deadline(&self) -> Instant {
        let keepalive = self.last_sent + Duration::from_millis(self.timing.keepalive_ms);
        let timeout = self.timing.first_audio_timeout();
        self.contexts
            .iter()
            .flat_map(|c| [c.retry_at, c.first_audio_deadline(timeout)])
            .flatten()
            .fold(keepalive, Instant::min)
    }

    async fn send(&mut self, message: WsMessage) -> Result<(), Stop> {
        self.last_sent = Instant::now();
        if self.socket.send(message).await.is_ok() {
            return Ok(());
        }
        Err(Stop::Failed(self.why_send_failed().await))
    }

    /// Why a send failed: the vendor's close frame when one is already
    /// waiting to be read ([`pending_close`]), else a plain disconnect.
    async fn why_send_failed(&mut self) -> ProviderError {
        match pending_close(&mut self.socket).await {
            Some(frame) => self.wire.close_error(frame.as_ref()),
            None => ProviderError::disconnected("websocket send failed"),
        }
    }

    async fn send_all(&mut self, messages: Vec<String>) -> Result<(), Stop> {
        for m in messages {
            self.send(WsMessage::text(m)).await?;
        }
        Ok(())
    }

    async fn emit(&mut self, event: TtsEvent) -> Result<(), Stop> {
        if event
            .ctx()
            .is_some_and(|c| self.backend.cancels.is_cancelled(c))
        {
            return Ok(());
        }
        self.backend
            .events
            .send(event)
            .await
            .map_err(|_| Stop::Closed)
    }

    /// When a context not yet open at the vendor may open: now, or when a
    /// cancelled one stops counting (rule 2 of [`super::ws_ctx`]).
    fn slot_free_at(&mut self, now: Instant) -> Option<Instant> {
        let max = self.timing.max_open_contexts?;
        let open = self.contexts.iter().filter(|c| c.opened).count();
        if open + self.closing.count(now) < max {
            return None;
        }
        // Without a closing one to wait for, wait one grace period.
        let grace = now + Duration::from_millis(self.timing.close_grace_ms);
        Some(self.closing.next_free().unwrap_or(grace))
    }

    /// A vendor context ended: contexts waiting for a slot check again now.
    fn wake_slot_waiters(&mut self) {
        let now = Instant::now();
        for c in self.contexts.iter_mut().filter(|c| c.waiting_slot) {
            c.retry_at = Some(now);
        }
    }

    fn position(&self, wire: &str) -> Option<usize> {
        self.contexts.iter().position(|c| c.owns(wire))
    }

    async fn on_cancel(&mut self) -> Result<(), Stop> {
        let mut cancelled = Vec::new();
        self.contexts.retain(|c| {
            let gone = self.backend.cancels.is_cancelled(c.id);
            if gone && c.retry_at.is_none() && c.opened {
                cancelled.push(c.wire.clone());
            }
            !gone
        });
        let until = Instant::now() + Duration::from_millis(self.timing.close_grace_ms);
        for wire in cancelled {
            let message = self.wire.cancel(&wire);
            self.send(WsMessage::text(message)).await?;
            self.closing.closed(wire, until);
        }
        Ok(())
    }

    async fn on_input(&mut self, input: TtsInput) -> Result<(), Stop> {
        match input {
            TtsInput::Start(id) => {
                if !self.backend.cancels.is_cancelled(id) {
                    self.contexts.push(Ctx::new(id));
                }
                Ok(())
            }
            TtsInput::Text { ctx, text } => self.on_text(ctx, text).await,
            TtsInput::Flush(ctx) => self.on_flush(ctx).await,
            // Close is handled by the caller; future inputs are ignored.
            _ => Ok(()),
        }
    }

    async fn on_text(&mut self, ctx: ContextId, text: String) -> Result<(), Stop> {
        let now = Instant::now();
        let idle = self.timing.idle_rotate();
        let Some(pos) = self.contexts.iter().position(|c| c.id == ctx) else {
            return Ok(());
        };
        let c = &mut self.contexts[pos];
        if c.flushed {
            return Ok(());
        }
        c.first_text_at.get_or_insert(now);
        if c.retry_at.is_some() {
            c.texts.push(text);
            return Ok(());
        }
        if c.idle_after_audio(idle, now) {
            tracing::debug!(ctx = %c.id, "tts context idle after its audio; continuing on a new id");
            c.next_wire(true);
        }
        if !self.contexts[pos].opened
            && let Some(at) = self.slot_free_at(now)
        {
            let c = &mut self.contexts[pos];
            tracing::debug!(ctx = %c.id, "tts context waits for a free vendor slot");
            c.retry_at = Some(at);
            c.waiting_slot = true;
            c.texts.push(text);
            return Ok(());
        }
        let c = &mut self.contexts[pos];
        let messages = self.wire.text(&c.wire, &text, !c.opened);
        c.sent_text();
        c.texts.push(text);
        self.send_all(messages).await
    }

    async fn on_flush(&mut self, ctx: ContextId) -> Result<(), Stop> {
        let now = Instant::now();
        let idle = self.timing.idle_rotate();
        let Some(pos) = self.contexts.iter().position(|c| c.id == ctx) else {
            return Ok(());
        };
        let c = &mut self.contexts[pos];
        if c.flushed {
            return Ok(());
        }
        // Nothing was said, or everything said is out and the vendor may
        // have expired the id: no vendor context to flush, no end to await.
        if (c.texts.is_empty() && !c.got_audio) || c.idle_after_audio(idle, now) {
            self.contexts.remove(pos);
            return self.emit(TtsEvent::Done { ctx }).await;
        }
        c.flushed = true;
        c.first_text_at.get_or_insert(now);
        let messages = c
            .retry_at
            .is_none()
            .then(|| self.wire.flush(&c.wire, !c.texts.is_empty()));
        self.send_all(messages.unwrap_or_default()).await
    }

    async fn on_socket(
        &mut self,
        message: Option<Result<WsMessage, tokio_tungstenite::tungstenite::Error>>,
    ) -> Result<(), Stop> {
        let text = match message {
            None | Some(Err(_)) => {
                return Err(Stop::Failed(ProviderError::disconnected(
                    "websocket dropped",
                )));
            }
            Some(Ok(WsMessage::Close(frame))) => {
                return Err(Stop::Failed(self.wire.close_error(frame.as_ref())));
            }
            Some(Ok(WsMessage::Text(text))) => text,
            Some(Ok(WsMessage::Binary(_))) => {
                return Err(Stop::Failed(ProviderError::protocol(
                    "unexpected binary message",
                )));
            }
            Some(Ok(_)) => return Ok(()), // ping, pong, raw frame
        };
        for incoming in self.wire.parse(&text) {
            self.on_incoming(incoming).await?;
        }
        Ok(())
    }

    async fn on_incoming(&mut self, incoming: Incoming) -> Result<(), Stop> {
        match incoming {
            Incoming::Audio { wire, pcm } => self.on_audio(&wire, &pcm).await,
            Incoming::Words { wire, words, from } => {
                let Some(pos) = self.position(&wire) else {
                    return Ok(());
                };
                let c = &self.contexts[pos];
                let ctx = c.id;
                let words = c.place_words(&wire, words, from, self.timing.sample_rate_hz);
                self.emit(TtsEvent::Words { ctx, words }).await
            }
            Incoming::Done { wire } => {
                self.wake_slot_waiters();
                self.closing.ended(&wire);
                let Some(pos) = self.contexts.iter().position(|c| c.wire == wire) else {
                    return Ok(());
                };
                let c = self.contexts.remove(pos);
                self.emit(TtsEvent::Done { ctx: c.id }).await
            }
            Incoming::ContextError {
                wire,
                error,
                refused,
            } => {
                self.wake_slot_waiters();
                if self.closing.ended(&wire) {
                    return Ok(());
                }
                self.on_context_error(&wire, error, refused).await
            }
            Incoming::SessionError(error) => Err(Stop::Failed(error)),
            Incoming::Ignore => Ok(()),
        }
    }

    async fn on_audio(&mut self, wire: &str, pcm: &[u8]) -> Result<(), Stop> {
        let Some(pos) = self.position(wire) else {
            return Ok(());
        };
        let c = &mut self.contexts[pos];
        let samples = pcm_s16le(&mut c.carry, pcm);
        c.got(samples.len(), Instant::now());
        let ctx = c.id;
        if samples.is_empty() {
            return Ok(());
        }
        let sample_rate_hz = self.timing.sample_rate_hz;
        self.emit(TtsEvent::Audio {
            ctx,
            samples,
            sample_rate_hz,
        })
        .await
    }

    async fn on_context_error(
        &mut self,
        wire: &str,
        error: ProviderError,
        refused: bool,
    ) -> Result<(), Stop> {
        let Some(pos) = self.contexts.iter().position(|c| c.wire == wire) else {
            return Ok(());
        };
        let c = &mut self.contexts[pos];
        if refused && !c.got_audio && c.attempt < self.timing.refusal_retries {
            c.attempt += 1;
            // A refused id is never reused: the vendor may have expired it.
            c.next_wire(false);
            c.retry_at = Some(Instant::now() + Duration::from_millis(self.timing.refusal_retry_ms));
            tracing::info!(ctx = %c.id, attempt = c.attempt, "tts context refused, re-opening");
            crate::retries::record(crate::retries::RetryKind::TtsContextRetry);
            return Ok(());
        }
        let c = self.contexts.remove(pos);
        self.emit(TtsEvent::Error {
            ctx: Some(c.id),
            error,
        })
        .await
    }

    async fn on_timer(&mut self) -> Result<(), Stop> {
        let now = Instant::now();
        let mut out = Vec::new();
        let mut timed_out = Vec::new();
        let timeout = self.timing.first_audio_timeout();
        for pos in 0..self.contexts.len() {
            let c = &self.contexts[pos];
            let opened = c.opened;
            if c.retry_at.is_some_and(|t| t <= now) {
                if !opened && let Some(at) = self.slot_free_at(now) {
                    self.contexts[pos].retry_at = Some(at);
                    self.contexts[pos].waiting_slot = true;
                    continue;
                }
                let c = &mut self.contexts[pos];
                c.retry_at = None;
                c.waiting_slot = false;
                for (k, text) in c.texts.iter().enumerate() {
                    out.extend(self.wire.text(&c.wire, text, k == 0));
                }
                if !c.texts.is_empty() {
                    c.sent_text();
                }
                if c.flushed {
                    out.extend(self.wire.flush(&c.wire, !c.texts.is_empty()));
                }
            } else if c.first_audio_deadline(timeout).is_some_and(|t| t <= now) {
                timed_out.push(c.id);
                if c.retry_at.is_none() && c.opened {
                    out.push(self.wire.cancel(&c.wire));
                }
            }
        }
        let until = now + Duration::from_millis(self.timing.close_grace_ms);
        for c in self.contexts.iter().filter(|c| timed_out.contains(&c.id)) {
            if c.opened && c.retry_at.is_none() {
                self.closing.closed(c.wire.clone(), until);
            }
        }
        self.contexts.retain(|c| !timed_out.contains(&c.id));
        let keepalive_due = self.last_sent + Duration::from_millis(self.timing.keepalive_ms) <= now;
        self.send_all(out).await?;
        for ctx in timed_out {
            let error = ProviderError::Timeout {
                waiting_for: "first audio",
                after_ms: self.timing.first_audio_timeout_ms,
            };
            self.emit(TtsEvent::Error {
                ctx: Some(ctx),
                error,
            })
            .await?;
        }
        if keepalive_due {
            let open: Vec<&str> = self
                .contexts
                .iter()
                .filter(|c| c.opened && c.retry_at.is_none())
                .map(|c| c.wire.as_str())
                .collect();
            let messages = self.wire.keepalive(&open);
            for m in messages {
                self.send(m).await?;
            }
            self.last_sent = now;
        }
        Ok(())
    }
}

/// Little-endian 16-bit samples of `bytes`, with an odd trailing byte kept in
/// `carry` for the next piece.
pub(crate) fn pcm_s16le(carry: &mut Option<u8>, bytes: &[u8]) -> Vec<i16> {
    let mut samples = Vec::with_capacity(bytes.len() / 2 + 1);
    let mut rest = bytes;
    if let Some(low) = carry.take() {
        match rest.split_first() {
            Some((&high, tail)) => {
                samples.push(i16::from_le_bytes([low, high]));
                rest = tail;
            }
            None => {
                *carry = Some(low);
                return samples;
            }
        }
    }
    let mut pairs = rest.chunks_exact(2);
    samples.extend(pairs.by_ref().map(|p| i16::from_le_bytes([p[0], p[1]])));
    if let [odd] = pairs.remainder() {
        *carry = Some(*odd);
    }
    samples
}

#[cfg(test)]
mod tests {
    use brisvox_core::Epoch;

    use super::*;
    use crate::TtsSession;
    use crate::elevenlabs::ElevenLabsWire;
    use crate::vendors::fake_socket::{FakeSocket, close};

    fn ctx() -> ContextId {
        ContextId::new(Epoch(1), 0)
    }

    /// An ElevenLabs session over `socket` with one context's Start, text
    /// and Flush queued before the task starts (it reads its inputs before
    /// its socket, so it reads nothing until a send fails): its events up to
    /// `Closed`, and what it sent.
    async fn run_over(socket: FakeSocket) -> Vec<TtsEvent> {
        let (mut session, backend) = TtsSession::channel();
        let sender = session.sender();
        sender.start_context(ctx()).await.unwrap();
        sender.send_text(ctx(), "Hello.").await.unwrap();
        sender.flush(ctx()).await.unwrap();
        let timing = WsTtsTiming::new(5_000, 10_000, 24_000);
        let task = tokio::spawn(WsTtsSession::new(ElevenLabsWire, socket, backend, timing).run());
        let mut events = Vec::new();
        while let Some(event) = session.recv().await {
            let closed = event == TtsEvent::Closed;
            events.push(event);
            if closed {
                break;
            }
        }
        task.await.unwrap();
        events
    }

    /// ElevenLabs refuses a bad key with a 1008 close after the first
    /// message; the flush's send fails before the session has read it. The
    /// session reports the close's meaning (an auth error), not "send failed".
    #[tokio::test]
    async fn a_failed_send_reports_the_close_frame_waiting_behind_it() {
        let (socket, sent) = FakeSocket::new(1, vec![close(1008, "Invalid API key")]);
        let events = run_over(socket).await;
        assert_eq!(
            events,
            [
                TtsEvent::Error {
                    ctx: None,
                    error: ProviderError::Auth { status: None }
                },
                TtsEvent::Closed
            ]
        );
        assert_eq!(sent.lock().unwrap().len(), 1, "only the text went out");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_send_without_a_close_is_a_disconnect() {
        let (socket, _) = FakeSocket::new(1, vec![]);
        let events = run_over(socket).await;
        assert_eq!(
            events,
            [
                TtsEvent::Error {
                    ctx: None,
                    error: ProviderError::disconnected("websocket send failed")
                },
                TtsEvent::Closed
            ]
        );
    }

    #[test]
    fn odd_pieces_join_across_messages() {
        let mut carry = None;
        assert_eq!(pcm_s16le(&mut carry, &[1, 0, 2]), vec![1]);
        assert_eq!(carry, Some(2));
        assert_eq!(pcm_s16le(&mut carry, &[1]), vec![0x0102]);
        assert_eq!(carry, None);
        assert_eq!(pcm_s16le(&mut carry, &[0xff, 0xff]), vec![-1]);
    }
}
