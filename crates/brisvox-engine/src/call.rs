//! [`run_call`]: one call from its first caller frame to its report.
//!
//! Builds the stages, connects the STT and TTS sessions and builds the output
//! framer (its sinc resampler on a blocking thread, never on a worker) before
//! the first frame (nothing is set up on the critical path), spawns the stage actors,
//! runs the turn driver on the caller's task until the call ends, then sets
//! the shutdown signal and joins every stage: when `run_call` returns, no task
//! of the call is left (the providers' session tasks end when their last
//! sender is dropped).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use brisvox_audio::OutputFramer;
use brisvox_audio::framer::FramerError;
use brisvox_core::Epoch;
use brisvox_core::timeline::TimelineRecorder;
use brisvox_models::smart_turn::SmartTurnRing;
use brisvox_providers::{SttSession, TtsConfig, TtsSession};
use brisvox_text::segment::SegmenterConfig;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::config::{EngineConfig, EngineConfigError, QueueCapacities};
use crate::edge::{CallContext, CallEdge, CallSink, CallSource};
use crate::events::{EngineEvent, EventBus};
use crate::frame_queue::{self, QueueReceiver, QueueSender};
use crate::models::{Models, Providers, VerdictSource};
use crate::report::{CallEnd, CallReport, FailureBook, ProviderStage};
use crate::stages::audio_in::{AudioIn, AudioInParts, AudioInStats};
use crate::stages::driver::{DriverOutcome, DriverParts, TurnDriver};
use crate::stages::inbox::{DriverInput, LlmInput, OutInput, SegInput, TtsInput};
use crate::stages::llm::{LlmParts, LlmReport, LlmStage};
use crate::stages::output::OutputStage;
use crate::stages::segmenter::SegmenterStage;
use crate::stages::stt::{FINALIZE_CAPACITY, SttParts, SttStage};
use crate::stages::tts::{TtsParts, TtsStage};
use crate::stages::{SharedTimeline, now};
use crate::turn::TurnMachine;

/// Why a call could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// A setting cannot work.
    #[error("invalid engine config: {0}")]
    Config(#[from] EngineConfigError),
    /// The output framer could not be built for these rates.
    #[error("output framer: {0}")]
    Framer(#[from] FramerError),
    /// The blocking thread building the output framer failed.
    #[error("output framer setup: {0}")]
    Setup(String),
}

/// Runs one call over its [`CallEdge`]: caller audio and controls from
/// `edge.source`, the answer to `edge.sink`, events to `edge.events`, until
/// the caller hangs up, the turn machine ends the call (idle, maximum
/// duration), a control asks to hang up, the STT is lost for good or the
/// transport closes.
///
/// Provider failures end the turn they hit (counted in the report), not the
/// call. Returns an error only when the call cannot start (bad settings).
///
/// Must run inside a tokio runtime with the time driver; stage tasks are
/// spawned on it and all joined before this returns.
pub async fn run_call<S, K>(
    config: EngineConfig,
    edge: CallEdge<S, K>,
    providers: Providers,
    models: Models,
) -> Result<CallReport, CallError>
where
    S: CallSource,
    K: CallSink,
{
    config.validate()?;
    let framer = build_framer(&config).await?;
    let failures = Arc::new(FailureBook::default());
    let CallEdge {
        context,
        source,
        sink,
        events,
    } = edge;
    let Some(stt) = connect_stt(&providers, &config, &failures).await else {
        return Ok(empty_report(CallEnd::SttLost, &failures, context));
    };
    let tts_config = config.tts.clone();
    let tts = match providers.tts.connect(tts_config.clone()).await {
        Ok(session) => Some(session),
        Err(error) => {
            failures.count(ProviderStage::Tts, error.kind());
            None
        }
    };
    let call = Call::new(config, providers, models, failures, events);
    let io = CallIo {
        context,
        source,
        sink,
        stt,
        tts,
        tts_config,
        framer,
    };
    Ok(call.run(io).await)
}

/// Builds the output framer (a sinc resampler for 24 -> 8 kHz takes about
/// 1.7 ms) on a blocking thread, off the async workers.
async fn build_framer(config: &EngineConfig) -> Result<OutputFramer, CallError> {
    let (tts_hz, out_hz, frame_ms) = (
        config.tts.sample_rate_hz,
        config.output_rate_hz,
        config.output_frame_ms,
    );
    tokio::task::spawn_blocking(move || OutputFramer::new(tts_hz, out_hz, frame_ms))
        .await
        .map_err(|e| CallError::Setup(e.to_string()))?
        .map_err(CallError::from)
}

/// Connects the STT, with the configured reconnect attempts.
async fn connect_stt(
    providers: &Providers,
    config: &EngineConfig,
    failures: &FailureBook,
) -> Option<SttSession> {
    for _ in 0..=config.limits.stt_reconnects {
        match providers.stt.connect(config.stt.clone()).await {
            Ok(session) => return Some(session),
            Err(error) => failures.count(ProviderStage::Stt, error.kind()),
        }
    }
    None
}

fn empty_report(end: CallEnd, failures: &FailureBook, context: CallContext) -> CallReport {
    CallReport {
        turn_counters: Default::default(),
        turns: Vec::new(),
        turns_dropped: 0,
        timeline: Default::default(),
        failed_responses: 0,
        provider_failures: failures.snapshot(),
        pacer: Default::default(),
        early_analysis: Default::default(),
        frames_in: 0,
        stt_frames_dropped: 0,
        vad_windows_lost: 0,
        vad_windows_retried: 0,
        normalize_failures: 0,
        frames_out: 0,
        llm_usage: Default::default(),
        tools: Default::default(),
        speculation: Default::default(),
        end,
        context,
    }
}

/// The edge and sessions a call runs with, once connected.
struct CallIo<S, K> {
    context: CallContext,
    source: S,
    sink: K,
    stt: SttSession,
    tts: Option<TtsSession>,
    tts_config: TtsConfig,
    framer: OutputFramer,
}

/// The shared pieces of one call while it is being assembled.
struct Call {
    config: EngineConfig,
    providers: Providers,
    models: Models,
    failures: Arc<FailureBook>,
    timeline: SharedTimeline,
    failed_responses: Arc<AtomicU64>,
    normalize_failures: Arc<AtomicU64>,
    frames_out: Arc<AtomicU64>,
    audio_stats: Arc<AudioInStats>,
    floor: watch::Sender<Epoch>,
    shutdown: watch::Sender<bool>,
    events: EventBus,
}

/// Both ends of every stage inbox of a call.
struct Channels {
    driver_tx: mpsc::Sender<DriverInput>,
    driver_rx: mpsc::Receiver<DriverInput>,
    llm_tx: mpsc::Sender<LlmInput>,
    llm_rx: mpsc::Receiver<LlmInput>,
    seg_tx: mpsc::Sender<SegInput>,
    seg_rx: mpsc::Receiver<SegInput>,
    tts_tx: mpsc::Sender<TtsInput>,
    tts_rx: mpsc::Receiver<TtsInput>,
    out_tx: QueueSender<OutInput>,
    out_rx: QueueReceiver<OutInput>,
}

impl Channels {
    fn new(q: QueueCapacities) -> Self {
        let (driver_tx, driver_rx) = mpsc::channel(q.driver);
        let (llm_tx, llm_rx) = mpsc::channel(q.llm);
        let (seg_tx, seg_rx) = mpsc::channel(q.segmenter);
        let (tts_tx, tts_rx) = mpsc::channel(q.tts);
        let (out_tx, out_rx) = frame_queue::bounded(q.output);
        Channels {
            driver_tx,
            driver_rx,
            llm_tx,
            llm_rx,
            seg_tx,
            seg_rx,
            tts_tx,
            tts_rx,
            out_tx,
            out_rx,
        }
    }
}

/// The spawned stages, joined at the end.
struct Tasks {
    plain: Vec<JoinHandle<()>>,
    llm: JoinHandle<LlmReport>,
    output: JoinHandle<brisvox_audio::PacerMetrics>,
}

impl Call {
    fn new(
        config: EngineConfig,
        providers: Providers,
        models: Models,
        failures: Arc<FailureBook>,
        events: EventBus,
    ) -> Self {
        Call {
            events,
            config,
            providers,
            models,
            failures,
            timeline: Arc::new(Mutex::new(TimelineRecorder::new())),
            failed_responses: Arc::new(AtomicU64::new(0)),
            normalize_failures: Arc::new(AtomicU64::new(0)),
            frames_out: Arc::new(AtomicU64::new(0)),
            audio_stats: Arc::new(AudioInStats::default()),
            floor: watch::channel(Epoch::ZERO).0,
            shutdown: watch::channel(false).0,
        }
    }

    async fn run<S: CallSource, K: CallSink>(self, io: CallIo<S, K>) -> CallReport {
        let CallIo {
            context,
            source,
            sink,
            stt,
            tts,
            tts_config,
            framer,
        } = io;
        let ch = Channels::new(self.config.queues);
        let ring = match self.models.verdict {
            VerdictSource::SmartTurn { .. } | VerdictSource::Service(_) => {
                Some(Arc::new(Mutex::new(SmartTurnRing::new())))
            }
            VerdictSource::Fixed(_) => None,
        };
        let (stt_tx, stt_rx) = watch::channel(None);
        let (finalize_tx, finalize_rx) = mpsc::channel(FINALIZE_CAPACITY);
        let stt_stage = self.stt_stage(stt, stt_tx, finalize_rx, ch.driver_tx.clone());
        let tts_parts = self.tts_parts(tts, tts_config, ch.tts_rx, ch.out_tx, framer);
        // Every stage runs in the caller's span (the route's `call{call_id}`),
        // so each log line of the call, the providers' included, carries its id.
        let span = tracing::Span::current();
        let plain = vec![
            tokio::spawn(stt_stage.run().instrument(span.clone())),
            tokio::spawn(
                self.segmenter_stage(ch.seg_rx, ch.tts_tx)
                    .run()
                    .instrument(span.clone()),
            ),
            tokio::spawn(TtsStage::new(tts_parts).run().instrument(span.clone())),
            tokio::spawn(
                self.audio_in(source, ch.driver_tx.clone(), stt_rx.clone(), ring.clone())
                    .run()
                    .instrument(span.clone()),
            ),
        ];
        let llm = tokio::spawn(
            self.llm_stage(ch.llm_rx, ch.seg_tx)
                .run()
                .instrument(span.clone()),
        );
        let output = tokio::spawn(
            self.output_stage(sink, ch.out_rx, ch.driver_tx)
                .run()
                .instrument(span),
        );
        let driver = TurnDriver::new(DriverParts {
            machine: TurnMachine::new(self.config.turn.clone(), now())
                .with_vad_hangover(self.config.vad.stop_hangover()),
            inbox: ch.driver_rx,
            timeline: Arc::clone(&self.timeline),
            floor: self.floor.clone(),
            llm: ch.llm_tx,
            finalize: finalize_tx,
            verdicts: self.models.verdict.clone(),
            ring,
            events: self.events.clone(),
            context,
            early_analysis: self.config.early_analysis,
            analysis_hold: self.config.analysis_hold,
        });
        let outcome = driver.run().await;
        self.finish(outcome, Tasks { plain, llm, output }).await
    }

    fn stt_stage(
        &self,
        session: SttSession,
        sender: watch::Sender<Option<brisvox_providers::SttSender>>,
        finalize: mpsc::Receiver<()>,
        driver: mpsc::Sender<DriverInput>,
    ) -> SttStage {
        SttStage::new(SttParts {
            provider: Arc::clone(&self.providers.stt),
            config: self.config.stt.clone(),
            session,
            sender,
            finalize,
            driver,
            reconnects: self.config.limits.stt_reconnects,
            failures: Arc::clone(&self.failures),
            shutdown: self.shutdown.subscribe(),
        })
    }

    fn segmenter_stage(
        &self,
        inbox: mpsc::Receiver<SegInput>,
        tts: mpsc::Sender<TtsInput>,
    ) -> SegmenterStage {
        SegmenterStage::new(
            SegmenterConfig::new(self.config.language)
                .with_first_min_words(self.config.first_chunk_words),
            inbox,
            tts,
            Arc::clone(&self.timeline),
            self.floor.subscribe(),
            self.shutdown.subscribe(),
            self.events.clone(),
        )
    }

    fn output_stage<K: CallSink>(
        &self,
        sink: K,
        inbox: QueueReceiver<OutInput>,
        driver: mpsc::Sender<DriverInput>,
    ) -> OutputStage<K> {
        OutputStage::new(
            sink,
            inbox,
            driver,
            Arc::clone(&self.timeline),
            Arc::clone(&self.frames_out),
            self.floor.subscribe(),
            self.shutdown.subscribe(),
        )
    }

    fn audio_in<S: CallSource>(
        &self,
        source: S,
        driver: mpsc::Sender<DriverInput>,
        stt: watch::Receiver<Option<brisvox_providers::SttSender>>,
        ring: Option<Arc<Mutex<SmartTurnRing>>>,
    ) -> AudioIn<S> {
        AudioIn::new(AudioInParts {
            source,
            driver,
            stt,
            ring,
            vad: self.models.vad.clone(),
            vad_params: self.config.vad,
            speech_dbfs: self.config.energy_vad.speech_dbfs,
            falling_hints: self.config.early_analysis.is_some(),
            stats: Arc::clone(&self.audio_stats),
            shutdown: self.shutdown.subscribe(),
        })
    }

    fn llm_stage(
        &self,
        inbox: mpsc::Receiver<LlmInput>,
        segmenter: mpsc::Sender<SegInput>,
    ) -> LlmStage {
        LlmStage::new(LlmParts {
            provider: Arc::clone(&self.providers.llm),
            inbox,
            segmenter,
            system_prompt: Arc::clone(&self.config.system_prompt),
            max_history: self.config.max_history_messages,
            stall_limit: self.config.limits.llm_first_token,
            timeline: Arc::clone(&self.timeline),
            failures: Arc::clone(&self.failures),
            failed_responses: Arc::clone(&self.failed_responses),
            floor: self.floor.subscribe(),
            shutdown: self.shutdown.subscribe(),
            tools: self.providers.tools.clone(),
            tool_settings: self.config.tools.clone(),
            events: self.events.clone(),
            apology: self.config.apology.clone(),
        })
    }

    fn tts_parts(
        &self,
        session: Option<TtsSession>,
        config: TtsConfig,
        inbox: mpsc::Receiver<TtsInput>,
        output: QueueSender<OutInput>,
        framer: OutputFramer,
    ) -> TtsParts {
        TtsParts {
            provider: Arc::clone(&self.providers.tts),
            config,
            session,
            inbox,
            output,
            framer,
            language: self.config.language,
            stall_limit: self.config.limits.tts_stall,
            timeline: Arc::clone(&self.timeline),
            failures: Arc::clone(&self.failures),
            failed_responses: Arc::clone(&self.failed_responses),
            normalize_failures: Arc::clone(&self.normalize_failures),
            floor: self.floor.subscribe(),
            shutdown: self.shutdown.subscribe(),
        }
    }

    /// Stops every stage, joins them and builds the report.
    async fn finish(self, outcome: DriverOutcome, tasks: Tasks) -> CallReport {
        self.shutdown.send_replace(true);
        for task in tasks.plain {
            // A stage that panicked has nothing more to report; the call still ends.
            let _ = task.await;
        }
        let llm = tasks.llm.await.unwrap_or_default();
        let pacer = tasks.output.await.unwrap_or_default();
        let timeline = self
            .timeline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .counters();
        let report = CallReport {
            turn_counters: outcome.counters,
            turns: outcome.records,
            turns_dropped: outcome.records_dropped,
            timeline,
            failed_responses: self.failed_responses.load(Ordering::Relaxed),
            provider_failures: self.failures.snapshot(),
            pacer,
            early_analysis: outcome.early_analysis,
            frames_in: self.audio_stats.frames_in.load(Ordering::Relaxed),
            stt_frames_dropped: self.audio_stats.stt_dropped.load(Ordering::Relaxed),
            vad_windows_lost: self.audio_stats.vad_lost.load(Ordering::Relaxed),
            vad_windows_retried: self.audio_stats.vad_retried.load(Ordering::Relaxed),
            normalize_failures: self.normalize_failures.load(Ordering::Relaxed),
            frames_out: self.frames_out.load(Ordering::Relaxed),
            llm_usage: llm.usage,
            tools: llm.tools,
            speculation: llm.speculation,
            end: outcome.end,
            context: outcome.context,
        };
        // The last event of every call: its consumers (metrics, traces, the
        // agent link) read the whole report once, from the engine.
        self.events.emit(EngineEvent::CallEnded {
            report: Box::new(report.clone()),
        });
        report
    }
}
