//! Deepgram live streaming STT (`wss://api.deepgram.com/v1/listen`).
//!
//! One task per session owns the websocket. Frames go out as binary linear16
//! at the session's rate; `Results` come back as [`SttEvent::Interim`] or
//! [`SttEvent::Final`]; `SpeechStarted` and `UtteranceEnd` pass through;
//! `Metadata` is logged. [`SttSender::finalize`](crate::SttSender::finalize)
//! sends `{"type":"Finalize"}` and the final Deepgram marks `from_finalize`
//! is delivered with `from_finalize: true`. Deepgram answers a Finalize only
//! when it had audio buffered, so if no such final arrives within
//! [`DeepgramSttOptions::finalize_timeout`] the adapter answers with an empty
//! final (`from_finalize: true`): nothing more was pending.
//!
//! # Idle sockets and reconnects
//!
//! While no audio flows the task sends `{"type":"KeepAlive"}` every
//! [`DeepgramSttOptions::keepalive_interval`] (Deepgram closes a socket with
//! 1011 `NET-0001` after about 10 s without audio). If the socket drops anyway
//! (a close frame, a reset, no answer within
//! [`DeepgramSttOptions::first_result_timeout`]), the task reconnects without
//! ending the session: the engine keeps sending frames, which wait in the
//! replay buffer, and the new socket is first fed the audio not yet covered by
//! a final (so words in flight at the drop are transcribed), then a Finalize if
//! one was pending. A pending Finalize waits the long
//! [`DeepgramSttOptions::finalize_timeout`] from the drop (the new socket's
//! Deepgram has not ended any utterance: the short idle wait no longer
//! applies), and its wait starts again when it is re-sent.
//!
//! The replay buffer holds the audio sent since the end of the last final,
//! at most [`DeepgramSttOptions::reconnect_buffer_ms`]. Overflow policy: drop
//! the oldest samples (the newest speech matters most for the current turn);
//! drops are counted and logged. Reconnects stop after
//! [`DeepgramSttOptions::reconnect_attempts`] consecutive failures, or at once
//! on a refused key; then the session reports the error and closes.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::protocol::{self, ListenMessage, ListenResult};
use super::{DeepgramSocket, connect_socket, disconnected, push_param, sleep_until_opt};
use crate::error::redact_url;
use crate::stt::{SttBackend, SttInput};
use crate::{BoxFuture, ProviderError, SttConfig, SttEvent, SttProvider, SttSession, WordTiming};

/// Deepgram's listen endpoint.
pub const DEEPGRAM_LISTEN_URL: &str = "wss://api.deepgram.com/v1/listen";

/// Settings of a Deepgram live STT provider. The session's [`SttConfig`]
/// overrides `model` and `language` when it sets them, and gives the sample
/// rate and `interim_results`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeepgramSttOptions {
    /// The listen endpoint (`wss://api.deepgram.com/v1/listen`; `ws://` for a local fake).
    pub url: String,
    /// Model (`nova-3`).
    pub model: String,
    /// Language (`en`), or `None` for Deepgram's default.
    pub language: Option<String>,
    /// Deepgram's own endpointing silence, in ms, or `None` to turn it off.
    pub endpointing_ms: Option<u32>,
    /// Add punctuation and capitals.
    pub punctuate: bool,
    /// Format numbers, dates and so on.
    pub smart_format: bool,
    /// Send `UtteranceEnd` after this many ms without words (needs interim
    /// results; Deepgram's minimum is 1000), or `None`.
    pub utterance_end_ms: Option<u32>,
    /// Ask for `SpeechStarted` events.
    pub vad_events: bool,
    /// Deadline for the websocket upgrade.
    pub connect_timeout: Duration,
    /// Deadline for the first message of a socket after its first audio
    /// (time to first byte); past it the socket counts as dead and is replaced.
    pub first_result_timeout: Duration,
    /// How long to wait for the final that answers a Finalize while interim
    /// text is pending (Deepgram holds audio it has not finalised).
    pub finalize_timeout: Duration,
    /// How long to wait when Deepgram's own endpointing already ended the
    /// utterance (a `speech_final` final or an `UtteranceEnd`, and no speech
    /// since): Deepgram's Finalize page
    /// says the `from_finalize` reply "is not guaranteed if there is no
    /// significant amount of audio data to process"
    /// (<https://developers.deepgram.com/docs/finalize>).
    pub finalize_idle_timeout: Duration,
    /// KeepAlive period while no audio is sent.
    pub keepalive_interval: Duration,
    /// Consecutive reconnect attempts before the session gives up.
    pub reconnect_attempts: u32,
    /// Bound of the replay buffer (audio not yet covered by a final), in ms.
    pub reconnect_buffer_ms: u32,
    /// Vocabulary to boost: one `keyterm` query parameter each. Nova-3 takes
    /// Keyterm Prompting, not `keywords` ("Keyterm Prompting is only available
    /// for ... the Nova-3 Model. To boost recognition of keywords using another
    /// Deepgram model, use the Keywords feature",
    /// <https://developers.deepgram.com/docs/keyterms>).
    pub keyterms: Vec<String>,
}

impl Default for DeepgramSttOptions {
    fn default() -> Self {
        DeepgramSttOptions {
            url: DEEPGRAM_LISTEN_URL.to_owned(),
            model: "nova-3".to_owned(),
            language: Some("en".to_owned()),
            endpointing_ms: Some(300),
            punctuate: true,
            smart_format: true,
            utterance_end_ms: Some(1000),
            vad_events: true,
            connect_timeout: Duration::from_secs(5),
            first_result_timeout: Duration::from_secs(5),
            finalize_timeout: Duration::from_millis(1500),
            finalize_idle_timeout: Duration::from_millis(300),
            keepalive_interval: Duration::from_secs(4),
            reconnect_attempts: 3,
            reconnect_buffer_ms: 5000,
            keyterms: Vec::new(),
        }
    }
}

/// Deepgram live STT. Cheap to clone; prints its key as `<redacted>`.
#[derive(Clone)]
pub struct DeepgramStt {
    key: Arc<str>,
    options: Arc<DeepgramSttOptions>,
}

impl fmt::Debug for DeepgramStt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeepgramStt")
            .field("key", &"<redacted>")
            .field("options", &self.options)
            .finish()
    }
}

impl DeepgramStt {
    /// A provider that authenticates with `api_key` (sent only in the
    /// `Authorization` header).
    pub fn new(api_key: impl Into<String>, options: DeepgramSttOptions) -> Self {
        DeepgramStt {
            key: Arc::from(api_key.into()),
            options: Arc::new(options),
        }
    }

    /// The listen URL for `config` (no secret in it).
    pub fn listen_url(&self, config: &SttConfig) -> String {
        let o = &self.options;
        let mut url = o.url.clone();
        let model = config.model.as_deref().unwrap_or(&o.model);
        push_param(&mut url, "model", model);
        if let Some(language) = config.language.as_deref().or(o.language.as_deref()) {
            push_param(&mut url, "language", language);
        }
        push_param(&mut url, "encoding", "linear16");
        push_param(&mut url, "sample_rate", &config.sample_rate_hz.to_string());
        push_param(&mut url, "channels", "1");
        push_param(
            &mut url,
            "interim_results",
            bool_str(config.interim_results),
        );
        match o.endpointing_ms {
            Some(ms) => push_param(&mut url, "endpointing", &ms.to_string()),
            None => push_param(&mut url, "endpointing", "false"),
        }
        push_param(&mut url, "punctuate", bool_str(o.punctuate));
        push_param(&mut url, "smart_format", bool_str(o.smart_format));
        if let (Some(ms), true) = (o.utterance_end_ms, config.interim_results) {
            push_param(&mut url, "utterance_end_ms", &ms.to_string());
        }
        push_param(&mut url, "vad_events", bool_str(o.vad_events));
        for term in o.keyterms.iter().filter(|t| !t.trim().is_empty()) {
            push_param(&mut url, "keyterm", term.trim());
        }
        url
    }
}

fn bool_str(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

impl SttProvider for DeepgramStt {
    fn connect(&self, config: SttConfig) -> BoxFuture<'_, Result<SttSession, ProviderError>> {
        Box::pin(async move {
            let url: Arc<str> = Arc::from(self.listen_url(&config));
            let socket = connect_socket(&url, &self.key, self.options.connect_timeout).await?;
            tracing::debug!(url = %redact_url(&url), "Deepgram listen socket open");
            let (session, backend) = SttSession::channel();
            let task = ListenTask::new(self, url, config, backend, socket);
            tokio::spawn(task.run().in_current_span());
            Ok(session)
        })
    }
}

/// Audio sent since the end of the last final: replayed into a new socket.
#[derive(Debug)]
struct ReplayBuffer {
    samples: VecDeque<i16>,
    /// Stream position (in samples since the session began) of `samples[0]`.
    front_abs: u64,
    cap: usize,
    dropped: u64,
}

impl ReplayBuffer {
    fn new(cap: usize) -> Self {
        ReplayBuffer {
            samples: VecDeque::new(),
            front_abs: 0,
            cap,
            dropped: 0,
        }
    }

    /// Appends samples, dropping the oldest past the cap; returns how many were dropped.
    fn push(&mut self, samples: &[i16]) -> usize {
        self.samples.extend(samples.iter().copied());
        let over = self.samples.len().saturating_sub(self.cap);
        self.samples.drain(..over);
        self.front_abs += over as u64;
        self.dropped += over as u64;
        over
    }

    /// Forgets everything before stream position `abs` (covered by a final).
    fn trim_through(&mut self, abs: u64) {
        let n = abs
            .saturating_sub(self.front_abs)
            .min(self.samples.len() as u64);
        // Cannot truncate: n <= samples.len(), a usize.
        self.samples.drain(..n as usize);
        self.front_abs += n;
    }
}

type ConnectFuture =
    Pin<Box<dyn Future<Output = Result<Box<DeepgramSocket>, ProviderError>> + Send>>;

/// The state of the websocket.
enum Link {
    Up {
        sink: SplitSink<DeepgramSocket, Message>,
        stream: SplitStream<DeepgramSocket>,
    },
    /// Waiting before the next attempt.
    Waiting {
        retry_at: Instant,
    },
    Connecting(ConnectFuture),
    /// Closing or gone.
    Down,
}

enum LinkEvent {
    Message(Option<Result<Message, tokio_tungstenite::tungstenite::Error>>),
    Connected(Result<Box<DeepgramSocket>, ProviderError>),
}

/// Waits for the next thing the link has to say.
///
/// # Cancel safety
///
/// Cancel safe: the stream and the pending connect are kept in `link`.
async fn next_link_event(link: &mut Link) -> LinkEvent {
    match link {
        Link::Up { stream, .. } => LinkEvent::Message(stream.next().await),
        Link::Connecting(attempt) => LinkEvent::Connected(attempt.await),
        Link::Waiting { .. } | Link::Down => std::future::pending().await,
    }
}

enum Step {
    Input(Option<SttInput>),
    Link(LinkEvent),
    Timer,
}

/// What a handler decided about the session.
#[derive(PartialEq)]
enum Flow {
    Continue,
    Stop,
}

struct ListenTask {
    backend: SttBackend,
    key: Arc<str>,
    url: Arc<str>,
    options: Arc<DeepgramSttOptions>,
    sample_rate_hz: u32,
    interim_results: bool,
    link: Link,
    replay: ReplayBuffer,
    /// Stream position of the current socket's time zero.
    link_base_abs: u64,
    attempts: u32,
    pending_finalizes: u32,
    /// Finalizes answered empty on time-out whose late reply is still due.
    stale_finalizes: u32,
    /// Deepgram's endpointing ended the utterance (`speech_final` or
    /// `UtteranceEnd`) and no speech was heard since: a Finalize has little
    /// or nothing to answer.
    endpointed: bool,
    finalize_deadline: Option<Instant>,
    first_result_deadline: Option<Instant>,
    heard_on_link: bool,
    last_sent: Instant,
    closing_deadline: Option<Instant>,
    bytes: Vec<u8>,
}

impl ListenTask {
    fn new(
        provider: &DeepgramStt,
        url: Arc<str>,
        config: SttConfig,
        backend: SttBackend,
        socket: DeepgramSocket,
    ) -> Self {
        let (sink, stream) = socket.split();
        let cap = u64::from(provider.options.reconnect_buffer_ms)
            * u64::from(config.sample_rate_hz)
            / 1000;
        ListenTask {
            backend,
            key: provider.key.clone(),
            url,
            options: provider.options.clone(),
            sample_rate_hz: config.sample_rate_hz,
            interim_results: config.interim_results,
            link: Link::Up { sink, stream },
            replay: ReplayBuffer::new(usize::try_from(cap).unwrap_or(usize::MAX)),
            link_base_abs: 0,
            attempts: 0,
            pending_finalizes: 0,
            stale_finalizes: 0,
            endpointed: false,
            finalize_deadline: None,
            first_result_deadline: None,
            heard_on_link: false,
            last_sent: Instant::now(),
            closing_deadline: None,
            bytes: Vec::new(),
        }
    }

    async fn run(mut self) {
        loop {
            let deadline = self.next_deadline();
            let step = tokio::select! {
                input = self.backend.recv(), if self.closing_deadline.is_none() => Step::Input(input),
                event = next_link_event(&mut self.link) => Step::Link(event),
                () = sleep_until_opt(deadline) => Step::Timer,
            };
            let flow = match step {
                Step::Input(Some(SttInput::Audio(frame))) => self.on_audio(frame.samples()).await,
                Step::Input(Some(SttInput::Finalize)) => self.on_finalize().await,
                Step::Input(Some(SttInput::Close) | None) => self.on_close().await,
                Step::Link(LinkEvent::Message(message)) => self.on_message(message).await,
                Step::Link(LinkEvent::Connected(result)) => self.on_connected(result).await,
                Step::Timer => self.on_timer().await,
            };
            if flow == Flow::Stop {
                break;
            }
        }
        if let Link::Up { mut sink, .. } = std::mem::replace(&mut self.link, Link::Down) {
            let _ = sink.close().await;
        }
        let _ = self.backend.events.send(SttEvent::Closed).await;
    }

    fn next_deadline(&self) -> Option<Instant> {
        let keepalive = match self.link {
            Link::Up { .. } => Some(self.last_sent + self.options.keepalive_interval),
            _ => None,
        };
        let retry = match self.link {
            Link::Waiting { retry_at } => Some(retry_at),
            _ => None,
        };
        [
            keepalive,
            retry,
            self.finalize_deadline,
            self.first_result_deadline,
            self.closing_deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    async fn emit(&mut self, event: SttEvent) -> Flow {
        match self.backend.events.send(event).await {
            Ok(()) => Flow::Continue,
            // The engine dropped its receiver: nobody listens any more.
            Err(_) => Flow::Stop,
        }
    }

    /// Sends on the socket if it is up; a failed send takes the link down.
    async fn send(&mut self, message: Message) -> Flow {
        let Link::Up { sink, .. } = &mut self.link else {
            return Flow::Continue;
        };
        match sink.send(message).await {
            Ok(()) => {
                self.last_sent = Instant::now();
                Flow::Continue
            }
            Err(_) => {
                self.link_lost(ProviderError::disconnected("send failed"))
                    .await
            }
        }
    }

    async fn send_audio(&mut self, samples: &[i16]) -> Flow {
        self.bytes.clear();
        self.bytes
            .extend(samples.iter().flat_map(|s| s.to_le_bytes()));
        let payload = self.bytes.clone();
        if !self.heard_on_link && self.first_result_deadline.is_none() {
            self.first_result_deadline = Some(Instant::now() + self.options.first_result_timeout);
        }
        self.send(Message::Binary(payload.into())).await
    }

    async fn on_audio(&mut self, samples: &[i16]) -> Flow {
        let dropped_before = self.replay.dropped;
        if self.replay.push(samples) > 0 && dropped_before == 0 {
            // Logged once per session; the count is in the reconnect log line.
            tracing::warn!("Deepgram replay buffer full; dropping the oldest audio");
        }
        if matches!(self.link, Link::Up { .. }) {
            return self.send_audio(samples).await;
        }
        Flow::Continue
    }

    async fn on_finalize(&mut self) -> Flow {
        self.pending_finalizes += 1;
        if self.finalize_deadline.is_none() {
            self.finalize_deadline = Some(Instant::now() + self.finalize_wait());
        }
        self.send(Message::text(protocol::FINALIZE)).await
    }

    /// The wait for a `from_finalize` reply: short when Deepgram's endpointing
    /// already finalised the utterance, long otherwise.
    fn finalize_wait(&self) -> Duration {
        if self.endpointed {
            self.options.finalize_idle_timeout
        } else {
            self.options.finalize_timeout
        }
    }

    async fn on_close(&mut self) -> Flow {
        if !matches!(self.link, Link::Up { .. }) {
            return Flow::Stop;
        }
        self.closing_deadline = Some(Instant::now() + self.options.finalize_timeout);
        self.send(Message::text(protocol::CLOSE_STREAM)).await
    }

    async fn on_message(
        &mut self,
        message: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    ) -> Flow {
        let lost = match message {
            Some(Ok(Message::Text(text))) => {
                self.heard_on_link = true;
                self.first_result_deadline = None;
                // The link works again: a later drop starts a fresh budget
                // (the budget counts consecutive failures, not a call's drops).
                self.attempts = 0;
                return self.on_text(&text).await;
            }
            Some(Ok(Message::Close(frame))) => disconnected(frame.as_ref()),
            Some(Ok(_)) => return Flow::Continue,
            Some(Err(_)) => ProviderError::disconnected("connection reset"),
            None => disconnected(None),
        };
        if self.closing_deadline.is_some() {
            return Flow::Stop;
        }
        self.link_lost(lost).await
    }

    async fn on_text(&mut self, text: &str) -> Flow {
        match protocol::parse_listen(text) {
            Ok(ListenMessage::Results(result)) => self.on_result(result).await,
            Ok(ListenMessage::UtteranceEnd) => {
                self.endpointed = true;
                self.emit(SttEvent::UtteranceEnd).await
            }
            Ok(ListenMessage::SpeechStarted) => {
                self.endpointed = false;
                self.emit(SttEvent::SpeechStarted).await
            }
            Ok(ListenMessage::Metadata { request_id }) => {
                tracing::debug!(?request_id, "Deepgram metadata");
                Flow::Continue
            }
            Ok(ListenMessage::Other) => Flow::Continue,
            Err(error) => {
                tracing::warn!(%error, "Deepgram sent an unreadable message");
                self.emit(SttEvent::Error(error)).await
            }
        }
    }

    async fn on_result(&mut self, r: ListenResult) -> Flow {
        if r.is_final {
            let end_s = (r.start_s + r.duration_s).max(0.0);
            // Seconds of stream to samples; float to int saturates, and a
            // stream is far shorter than u64::MAX samples.
            let end = (end_s * f64::from(self.sample_rate_hz)).round() as u64;
            self.replay.trim_through(self.link_base_abs + end);
        }
        if !r.is_final {
            // `speech_final` marks Deepgram's endpoint even on a result that
            // is not final (Deepgram's Endpointing page shows one).
            self.endpointed = r.speech_final || (self.endpointed && r.transcript.is_empty());
            if self.interim_results && !r.transcript.is_empty() {
                return self.emit(SttEvent::Interim { text: r.transcript }).await;
            }
            return Flow::Continue;
        }
        self.endpointed = r.speech_final;
        let answers_finalize = r.from_finalize && self.pending_finalizes > 0;
        if answers_finalize {
            self.pending_finalizes -= 1;
            self.finalize_deadline = (self.pending_finalizes > 0)
                .then(|| Instant::now() + self.options.finalize_timeout);
        } else if r.from_finalize && self.stale_finalizes > 0 {
            // The reply to a finalize already answered empty: its turn has
            // ended, so its words must not open the next one.
            self.stale_finalizes -= 1;
            tracing::info!(
                words = r.words.len(),
                "late from_finalize final after its finalize was answered; dropped"
            );
            return Flow::Continue;
        }
        if r.transcript.is_empty() && !answers_finalize {
            return Flow::Continue;
        }
        if !r.words.is_empty() {
            let origin_ms = self.link_base_abs * 1000 / u64::from(self.sample_rate_hz.max(1));
            let words = r
                .words
                .into_iter()
                .map(|(w, start, end)| WordTiming::from_secs(w, origin_ms, start, end))
                .collect();
            if self.emit(SttEvent::Words(words)).await == Flow::Stop {
                return Flow::Stop;
            }
        }
        self.emit(SttEvent::Final {
            text: r.transcript,
            confidence: r.confidence,
            from_finalize: answers_finalize,
        })
        .await
    }

    async fn on_timer(&mut self) -> Flow {
        let now = Instant::now();
        if self.closing_deadline.is_some_and(|d| d <= now) {
            return Flow::Stop;
        }
        if let Link::Waiting { retry_at } = self.link
            && retry_at <= now
        {
            let (url, key, timeout) = (
                self.url.clone(),
                self.key.clone(),
                self.options.connect_timeout,
            );
            self.link = Link::Connecting(Box::pin(async move {
                connect_socket(&url, &key, timeout).await.map(Box::new)
            }));
        }
        if self.finalize_deadline.is_some_and(|d| d <= now) {
            tracing::debug!("no from_finalize final in time; answering the finalize empty");
            self.finalize_deadline = None;
            self.stale_finalizes += self.pending_finalizes;
            for _ in 0..std::mem::take(&mut self.pending_finalizes) {
                let empty = SttEvent::Final {
                    text: String::new(),
                    confidence: None,
                    from_finalize: true,
                };
                if self.emit(empty).await == Flow::Stop {
                    return Flow::Stop;
                }
            }
        }
        if self.first_result_deadline.is_some_and(|d| d <= now) {
            self.first_result_deadline = None;
            let error = ProviderError::Timeout {
                waiting_for: "first result",
                after_ms: super::duration_ms(self.options.first_result_timeout),
            };
            if self.emit(SttEvent::Error(error.clone())).await == Flow::Stop {
                return Flow::Stop;
            }
            return self.link_lost(error).await;
        }
        if matches!(self.link, Link::Up { .. })
            && self.last_sent + self.options.keepalive_interval <= now
        {
            return self.send(Message::text(protocol::KEEP_ALIVE)).await;
        }
        Flow::Continue
    }

    /// The socket is gone: schedule a reconnect, or give up.
    async fn link_lost(&mut self, error: ProviderError) -> Flow {
        self.link = Link::Down;
        self.first_result_deadline = None;
        // The next socket has ended no utterance: a pending Finalize waits the
        // long wait (its audio is replayed), counted from the drop.
        self.endpointed = false;
        if self.pending_finalizes > 0 {
            self.finalize_deadline = Some(Instant::now() + self.options.finalize_timeout);
        }
        self.attempts += 1;
        if self.attempts > self.options.reconnect_attempts {
            return self.fail(error).await;
        }
        tracing::warn!(%error, attempt = self.attempts, "Deepgram listen socket lost; reconnecting");
        crate::retries::record(crate::retries::RetryKind::SttReconnect);
        let backoff = match self.attempts {
            1 => Duration::ZERO,
            2 => Duration::from_millis(250),
            _ => Duration::from_secs(1),
        };
        self.link = Link::Waiting {
            retry_at: Instant::now() + backoff,
        };
        Flow::Continue
    }

    async fn on_connected(&mut self, result: Result<Box<DeepgramSocket>, ProviderError>) -> Flow {
        let socket = match result {
            Ok(socket) => socket,
            Err(error) if !error.is_retryable() => return self.fail(error).await,
            Err(error) => return self.link_lost(error).await,
        };
        let (sink, stream) = (*socket).split();
        self.link = Link::Up { sink, stream };
        self.heard_on_link = false;
        self.link_base_abs = self.replay.front_abs;
        tracing::info!(
            replay_ms =
                self.replay.samples.len() as u64 * 1000 / u64::from(self.sample_rate_hz.max(1)),
            dropped_samples = self.replay.dropped,
            "Deepgram listen socket reconnected"
        );
        let replay: Vec<i16> = self.replay.samples.iter().copied().collect();
        for chunk in replay.chunks(self.sample_rate_hz as usize / 10 + 1) {
            if self.send_audio(chunk).await == Flow::Stop || !matches!(self.link, Link::Up { .. }) {
                return Flow::Continue;
            }
        }
        if self.pending_finalizes > 0 {
            // Its reply comes from this socket: the wait starts now.
            self.finalize_deadline = Some(Instant::now() + self.finalize_wait());
            return self.send(Message::text(protocol::FINALIZE)).await;
        }
        Flow::Continue
    }

    /// Reports `error` and ends the session.
    async fn fail(&mut self, error: ProviderError) -> Flow {
        tracing::warn!(%error, "Deepgram listen session failed");
        let _ = self.emit(SttEvent::Error(error)).await;
        Flow::Stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_drops_the_oldest_past_its_cap_and_trims_on_finals() {
        let mut r = ReplayBuffer::new(5);
        assert_eq!(r.push(&[1, 2, 3]), 0);
        assert_eq!(r.push(&[4, 5, 6, 7]), 2);
        assert_eq!(r.samples, [3, 4, 5, 6, 7]);
        assert_eq!(r.front_abs, 2);
        r.trim_through(4);
        assert_eq!(r.samples, [5, 6, 7]);
        r.trim_through(1);
        assert_eq!(r.samples, [5, 6, 7]);
        r.trim_through(100);
        assert!(r.samples.is_empty());
        assert_eq!(r.front_abs, 7);
    }

    #[test]
    fn the_url_carries_the_options_and_never_the_key() {
        let stt = DeepgramStt::new("sekrit-key", DeepgramSttOptions::default());
        let url = stt.listen_url(&SttConfig::default());
        assert_eq!(
            url,
            "wss://api.deepgram.com/v1/listen?model=nova-3&language=en&encoding=linear16\
             &sample_rate=16000&channels=1&interim_results=true&endpointing=300\
             &punctuate=true&smart_format=true&utterance_end_ms=1000&vad_events=true"
        );
        assert!(!format!("{stt:?}").contains("sekrit"));
    }
}
