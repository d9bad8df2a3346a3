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
//! [`WsTtsTiming::refusal_retries`] times, replaying its text so far.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

use super::VendorSocket;
use crate::tts::{TtsBackend, TtsInput};
use crate::{ContextId, ProviderError, TtsEvent};

/// What a vendor message means to the session.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// PCM s16le bytes for a context.
    Audio { wire: String, pcm: Vec<u8> },
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
    /// Nothing for us (timestamps, flush acknowledgements).
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
}

struct Ctx {
    id: ContextId,
    wire: String,
    attempt: u32,
    texts: Vec<String>,
    flushed: bool,
    first_text_at: Option<Instant>,
    got_audio: bool,
    retry_at: Option<Instant>,
    carry: Option<u8>,
}

impl Ctx {
    fn wire_id(id: ContextId, attempt: u32) -> String {
        match attempt {
            0 => format!("brisvox-{}-{}", id.epoch.0, id.seq),
            n => format!("brisvox-{}-{}-r{n}", id.epoch.0, id.seq),
        }
    }

    fn first_audio_deadline(&self, timing: &WsTtsTiming) -> Option<Instant> {
        let ms = Duration::from_millis(timing.first_audio_timeout_ms);
        self.first_text_at
            .filter(|_| !self.got_audio)
            .map(|t| t + ms)
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
pub(crate) struct WsTtsSession<W> {
    wire: W,
    socket: VendorSocket,
    backend: TtsBackend,
    timing: WsTtsTiming,
    contexts: Vec<Ctx>,
    last_sent: Instant,
}

impl<W: TtsWire> WsTtsSession<W> {
    pub(crate) fn new(
        wire: W,
        socket: VendorSocket,
        backend: TtsBackend,
        timing: WsTtsTiming,
    ) -> Self {
        WsTtsSession {
            wire,
            socket,
            backend,
            timing,
            contexts: Vec::new(),
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
            let _ = self.socket.close(None).await;
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
        self.contexts
            .iter()
            .flat_map(|c| [c.retry_at, c.first_audio_deadline(&self.timing)])
            .flatten()
            .fold(keepalive, Instant::min)
    }

    async fn send(&mut self, message: WsMessage) -> Result<(), Stop> {
        self.last_sent = Instant::now();
        self.socket
            .send(message)
            .await
            .map_err(|_| Stop::Failed(ProviderError::disconnected("websocket send failed")))
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

    async fn on_cancel(&mut self) -> Result<(), Stop> {
        let mut cancelled = Vec::new();
        self.contexts.retain(|c| {
            let gone = self.backend.cancels.is_cancelled(c.id);
            if gone && c.retry_at.is_none() && !c.texts.is_empty() {
                cancelled.push(c.wire.clone());
            }
            !gone
        });
        for wire in cancelled {
            let message = self.wire.cancel(&wire);
            self.send(WsMessage::text(message)).await?;
        }
        Ok(())
    }

    async fn on_input(&mut self, input: TtsInput) -> Result<(), Stop> {
        match input {
            TtsInput::Start(id) => {
                if !self.backend.cancels.is_cancelled(id) {
                    self.contexts.push(Ctx {
                        id,
                        wire: Ctx::wire_id(id, 0),
                        attempt: 0,
                        texts: Vec::new(),
                        flushed: false,
                        first_text_at: None,
                        got_audio: false,
                        retry_at: None,
                        carry: None,
                    });
                }
                Ok(())
            }
            TtsInput::Text { ctx, text } => {
                let Some(c) = self.contexts.iter_mut().find(|c| c.id == ctx) else {
                    return Ok(());
                };
                let first = c.texts.is_empty();
                c.first_text_at.get_or_insert_with(Instant::now);
                let messages = (c.retry_at.is_none() && !c.flushed)
                    .then(|| self.wire.text(&c.wire, &text, first));
                c.texts.push(text);
                self.send_all(messages.unwrap_or_default()).await
            }
            TtsInput::Flush(ctx) => {
                let Some(c) = self.contexts.iter_mut().find(|c| c.id == ctx) else {
                    return Ok(());
                };
                if c.flushed {
                    return Ok(());
                }
                if c.texts.is_empty() {
                    // Nothing was said: no vendor context was opened, so
                    // there is nothing to flush and no end to wait for.
                    self.contexts.retain(|c| c.id != ctx);
                    return self.emit(TtsEvent::Done { ctx }).await;
                }
                c.flushed = true;
                c.first_text_at.get_or_insert_with(Instant::now);
                let messages = c
                    .retry_at
                    .is_none()
                    .then(|| self.wire.flush(&c.wire, !c.texts.is_empty()));
                self.send_all(messages.unwrap_or_default()).await
            }
            // Close is handled by the caller; future inputs are ignored.
            _ => Ok(()),
        }
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
            Incoming::Done { wire } => {
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
            } => self.on_context_error(&wire, error, refused).await,
            Incoming::SessionError(error) => Err(Stop::Failed(error)),
            Incoming::Ignore => Ok(()),
        }
    }

    async fn on_audio(&mut self, wire: &str, pcm: &[u8]) -> Result<(), Stop> {
        let Some(c) = self.contexts.iter_mut().find(|c| c.wire == wire) else {
            return Ok(());
        };
        c.got_audio = true;
        let samples = pcm_s16le(&mut c.carry, pcm);
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
            c.wire = Ctx::wire_id(c.id, c.attempt);
            c.retry_at = Some(Instant::now() + Duration::from_millis(self.timing.refusal_retry_ms));
            tracing::info!(ctx = %c.id, attempt = c.attempt, "tts context refused, re-opening");
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
        for c in &mut self.contexts {
            if c.retry_at.is_some_and(|t| t <= now) {
                c.retry_at = None;
                for (k, text) in c.texts.iter().enumerate() {
                    out.extend(self.wire.text(&c.wire, text, k == 0));
                }
                if c.flushed {
                    out.extend(self.wire.flush(&c.wire, !c.texts.is_empty()));
                }
            } else if c
                .first_audio_deadline(&self.timing)
                .is_some_and(|t| t <= now)
            {
                timed_out.push(c.id);
                if c.retry_at.is_none() {
                    out.push(self.wire.cancel(&c.wire));
                }
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
            let open: Vec<&str> = self.contexts.iter().map(|c| c.wire.as_str()).collect();
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
    use super::*;

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
