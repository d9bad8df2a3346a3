//! The mock STT: scripted transcripts, interims from the audio, finals after finalize.
//!
//! Each session is one task. An utterance begins with the first frame after the
//! previous finalize (or, with [`MockSttConfig::interims_from_speech`], the
//! first frame whose RMS reaches [`MockSttConfig::speech_rms_threshold`]) and
//! takes the next scripted transcript. While its audio flows the session sends an
//! interim every [`MockSttConfig::interim_interval_ms`] of audio, revealing one
//! word per [`MockSttConfig::ms_per_word`] of audio: at most all words but the
//! last (lagging, the default) or all of them (converged). A finalize answers
//! with the whole transcript after a sampled delay; a finalize with no utterance
//! answers with an empty final.
//!
//! **Timed words** ([`MockStt::set_timed_words`]): instead of one scripted
//! transcript per utterance, the session knows when each word of a recording
//! is spoken (audio time from the session's first frame). Interims show the
//! words spoken so far since the last finalize, every
//! [`MockSttConfig::interim_interval_ms`] of audio; a finalize answers with
//! them after the sampled delay. This stands in for a streaming STT that
//! recognises every word when it is heard, for benchmarks on recorded speech
//! whose transcript is known.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::Instrument as _;

use super::lock;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{DetRng, Fault, FaultPlan, Latency, streams, wait_until};
use brisvox_core::gate::Gated;

use crate::stt::{SttAudio, SttBackend, SttInput};
use crate::{BoxFuture, ProviderError, SttConfig, SttEvent, SttProvider, SttSession};

/// Finalizes a mock session keeps waiting at once; more are answered with an error.
pub const MAX_PENDING_FINALS: usize = 8;

/// Stream index offset for the delay of a finalize that has no utterance.
const EMPTY_FINALIZE_STREAM_OFFSET: u64 = 1 << 40;

/// A function that gives utterance `index`'s transcript.
type Transcriber = Arc<dyn Fn(u64) -> String + Send + Sync>;

/// Timing and shape of the mock's transcripts.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSttConfig {
    /// Seed of every latency and random fault draw.
    pub seed: u64,
    /// Delay of `connect`.
    pub connect: Latency,
    /// Delay from a finalize to its final.
    pub final_latency: Latency,
    /// Audio between interims, in milliseconds.
    pub interim_interval_ms: u64,
    /// Audio per revealed word in interims, in milliseconds.
    pub ms_per_word: u64,
    /// Whether interims may reach the whole transcript (converged) or stop one
    /// word short of it (lagging).
    pub converged_interims: bool,
    /// Whether an utterance begins at the first loud frame rather than the first frame.
    pub interims_from_speech: bool,
    /// RMS (PCM16 units) from which a frame counts as speech.
    pub speech_rms_threshold: f64,
    /// Confidence reported with finals.
    pub confidence: Option<f32>,
    /// Whether to send [`SttEvent::SpeechStarted`] when an utterance begins.
    pub speech_started_events: bool,
    /// The transcript when no transcriber is set and the queue is empty.
    pub default_transcript: String,
}

impl Default for MockSttConfig {
    /// Final 150 ms after finalize, an interim per 300 ms of audio revealing a
    /// word per 250 ms, lagging, from the first frame, instant connect, seed 0.
    fn default() -> Self {
        MockSttConfig {
            seed: 0,
            connect: Latency::Fixed(0),
            final_latency: Latency::Fixed(150),
            interim_interval_ms: 300,
            ms_per_word: 250,
            converged_interims: false,
            interims_from_speech: false,
            speech_rms_threshold: 300.0,
            confidence: Some(0.95),
            speech_started_events: false,
            default_transcript: String::new(),
        }
    }
}

/// What the mock has done, counted since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SttStats {
    /// Sessions connected (refused ones not included).
    pub sessions: u64,
    /// Utterances begun.
    pub utterances: u64,
    /// Finalize requests received.
    pub finalizes: u64,
    /// Interims sent.
    pub interims: u64,
    /// Finals sent.
    pub finals: u64,
}

#[derive(Default)]
struct Counters {
    connects: AtomicU64,
    sessions: AtomicU64,
    utterances: AtomicU64,
    empty_finalizes: AtomicU64,
    finalizes: AtomicU64,
    interims: AtomicU64,
    finals: AtomicU64,
}

/// A word of a recording and when it has been spoken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedWord {
    /// Audio time from the session's first frame by which the word is spoken, ms.
    pub at_ms: u64,
    /// The word as the STT writes it (with its punctuation).
    pub text: String,
}

#[derive(Default)]
struct Script {
    transcripts: VecDeque<String>,
    timed: Option<Arc<Vec<TimedWord>>>,
    transcriber: Option<Transcriber>,
    connect_faults: FaultPlan,
    faults: FaultPlan,
}

struct Inner {
    config: Mutex<MockSttConfig>,
    script: Mutex<Script>,
    counters: Counters,
}

/// A mock STT provider. Cheap to clone; clones share script and counters.
///
/// Configuration is read when a session connects; the transcript queue is read
/// when an utterance begins. Session `i` takes its connect delay and fault
/// from the seed and `i`; utterance `j` (0-based over all sessions, in order
/// of beginning) its final delay and fault from the seed and `j`.
#[derive(Clone)]
pub struct MockStt {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MockStt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockStt")
            .field("stats", &self.stats())
            .finish()
    }
}

impl MockStt {
    /// A mock with `config`, no script and no faults.
    pub fn new(config: MockSttConfig) -> Self {
        MockStt {
            inner: Arc::new(Inner {
                config: Mutex::new(config),
                script: Mutex::new(Script::default()),
                counters: Counters::default(),
            }),
        }
    }

    /// Replaces the configuration (applies to sessions connected afterwards).
    pub fn set_config(&self, config: MockSttConfig) {
        *lock(&self.inner.config) = config;
    }

    /// Whether interims reach the whole transcript (see [`MockSttConfig::converged_interims`]).
    pub fn set_converged_interims(&self, converged: bool) {
        lock(&self.inner.config).converged_interims = converged;
    }

    /// Whether utterances begin at speech (see [`MockSttConfig::interims_from_speech`]).
    pub fn set_interims_from_speech(&self, from_speech: bool) {
        lock(&self.inner.config).interims_from_speech = from_speech;
    }

    /// Queues the transcript of a later utterance.
    pub fn push_utterance(&self, text: impl Into<String>) {
        lock(&self.inner.script).transcripts.push_back(text.into());
    }

    /// Transcribes utterance `index` with `transcriber(index)` (the queue is then unused).
    pub fn set_transcriber(&self, transcriber: impl Fn(u64) -> String + Send + Sync + 'static) {
        lock(&self.inner.script).transcriber = Some(Arc::new(transcriber));
    }

    /// Transcribes sessions connected from now on from `words` (in time order)
    /// instead of the script (module docs: timed words).
    pub fn set_timed_words(&self, words: Vec<TimedWord>) {
        lock(&self.inner.script).timed = Some(Arc::new(words));
    }

    /// Plans failures of `connect` by session index (`Refuse`, `SlowStart`).
    pub fn set_connect_faults(&self, faults: FaultPlan) {
        lock(&self.inner.script).connect_faults = faults;
    }

    /// Plans failures by utterance index (every [`Fault`]; items are the
    /// utterance's interims and final).
    pub fn set_faults(&self, faults: FaultPlan) {
        lock(&self.inner.script).faults = faults;
    }

    /// The counters.
    pub fn stats(&self) -> SttStats {
        let c = &self.inner.counters;
        SttStats {
            sessions: c.sessions.load(Ordering::Relaxed),
            utterances: c.utterances.load(Ordering::Relaxed),
            finalizes: c.finalizes.load(Ordering::Relaxed),
            interims: c.interims.load(Ordering::Relaxed),
            finals: c.finals.load(Ordering::Relaxed),
        }
    }

    /// The final delay utterance `index` draws (before any fault), for tests.
    pub fn final_delay(&self, index: u64) -> Duration {
        let config = lock(&self.inner.config);
        let mut rng = DetRng::for_stream(config.seed, streams::STT_FINAL, index);
        config.final_latency.sample(&mut rng)
    }

    async fn open(self, _config: SttConfig) -> Result<SttSession, ProviderError> {
        let index = self.inner.counters.connects.fetch_add(1, Ordering::Relaxed);
        let mock = lock(&self.inner.config).clone();
        let fault = lock(&self.inner.script)
            .connect_faults
            .fault_for(mock.seed, index);
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
        let (session, backend) = SttSession::channel();
        let timed = lock(&self.inner.script).timed.clone().map(|words| Timed {
            words,
            audio_ms: 0,
            next_interim_ms: mock.interim_interval_ms.max(1),
            finalized: 0,
            shown: 0,
            finals: 0,
        });
        let state = SessionState {
            mock,
            inner: self.inner.clone(),
            timed,
            current: None,
            pending: VecDeque::with_capacity(MAX_PENDING_FINALS),
            closing: false,
            stalled: false,
        };
        tokio::spawn(run(backend, state).in_current_span());
        Ok(session)
    }
}

impl Default for MockStt {
    fn default() -> Self {
        Self::new(MockSttConfig::default())
    }
}

impl SttProvider for MockStt {
    fn connect(&self, config: SttConfig) -> BoxFuture<'_, Result<SttSession, ProviderError>> {
        Box::pin(self.clone().open(config))
    }
}

/// The utterance being heard.
struct Utterance {
    words: Vec<String>,
    fault: Option<Fault>,
    /// Delay of the final once finalized (fault included).
    final_delay: Duration,
    audio_ms: u64,
    next_interim_ms: u64,
    last_interim: usize,
    events_sent: u32,
}

/// A final waiting for its time.
struct PendingFinal {
    at: Instant,
    text: String,
    fault: Option<Fault>,
    events_sent: u32,
}

/// Where a timed-words session is in its recording.
struct Timed {
    words: Arc<Vec<TimedWord>>,
    audio_ms: u64,
    next_interim_ms: u64,
    /// Words already in a final.
    finalized: usize,
    /// Words the last interim showed (from the start).
    shown: usize,
    /// Finals asked for so far (their delay streams).
    finals: u64,
}

impl Timed {
    /// Words spoken by the session's audio time.
    fn heard(&self) -> usize {
        self.words.partition_point(|w| w.at_ms <= self.audio_ms)
    }

    fn text(&self, to: usize) -> String {
        let words = &self.words[self.finalized.min(to)..to];
        words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

struct SessionState {
    mock: MockSttConfig,
    inner: Arc<Inner>,
    timed: Option<Timed>,
    current: Option<Utterance>,
    pending: VecDeque<PendingFinal>,
    closing: bool,
    stalled: bool,
}

/// What the fault of an utterance makes of its next event.
enum Gate {
    Send,
    End(ProviderError),
    Stall,
}

fn gate(fault: Option<&Fault>, events_sent: u32) -> Gate {
    match fault {
        Some(Fault::Refuse(error)) => Gate::End(error.clone()),
        Some(Fault::FailAfter { items, error }) if events_sent >= *items => {
            Gate::End(error.clone())
        }
        Some(Fault::DisconnectAfter { items }) if events_sent >= *items => {
            Gate::End(ProviderError::disconnected("mock: connection dropped"))
        }
        Some(Fault::StallAfter { items }) if events_sent >= *items => Gate::Stall,
        _ => Gate::Send,
    }
}

async fn run(mut backend: SttBackend, mut state: SessionState) {
    let events = backend.events.clone();
    // One wait for the engine leaving, polled only once it woke: a new
    // `closed()` per frame registered with the channel's notifier and
    // unregistered again, two locks per frame.
    let mut gone = Gated::new(events.closed());
    let end = loop {
        let due = if state.stalled {
            None
        } else {
            state.pending.front().map(|p| p.at)
        };
        if state.closing && due.is_none() {
            break None;
        }
        tokio::select! {
            biased;
            input = backend.recv(), if !state.closing => {
                if let Err(end) = state.on_input(input, &events).await {
                    break end;
                }
            }
            () = wait_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                if let Err(end) = state.deliver_final(&events).await {
                    break end;
                }
            }
            // No one reads events any more: nothing left to do.
            () = &mut gone => break None,
        }
    };
    // The engine may be gone already; there is no one else to tell.
    if let Some(error) = end {
        let _ = events.send(SttEvent::Error(error)).await;
    }
    let _ = events.send(SttEvent::Closed).await;
}

/// `Err` ends the session: with an error to report, or `None` for a plain end.
type Flow = Result<(), Option<ProviderError>>;

impl SessionState {
    async fn on_input(&mut self, input: Option<SttInput>, events: &mpsc::Sender<SttEvent>) -> Flow {
        match input {
            None | Some(SttInput::Close) => self.closing = true,
            Some(SttInput::Audio(frame)) => self.on_audio(&frame, events).await?,
            Some(SttInput::Finalize) => self.on_finalize()?,
        }
        Ok(())
    }

    async fn on_audio(&mut self, frame: &SttAudio, events: &mpsc::Sender<SttEvent>) -> Flow {
        if let Some(t) = &mut self.timed {
            t.audio_ms += frame.duration().as_millis() as u64;
            if t.audio_ms < t.next_interim_ms {
                return Ok(());
            }
            while t.next_interim_ms <= t.audio_ms {
                t.next_interim_ms += self.mock.interim_interval_ms.max(1);
            }
            let heard = t.heard();
            if heard <= t.finalized || heard == t.shown {
                return Ok(());
            }
            t.shown = heard;
            let text = t.text(heard);
            events
                .send(SttEvent::Interim { text })
                .await
                .map_err(|_| None)?;
            self.inner.counters.interims.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        if self.current.is_none() {
            if self.mock.interims_from_speech
                && rms(frame.samples()) < self.mock.speech_rms_threshold
            {
                return Ok(());
            }
            self.begin_utterance();
            if self.mock.speech_started_events && !self.stalled {
                let started = events.send(SttEvent::SpeechStarted).await;
                started.map_err(|_| None)?;
            }
        }
        match self.interim_due(frame) {
            Some(shown) => self.send_interim(shown, events).await,
            None => Ok(()),
        }
    }

    /// Adds `frame` to the utterance's audio; the number of words an interim
    /// due now shows, if one is due and would show something new.
    fn interim_due(&mut self, frame: &SttAudio) -> Option<usize> {
        let interval = self.mock.interim_interval_ms.max(1);
        let per_word = self.mock.ms_per_word.max(1);
        let u = self.current.as_mut()?;
        u.audio_ms += frame.duration().as_millis() as u64;
        if u.audio_ms < u.next_interim_ms || self.stalled {
            return None;
        }
        while u.next_interim_ms <= u.audio_ms {
            u.next_interim_ms += interval;
        }
        let all = u.words.len();
        let cap = if self.mock.converged_interims {
            all
        } else {
            all.saturating_sub(1)
        };
        let shown = ((u.audio_ms / per_word) as usize).min(cap);
        (shown > 0 && shown != u.last_interim).then_some(shown)
    }

    async fn send_interim(&mut self, shown: usize, events: &mpsc::Sender<SttEvent>) -> Flow {
        let Some(u) = self.current.as_mut() else {
            return Ok(());
        };
        match gate(u.fault.as_ref(), u.events_sent) {
            Gate::End(error) => return Err(Some(error)),
            Gate::Stall => {
                self.stalled = true;
                return Ok(());
            }
            Gate::Send => {}
        }
        u.last_interim = shown;
        u.events_sent += 1;
        let text = u.words[..shown].join(" ");
        let sent = events.send(SttEvent::Interim { text }).await;
        sent.map_err(|_| None)?;
        self.inner.counters.interims.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn begin_utterance(&mut self) {
        let index = self
            .inner
            .counters
            .utterances
            .fetch_add(1, Ordering::Relaxed);
        let mut script = lock(&self.inner.script);
        let text = match &script.transcriber {
            Some(transcriber) => transcriber(index),
            None => script
                .transcripts
                .pop_front()
                .unwrap_or_else(|| self.mock.default_transcript.clone()),
        };
        let fault = script.faults.fault_for(self.mock.seed, index);
        let mut rng = DetRng::for_stream(self.mock.seed, streams::STT_FINAL, index);
        let delay = self.mock.final_latency.sample(&mut rng);
        drop(script);
        self.current = Some(Utterance {
            words: text.split_whitespace().map(str::to_owned).collect(),
            final_delay: fault.as_ref().map_or(delay, |f| f.first_delay(delay)),
            fault,
            audio_ms: 0,
            next_interim_ms: self.mock.interim_interval_ms.max(1),
            last_interim: 0,
            events_sent: 0,
        });
    }

    fn on_finalize(&mut self) -> Flow {
        self.inner
            .counters
            .finalizes
            .fetch_add(1, Ordering::Relaxed);
        if self.pending.len() >= MAX_PENDING_FINALS {
            return Err(Some(ProviderError::protocol(
                "mock: too many finalizes pending",
            )));
        }
        if let Some(t) = &mut self.timed {
            let heard = t.heard();
            let text = t.text(heard);
            t.finalized = heard;
            t.shown = heard;
            let mut rng = DetRng::for_stream(self.mock.seed, streams::STT_FINAL, t.finals);
            t.finals += 1;
            self.pending.push_back(PendingFinal {
                at: Instant::now() + self.mock.final_latency.sample(&mut rng),
                text,
                fault: None,
                events_sent: 0,
            });
            return Ok(());
        }
        let pending = match self.current.take() {
            Some(u) => PendingFinal {
                at: Instant::now() + u.final_delay,
                text: u.words.join(" "),
                fault: u.fault,
                events_sent: u.events_sent,
            },
            None => PendingFinal {
                at: Instant::now() + self.empty_finalize_delay(),
                text: String::new(),
                fault: None,
                events_sent: 0,
            },
        };
        self.pending.push_back(pending);
        Ok(())
    }

    fn empty_finalize_delay(&self) -> Duration {
        let n = self
            .inner
            .counters
            .empty_finalizes
            .fetch_add(1, Ordering::Relaxed);
        let index = EMPTY_FINALIZE_STREAM_OFFSET + n;
        let mut rng = DetRng::for_stream(self.mock.seed, streams::STT_FINAL, index);
        self.mock.final_latency.sample(&mut rng)
    }

    async fn deliver_final(&mut self, events: &mpsc::Sender<SttEvent>) -> Flow {
        let Some(p) = self.pending.pop_front() else {
            return Ok(());
        };
        match gate(p.fault.as_ref(), p.events_sent) {
            Gate::End(error) => return Err(Some(error)),
            Gate::Stall => {
                self.stalled = true;
                return Ok(());
            }
            Gate::Send => {}
        }
        let event = SttEvent::Final {
            text: p.text,
            confidence: self.mock.confidence,
            from_finalize: true,
        };
        events.send(event).await.map_err(|_| None)?;
        self.inner.counters.finals.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Root mean square of a frame's samples, in PCM16 units.
fn rms(samples: &[i16]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / samples.len() as f64).sqrt()
}
