//! Deepgram Aura streaming TTS (`wss://api.deepgram.com/v1/speak`).
//!
//! One task per session owns one websocket. Each text chunk of a context is
//! one `{"type":"Speak","text":…}`; the context's flush is one
//! `{"type":"Flush"}`; Aura's binary linear16 audio becomes
//! [`TtsEvent::Audio`] at the rate asked for, and its `Flushed` becomes the
//! context's [`TtsEvent::Done`]. A cancel (barge-in) sends `{"type":"Clear"}`.
//!
//! # Contexts on a single stream
//!
//! Aura has no context ids: it speaks the text it was given, in order, on one
//! stream. The adapter keeps the live contexts in a queue in the order they
//! were started (the engine starts them in increasing order) and gives every
//! audio message to the oldest context not yet done; `Flushed` retires that
//! context. A cancel removes the retired contexts from the queue and, if Aura
//! had text of theirs, sends `Clear`; every binary message between that
//! `Clear` and Aura's `Cleared` is dropped (it is audio of the cleared text),
//! and audio after `Cleared` belongs to the next context. A context flushed
//! without any text is done at once (no Flush is sent, since Aura would have
//! nothing to answer).
//!
//! # Failures
//!
//! A refused upgrade is a typed error from `connect` (401/403 auth, 429 rate
//! limit). No audio and no `Flushed` within
//! [`DeepgramAuraOptions::first_audio_timeout`] of a flush fails that context
//! only (a `Clear` resynchronises the stream). An unreadable message or a
//! dropped socket ends the session (`Error` without a context, then `Closed`);
//! the engine opens a new session for the next response. `Warning` messages
//! (for instance Aura's limit of 20 flushes a minute) are logged.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{self, Message};

use super::protocol::{self, SpeakMessage};
use super::{DeepgramSocket, connect_socket, disconnected, push_param, sleep_until_opt};
use crate::error::redact_url;
use crate::tts::{TtsBackend, TtsInput};
use crate::vendors::{WsSocket, pending_close};
use crate::{BoxFuture, ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession};

/// Deepgram's speak endpoint.
pub const DEEPGRAM_SPEAK_URL: &str = "wss://api.deepgram.com/v1/speak";

/// Settings of a Deepgram Aura provider. The session's [`TtsConfig`] gives the
/// sample rate and, through `voice` (or `model`), the Aura model name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeepgramAuraOptions {
    /// The speak endpoint (`wss://api.deepgram.com/v1/speak`; `ws://` for a local fake).
    pub url: String,
    /// Aura model (voice) used when the session names none (`aura-2-thalia-en`).
    pub model: String,
    /// Deadline for the websocket upgrade.
    pub connect_timeout: Duration,
    /// Deadline from a flush to the context's first audio (time to first byte).
    pub first_audio_timeout: Duration,
}

impl Default for DeepgramAuraOptions {
    fn default() -> Self {
        DeepgramAuraOptions {
            url: DEEPGRAM_SPEAK_URL.to_owned(),
            model: "aura-2-thalia-en".to_owned(),
            connect_timeout: Duration::from_secs(5),
            first_audio_timeout: Duration::from_secs(5),
        }
    }
}

/// Deepgram Aura streaming TTS. Cheap to clone; prints its key as `<redacted>`.
#[derive(Clone)]
pub struct DeepgramAura {
    key: Arc<str>,
    options: Arc<DeepgramAuraOptions>,
}

impl fmt::Debug for DeepgramAura {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeepgramAura")
            .field("key", &"<redacted>")
            .field("options", &self.options)
            .finish()
    }
}

impl DeepgramAura {
    /// A provider that authenticates with `api_key` (sent only in the
    /// `Authorization` header).
    pub fn new(api_key: impl Into<String>, options: DeepgramAuraOptions) -> Self {
        DeepgramAura {
            key: Arc::from(api_key.into()),
            options: Arc::new(options),
        }
    }

    /// The speak URL for `config` (no secret in it).
    pub fn speak_url(&self, config: &TtsConfig) -> String {
        let mut url = self.options.url.clone();
        let model = config
            .voice
            .as_deref()
            .or(config.model.as_deref())
            .unwrap_or(&self.options.model);
        push_param(&mut url, "model", model);
        push_param(&mut url, "encoding", "linear16");
        push_param(&mut url, "sample_rate", &config.sample_rate_hz.to_string());
        url
    }
}

impl TtsProvider for DeepgramAura {
    fn connect(&self, config: TtsConfig) -> BoxFuture<'_, Result<TtsSession, ProviderError>> {
        Box::pin(async move {
            let url = self.speak_url(&config);
            let socket = connect_socket(&url, &self.key, self.options.connect_timeout).await?;
            tracing::debug!(url = %redact_url(&url), "Deepgram speak socket open");
            let (session, backend) = TtsSession::channel();
            let task = SpeakTask::new(
                backend,
                socket,
                config.sample_rate_hz,
                self.options.first_audio_timeout,
            );
            tokio::spawn(task.run().in_current_span());
            Ok(session)
        })
    }
}

/// A context that Aura has not finished.
#[derive(Debug)]
struct Pending {
    ctx: ContextId,
    /// Some text of it was sent as Speak.
    spoke: bool,
    /// Its Flush was sent; `Flushed` will retire it.
    flushed: bool,
    /// When it fails for want of audio (set at the flush, cleared by audio).
    first_audio_deadline: Option<Instant>,
}

enum Step {
    Input(Option<TtsInput>),
    Cancelled,
    Socket(Option<Result<Message, tungstenite::Error>>),
    Timer,
}

/// Whether the task goes on.
#[derive(PartialEq)]
enum Flow {
    Continue,
    Stop,
}

struct SpeakTask<S = DeepgramSocket> {
    backend: TtsBackend,
    sink: SplitSink<S, Message>,
    stream: SplitStream<S>,
    sample_rate_hz: u32,
    first_audio_timeout: Duration,
    queue: VecDeque<Pending>,
    /// Clears sent whose `Cleared` has not come back: audio now is stale.
    clears_in_flight: u32,
    /// A byte left over from an odd-length binary message.
    odd_byte: Option<u8>,
}

impl<S: WsSocket> SpeakTask<S> {
    /// A task for a session over `socket`.
    fn new(
        backend: TtsBackend,
        socket: S,
        sample_rate_hz: u32,
        first_audio_timeout: Duration,
    ) -> Self {
        let (sink, stream) = socket.split();
        SpeakTask {
            backend,
            sink,
            stream,
            sample_rate_hz,
            first_audio_timeout,
            queue: VecDeque::new(),
            clears_in_flight: 0,
            odd_byte: None,
        }
    }

    async fn run(mut self) {
        loop {
            let deadline = self
                .queue
                .iter()
                .filter_map(|p| p.first_audio_deadline)
                .min();
            let step = tokio::select! {
                biased;
                () = self.backend.cancels.cancelled() => Step::Cancelled,
                input = self.backend.input.recv() => Step::Input(input),
                message = self.stream.next() => Step::Socket(message),
                () = sleep_until_opt(deadline) => Step::Timer,
            };
            let flow = match step {
                Step::Cancelled => self.on_cancel().await,
                Step::Input(Some(input)) => self.on_input(input).await,
                Step::Input(None) => self.on_close().await,
                Step::Socket(message) => self.on_socket(message).await,
                Step::Timer => self.on_timer().await,
            };
            if flow == Flow::Stop {
                break;
            }
        }
        let _ = self.backend.events.send(TtsEvent::Closed).await;
    }

    async fn emit(&mut self, event: TtsEvent) -> Flow {
        match self.backend.events.send(event).await {
            Ok(()) => Flow::Continue,
            // The engine dropped its receiver: nobody listens any more.
            Err(_) => Flow::Stop,
        }
    }

    async fn send(&mut self, text: String) -> Flow {
        if self.sink.send(Message::text(text)).await.is_ok() {
            return Flow::Continue;
        }
        // Deepgram may have closed with a code (`DATA-0001`, `NET-0001`)
        // the session has not read yet: that code is the error to report.
        let error = match pending_close(&mut self.stream).await {
            Some(frame) => disconnected(frame.as_ref()),
            None => ProviderError::disconnected("send failed"),
        };
        self.fail(error).await
    }

    async fn fail(&mut self, error: ProviderError) -> Flow {
        tracing::warn!(%error, "Deepgram speak session failed");
        let _ = self.emit(TtsEvent::Error { ctx: None, error }).await;
        let _ = self.sink.close().await;
        Flow::Stop
    }

    fn entry(&mut self, ctx: ContextId) -> Option<&mut Pending> {
        self.queue.iter_mut().find(|p| p.ctx == ctx)
    }

    async fn on_input(&mut self, input: TtsInput) -> Flow {
        match input {
            TtsInput::Start(ctx) => {
                if !self.backend.cancels.is_cancelled(ctx) {
                    self.queue.push_back(Pending {
                        ctx,
                        spoke: false,
                        flushed: false,
                        first_audio_deadline: None,
                    });
                }
                Flow::Continue
            }
            TtsInput::Text { ctx, text } => {
                let Some(entry) = self.entry(ctx) else {
                    return Flow::Continue;
                };
                entry.spoke = true;
                self.send(protocol::speak(&text)).await
            }
            TtsInput::Flush(ctx) => self.on_flush(ctx).await,
            TtsInput::Close => self.on_close().await,
        }
    }

    async fn on_flush(&mut self, ctx: ContextId) -> Flow {
        let timeout = self.first_audio_timeout;
        let Some(entry) = self.entry(ctx) else {
            return Flow::Continue;
        };
        if !entry.spoke {
            self.queue.retain(|p| p.ctx != ctx);
            return self.emit(TtsEvent::Done { ctx }).await;
        }
        entry.flushed = true;
        entry.first_audio_deadline = Some(Instant::now() + timeout);
        self.send(protocol::FLUSH.to_owned()).await
    }

    async fn on_close(&mut self) -> Flow {
        let _ = self.sink.send(Message::text(protocol::CLOSE)).await;
        let _ = self.sink.close().await;
        Flow::Stop
    }

    async fn on_cancel(&mut self) -> Flow {
        let Some(through) = self.backend.cancels.cancelled_through() else {
            return Flow::Continue;
        };
        let had_text = self.queue.iter().any(|p| p.ctx <= through && p.spoke);
        self.queue.retain(|p| p.ctx > through);
        if had_text {
            return self.clear().await;
        }
        Flow::Continue
    }

    /// Sends Clear; audio is dropped until its `Cleared`.
    async fn clear(&mut self) -> Flow {
        self.clears_in_flight += 1;
        self.odd_byte = None;
        self.send(protocol::CLEAR.to_owned()).await
    }

    async fn on_socket(&mut self, message: Option<Result<Message, tungstenite::Error>>) -> Flow {
        match message {
            Some(Ok(Message::Binary(bytes))) => self.on_audio(&bytes).await,
            Some(Ok(Message::Text(text))) => self.on_text(&text).await,
            Some(Ok(Message::Close(frame))) => self.fail(disconnected(frame.as_ref())).await,
            Some(Ok(_)) => Flow::Continue,
            Some(Err(_)) => {
                self.fail(ProviderError::disconnected("connection reset"))
                    .await
            }
            None => self.fail(disconnected(None)).await,
        }
    }

    async fn on_audio(&mut self, bytes: &[u8]) -> Flow {
        if self.clears_in_flight > 0 {
            return Flow::Continue;
        }
        let Some(front) = self.queue.front_mut() else {
            tracing::debug!("Aura audio with no live context; dropped");
            return Flow::Continue;
        };
        front.first_audio_deadline = None;
        let ctx = front.ctx;
        let mut samples = Vec::with_capacity(bytes.len() / 2 + 1);
        let bytes: std::borrow::Cow<'_, [u8]> = match self.odd_byte.take() {
            Some(b) => std::iter::once(b).chain(bytes.iter().copied()).collect(),
            None => bytes.into(),
        };
        self.odd_byte = protocol::pcm16_le_to_samples(&bytes, &mut samples);
        if samples.is_empty() {
            return Flow::Continue;
        }
        let event = TtsEvent::Audio {
            ctx,
            samples,
            sample_rate_hz: self.sample_rate_hz,
        };
        self.emit(event).await
    }

    async fn on_text(&mut self, text: &str) -> Flow {
        match protocol::parse_speak(text) {
            Ok(SpeakMessage::Flushed) => {
                if self.clears_in_flight > 0 {
                    // The flush of a cleared context.
                    return Flow::Continue;
                }
                match self.queue.front() {
                    Some(front) if front.flushed => {
                        let ctx = front.ctx;
                        self.queue.pop_front();
                        self.odd_byte = None;
                        self.emit(TtsEvent::Done { ctx }).await
                    }
                    _ => {
                        tracing::debug!("Aura Flushed with no flushed context; ignored");
                        Flow::Continue
                    }
                }
            }
            Ok(SpeakMessage::Cleared) => {
                self.clears_in_flight = self.clears_in_flight.saturating_sub(1);
                Flow::Continue
            }
            Ok(SpeakMessage::Warning { description }) => {
                tracing::warn!(%description, "Deepgram Aura warning");
                Flow::Continue
            }
            Ok(SpeakMessage::Metadata | SpeakMessage::Other) => Flow::Continue,
            Err(error) => self.fail(error).await,
        }
    }

    async fn on_timer(&mut self) -> Flow {
        let now = Instant::now();
        let Some(late) = self
            .queue
            .iter()
            .find(|p| p.first_audio_deadline.is_some_and(|d| d <= now))
            .map(|p| p.ctx)
        else {
            return Flow::Continue;
        };
        self.queue.retain(|p| p.ctx != late);
        let error = ProviderError::Timeout {
            waiting_for: "first audio",
            after_ms: super::duration_ms(self.first_audio_timeout),
        };
        tracing::warn!(%error, ctx = %late, "Aura context timed out");
        if self
            .emit(TtsEvent::Error {
                ctx: Some(late),
                error,
            })
            .await
            == Flow::Stop
        {
            return Flow::Stop;
        }
        self.clear().await
    }
}

#[cfg(test)]
mod tests {
    use brisvox_core::Epoch;

    use super::*;
    use crate::vendors::fake_socket::{FakeSocket, close};

    /// Deepgram closed the socket with a code after the Speak; the Flush's
    /// send fails before the task has read the close (its Start, Speak and
    /// Flush were queued first, and it reads inputs before its socket). The
    /// session's error names Deepgram's code, not "send failed".
    #[tokio::test]
    async fn a_failed_send_reports_the_close_code_waiting_behind_it() {
        let (socket, sent) = FakeSocket::new(1, vec![close(1008, "DATA-0001")]);
        let (mut session, backend) = TtsSession::channel();
        let ctx = ContextId::new(Epoch(1), 0);
        session.sender().start_context(ctx).await.unwrap();
        session.sender().send_text(ctx, "Hello.").await.unwrap();
        session.sender().flush(ctx).await.unwrap();
        let task = SpeakTask::new(backend, socket, 24_000, Duration::from_secs(5));
        tokio::spawn(task.run());
        assert_eq!(
            session.recv().await,
            Some(TtsEvent::Error {
                ctx: None,
                error: ProviderError::Disconnected {
                    reason: "closed 1008 DATA-0001".into()
                }
            })
        );
        assert_eq!(session.recv().await, Some(TtsEvent::Closed));
        assert_eq!(
            *sent.lock().unwrap(),
            [Message::text(protocol::speak("Hello."))]
        );
    }
}
