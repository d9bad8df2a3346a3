//! The mock TTS: a tone whose length follows the text, on tokio time.
//!
//! Each session is one task. A context's first audio comes a sampled
//! first-byte delay after its first text; then a chunk of
//! [`MockTtsConfig::chunk_ms`] of audio every [`MockTtsConfig::chunk_interval_ms`]
//! until the text's audio ([`MockTtsConfig::ms_per_char`] per character) is
//! spoken; `Done` follows the last chunk once the context is flushed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::Instrument as _;

use super::lock;
use std::time::Duration;

use brisvox_core::gate::Gated;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{DetRng, Fault, FaultPlan, Latency, streams, wait_until};
use crate::tts::{TtsBackend, TtsCancels, TtsInput};
use crate::{BoxFuture, ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession};

/// Contexts a mock session keeps open at once; a start beyond it fails that context.
pub const MAX_OPEN_CONTEXTS: usize = 8;

/// How many texts [`MockTts::texts`] keeps (oldest dropped first).
pub const TTS_TEXT_HISTORY_CAPACITY: usize = 256;

/// Timing and sound of the mock's speech.
#[derive(Debug, Clone, PartialEq)]
pub struct MockTtsConfig {
    /// Seed of every latency and random fault draw.
    pub seed: u64,
    /// Delay of `connect`.
    pub connect: Latency,
    /// Delay from a context's first text to its first audio.
    pub first_byte: Latency,
    /// Audio per chunk, in milliseconds.
    pub chunk_ms: u32,
    /// Time between chunks, in milliseconds (below `chunk_ms`: faster than real time).
    pub chunk_interval_ms: u64,
    /// Audio per character of text, in milliseconds.
    pub ms_per_char: u32,
    /// Output rate in Hz, or `None` for the session's [`TtsConfig::sample_rate_hz`].
    pub sample_rate_hz: Option<u32>,
    /// Frequency of the tone, in Hz.
    pub tone_hz: f64,
    /// Peak amplitude of the tone (PCM16).
    pub amplitude: i16,
}

impl Default for MockTtsConfig {
    /// First byte at 150 ms, 40 ms chunks every 20 ms, 60 ms per character, a
    /// 220 Hz tone at the session's rate, instant connect, seed 0.
    fn default() -> Self {
        MockTtsConfig {
            seed: 0,
            connect: Latency::Fixed(0),
            first_byte: Latency::Fixed(150),
            chunk_ms: 40,
            chunk_interval_ms: 20,
            ms_per_char: 60,
            sample_rate_hz: None,
            tone_hz: 220.0,
            amplitude: 6_000,
        }
    }
}

/// What the mock has done, counted since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TtsStats {
    /// Sessions connected (refused ones not included).
    pub sessions: u64,
    /// Contexts started.
    pub contexts_started: u64,
    /// Contexts that ended with `Done`.
    pub contexts_done: u64,
    /// Contexts retired by a cancel before their end.
    pub contexts_cancelled: u64,
    /// Audio chunks sent.
    pub audio_chunks: u64,
}

#[derive(Default)]
struct Counters {
    connects: AtomicU64,
    sessions: AtomicU64,
    contexts_started: AtomicU64,
    contexts_done: AtomicU64,
    contexts_cancelled: AtomicU64,
    audio_chunks: AtomicU64,
}

#[derive(Default)]
struct Plans {
    connect: FaultPlan,
    context: FaultPlan,
}

struct Inner {
    config: Mutex<MockTtsConfig>,
    plans: Mutex<Plans>,
    counters: Counters,
    texts: Mutex<std::collections::VecDeque<(ContextId, String)>>,
}

/// A mock TTS provider. Cheap to clone; clones share configuration and counters.
///
/// Session `i` (0-based, in `connect` order) takes its connect delay and fault
/// from the seed and `i`; context `j` (0-based over all sessions, in start
/// order) its first-byte delay and fault from the seed and `j`.
#[derive(Clone)]
pub struct MockTts {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MockTts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockTts")
            .field("stats", &self.stats())
            .finish()
    }
}

impl MockTts {
    /// A mock with `config` and no faults.
    pub fn new(config: MockTtsConfig) -> Self {
        MockTts {
            inner: Arc::new(Inner {
                config: Mutex::new(config),
                plans: Mutex::new(Plans::default()),
                counters: Counters::default(),
                texts: Mutex::default(),
            }),
        }
    }

    /// Replaces the configuration (applies to sessions connected afterwards).
    pub fn set_config(&self, config: MockTtsConfig) {
        *lock(&self.inner.config) = config;
    }

    /// Plans failures of `connect` by session index (`Refuse`, `SlowStart`).
    pub fn set_connect_faults(&self, faults: FaultPlan) {
        lock(&self.inner.plans).connect = faults;
    }

    /// Plans failures by context index (every [`Fault`]).
    pub fn set_faults(&self, faults: FaultPlan) {
        lock(&self.inner.plans).context = faults;
    }

    /// The counters.
    pub fn stats(&self) -> TtsStats {
        let c = &self.inner.counters;
        TtsStats {
            sessions: c.sessions.load(Ordering::Relaxed),
            contexts_started: c.contexts_started.load(Ordering::Relaxed),
            contexts_done: c.contexts_done.load(Ordering::Relaxed),
            contexts_cancelled: c.contexts_cancelled.load(Ordering::Relaxed),
            audio_chunks: c.audio_chunks.load(Ordering::Relaxed),
        }
    }

    /// The last [`TTS_TEXT_HISTORY_CAPACITY`] texts sent to a context of any
    /// session, oldest first, with their context.
    pub fn texts(&self) -> Vec<(ContextId, String)> {
        lock(&self.inner.texts).iter().cloned().collect()
    }

    /// The first-byte delay context `index` draws (before any fault), for tests.
    pub fn first_byte_delay(&self, index: u64) -> Duration {
        let config = lock(&self.inner.config);
        let mut rng = DetRng::for_stream(config.seed, streams::TTS_FIRST_BYTE, index);
        config.first_byte.sample(&mut rng)
    }

    async fn open(self, config: TtsConfig) -> Result<TtsSession, ProviderError> {
        let index = self.inner.counters.connects.fetch_add(1, Ordering::Relaxed);
        let mock = lock(&self.inner.config).clone();
        let fault = lock(&self.inner.plans).connect.fault_for(mock.seed, index);
        let mut rng = DetRng::for_stream(mock.seed, streams::CONNECT, index);
        let mut delay = mock.connect.sample(&mut rng);
        if let Some(fault) = &fault {
            delay = fault.first_delay(delay);
        }
        wait_until(Instant::now() + delay).await;
        if let Some(Fault::Refuse(error)) = fault {
            return Err(error);
        }
        self.inner.counters.sessions.fetch_add(1, Ordering::Relaxed);
        let (session, backend) = TtsSession::channel();
        let rate = mock.sample_rate_hz.unwrap_or(config.sample_rate_hz).max(1);
        let state = SessionState {
            mock,
            rate,
            inner: self.inner.clone(),
            open: Vec::with_capacity(MAX_OPEN_CONTEXTS),
        };
        let actor = SessionActor { backend, state };
        tokio::spawn(actor.run().in_current_span());
        Ok(session)
    }
}

impl Default for MockTts {
    fn default() -> Self {
        Self::new(MockTtsConfig::default())
    }
}

impl TtsProvider for MockTts {
    fn connect(&self, config: TtsConfig) -> BoxFuture<'_, Result<TtsSession, ProviderError>> {
        Box::pin(self.clone().open(config))
    }
}

/// One open context.
struct OpenContext {
    id: ContextId,
    index: u64,
    fault: Option<Fault>,
    /// Audio still to speak for the text received, in milliseconds.
    owed_ms: u64,
    flushed: bool,
    /// When the next chunk (or `Done`, or the planned failure) is due, once text came.
    next_at: Option<Instant>,
    chunks_sent: u32,
    samples_sent: u64,
    stalled: bool,
}

/// What a due context does next.
enum Step {
    Chunk,
    Done,
    Fail(ProviderError),
    Disconnect,
    Stall,
}

impl OpenContext {
    fn due_at(&self) -> Option<Instant> {
        if self.stalled {
            return None;
        }
        match self.fault {
            // A refused context fails as soon as it starts.
            Some(Fault::Refuse(_)) => return Some(Instant::now()),
            _ if self.owed_ms > 0 => return self.next_at,
            _ => {}
        }
        // Nothing owed: `Done` is due as soon as the context is flushed.
        self.flushed.then(Instant::now)
    }

    fn step(&self) -> Step {
        let sent = self.chunks_sent;
        match &self.fault {
            Some(Fault::Refuse(error)) => return Step::Fail(error.clone()),
            Some(Fault::FailAfter { items, error }) if sent >= *items => {
                return Step::Fail(error.clone());
            }
            Some(Fault::DisconnectAfter { items }) if sent >= *items => return Step::Disconnect,
            Some(Fault::StallAfter { items }) if sent >= *items => return Step::Stall,
            _ => {}
        }
        if self.owed_ms > 0 {
            Step::Chunk
        } else {
            Step::Done
        }
    }
}

/// The task behind one mock session: its channel ends and its state, apart so
/// that a permit on the event queue can be held while the state changes.
struct SessionActor {
    backend: TtsBackend,
    state: SessionState,
}

struct SessionState {
    mock: MockTtsConfig,
    rate: u32,
    inner: Arc<Inner>,
    open: Vec<OpenContext>,
}

impl SessionActor {
    async fn run(self) {
        let SessionActor {
            mut backend,
            mut state,
        } = self;
        let events = &backend.events;
        // Polled only once it woke, not at every chunk (see `brisvox_core::gate`).
        let mut gone = Gated::new(events.closed());
        loop {
            let due = state.next_due();
            let wait_due = async {
                let (i, at) = due?;
                wait_until(at).await;
                Some((i, events.reserve().await))
            };
            tokio::select! {
                biased;
                () = backend.cancels.cancelled() => state.retire_cancelled(&backend.cancels),
                // No one reads events any more: nothing left to do.
                () = &mut gone => return,
                input = backend.input.recv() => {
                    if !state.on_input(input, events).await {
                        break;
                    }
                }
                Some((i, permit)) = wait_due => {
                    let Ok(permit) = permit else { return };
                    if !state.on_due(i, permit) {
                        break;
                    }
                }
            }
        }
        // The engine may be gone already; there is no one else to tell.
        let _ = backend.events.send(TtsEvent::Closed).await;
    }
}

impl SessionState {
    fn next_due(&self) -> Option<(usize, Instant)> {
        let due = self.open.iter().enumerate();
        due.filter_map(|(i, c)| Some((i, c.due_at()?)))
            .min_by_key(|(_, at)| *at)
    }

    fn retire_cancelled(&mut self, cancels: &TtsCancels) {
        let before = self.open.len();
        self.open.retain(|c| !cancels.is_cancelled(c.id));
        let retired = (before - self.open.len()) as u64;
        let counters = &self.inner.counters;
        counters
            .contexts_cancelled
            .fetch_add(retired, Ordering::Relaxed);
    }

    fn record_text(&self, ctx: ContextId, text: &str) {
        let mut texts = lock(&self.inner.texts);
        if texts.len() == TTS_TEXT_HISTORY_CAPACITY {
            texts.pop_front();
        }
        texts.push_back((ctx, text.to_owned()));
    }

    /// Handles one input; false when the session ends.
    async fn on_input(&mut self, input: Option<TtsInput>, events: &mpsc::Sender<TtsEvent>) -> bool {
        match input {
            None | Some(TtsInput::Close) => return false,
            Some(TtsInput::Start(id)) => return self.start(id, events).await,
            Some(TtsInput::Text { ctx, text }) => {
                self.record_text(ctx, &text);
                let ms_per_char = u64::from(self.mock.ms_per_char);
                let Some(i) = self.open.iter().position(|c| c.id == ctx) else {
                    return true;
                };
                if self.open[i].next_at.is_none() {
                    let delay = self.first_byte(&self.open[i]);
                    self.open[i].next_at = Some(Instant::now() + delay);
                }
                self.open[i].owed_ms += text.chars().count() as u64 * ms_per_char;
            }
            Some(TtsInput::Flush(ctx)) => {
                if let Some(c) = self.open.iter_mut().find(|c| c.id == ctx) {
                    c.flushed = true;
                }
            }
        }
        true
    }

    async fn start(&mut self, id: ContextId, events: &mpsc::Sender<TtsEvent>) -> bool {
        if self.open.len() >= MAX_OPEN_CONTEXTS {
            let error = ProviderError::protocol("mock: too many open contexts");
            let event = TtsEvent::Error {
                ctx: Some(id),
                error,
            };
            return events.send(event).await.is_ok();
        }
        let counters = &self.inner.counters;
        let index = counters.contexts_started.fetch_add(1, Ordering::Relaxed);
        let fault = lock(&self.inner.plans)
            .context
            .fault_for(self.mock.seed, index);
        self.open.push(OpenContext {
            id,
            index,
            fault,
            owed_ms: 0,
            flushed: false,
            next_at: None,
            chunks_sent: 0,
            samples_sent: 0,
            stalled: false,
        });
        true
    }

    fn first_byte(&self, c: &OpenContext) -> Duration {
        let mut rng = DetRng::for_stream(self.mock.seed, streams::TTS_FIRST_BYTE, c.index);
        let sampled = self.mock.first_byte.sample(&mut rng);
        c.fault.as_ref().map_or(sampled, |f| f.first_delay(sampled))
    }

    /// Acts for the due context `i`; false when the session ends.
    fn on_due(&mut self, i: usize, permit: mpsc::Permit<'_, TtsEvent>) -> bool {
        let counters = &self.inner.counters;
        match self.open[i].step() {
            Step::Chunk => {
                permit.send(self.open[i].chunk(self.rate, &self.mock));
                counters.audio_chunks.fetch_add(1, Ordering::Relaxed);
            }
            Step::Done => {
                let c = self.open.swap_remove(i);
                permit.send(TtsEvent::Done { ctx: c.id });
                counters.contexts_done.fetch_add(1, Ordering::Relaxed);
            }
            Step::Fail(error) => {
                let c = self.open.swap_remove(i);
                permit.send(TtsEvent::Error {
                    ctx: Some(c.id),
                    error,
                });
            }
            Step::Stall => self.open[i].stalled = true,
            Step::Disconnect => {
                let error = ProviderError::disconnected("mock: connection dropped");
                permit.send(TtsEvent::Error { ctx: None, error });
                return false;
            }
        }
        true
    }
}

impl OpenContext {
    /// The next chunk of the context's tone; advances its schedule.
    fn chunk(&mut self, rate: u32, mock: &MockTtsConfig) -> TtsEvent {
        let ms = self.owed_ms.min(u64::from(mock.chunk_ms));
        self.owed_ms -= ms;
        let n = u64::from(rate) * ms / 1000;
        let step = std::f64::consts::TAU * mock.tone_hz / f64::from(rate);
        let amplitude = f64::from(mock.amplitude);
        let first = self.samples_sent;
        let samples = (first..first + n)
            .map(|k| (amplitude * (step * k as f64).sin()) as i16)
            .collect();
        self.samples_sent += n;
        self.chunks_sent += 1;
        let next = self.next_at.unwrap_or_else(Instant::now);
        self.next_at = Some(next + Duration::from_millis(mock.chunk_interval_ms));
        TtsEvent::Audio {
            ctx: self.id,
            samples,
            sample_rate_hz: rate,
        }
    }
}
