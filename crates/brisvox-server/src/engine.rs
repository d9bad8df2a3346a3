//! The call engine behind the websocket routes: [`EngineCallHandler`].
//!
//! One handler serves the whole process. It is built once at startup from the
//! agent file: the models are loaded then (one Silero session and one Smart
//! Turn session per process, never per call), the VAD runs on its own inference
//! pool with windows of every call batched together, and Smart Turn runs on a
//! second pool so an analysis never delays VAD windows. Each call gets an
//! [`EngineConfig`] derived from the agent file and runs
//! [`brisvox_engine::run_call_with_events`]; the engine's events become the
//! protocol's `transcript`, `bot_speaking_*` and `turn_metrics` messages.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use brisvox_core::AudioFrame;
use brisvox_core::timeline::TurnRecord;
use brisvox_engine::turn::{
    BargeInConfig, IdleConfig, IncompleteShortcut, TurnConfig, TurnPolicy as EnginePolicy,
};
use brisvox_engine::{
    EarlyAnalysisConfig, EngineConfig, EngineEvent, EventSink, Models, Providers, TransportClosed,
    TransportSink, TransportSource, VadSource, VerdictSource, events::EVENT_QUEUE_CAPACITY,
};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::smart_turn::{SmartTurnService, SmartTurnServiceConfig};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use brisvox_providers::cartesia::{CartesiaConfig, CartesiaTts};
use brisvox_providers::deepgram::aura::{DeepgramAura, DeepgramAuraOptions};
use brisvox_providers::deepgram::stt::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::elevenlabs::{ElevenLabsConfig, ElevenLabsTts};
use brisvox_providers::local::{LocalLlmConfig, LocalRulesLlm};
use brisvox_providers::mock::Latency;
use brisvox_providers::mock::{
    MockLlm, MockLlmConfig, MockStt, MockSttConfig, MockTts, MockTtsConfig,
};
use brisvox_providers::openai_llm::{MaxTokensField, OpenAiLlm, OpenAiLlmConfig};
use brisvox_providers::openai_transcribe::{OpenAiTranscribe, OpenAiTranscribeOptions};
use brisvox_providers::vendors::ApiKey;
use brisvox_transport::brisvox_ws::{ServerEvent, TurnMetricsMs};
use tokio::sync::mpsc;

use crate::admission::{DEFAULT_QUEUE_CONFIRM, PoolPressure, QueueDepthGuard};
use crate::agent::{
    AgentSettings, Language, LlmProvider, SttProvider, TtsProvider, TurnAnalyzer, TurnPolicy,
    VadDetector,
};
use crate::handler::{CallFailed, CallFuture, CallHandler, CallInput, CallOutput, CallStart};

/// VAD windows waiting in the batched service above which new calls are
/// refused, once that has lasted [`DEFAULT_QUEUE_CONFIRM`]: about four windows
/// per call of 64 calls, far more than a healthy server ever queues.
pub const VAD_PRESSURE_WINDOWS: usize = 256;

/// Why the engine could not be set up at startup.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineSetupError {
    /// A model could not be loaded.
    #[error(
        "{what}: {reason} (run `brisvox models fetch`, or choose `[vad] detector = \"energy\"` and `[turn] analyzer = \"always_complete\"`)"
    )]
    Model {
        /// Which model.
        what: &'static str,
        /// The loader's message.
        reason: String,
    },
    /// The agent file selects a vendor but has no section for it.
    #[error("[{section}] is missing: it holds the vendor's model and api_key")]
    MissingSection {
        /// The section's name.
        section: &'static str,
    },
    /// The agent file selects a provider this build cannot run yet.
    #[error(
        "{section}.provider = \"{provider}\" is not available in this build; available: {available}"
    )]
    ProviderUnavailable {
        /// `stt`, `llm` or `tts`.
        section: &'static str,
        /// The provider asked for.
        provider: String,
        /// What this build offers.
        available: &'static str,
    },
    /// A local provider's program could not run (the message names the
    /// package to install).
    #[error("{reason}")]
    LocalProgram {
        /// What failed, and the fix.
        reason: String,
    },
}

/// Runs every call of the process through the engine.
pub struct EngineCallHandler {
    providers: Providers,
    models: Models,
    vad_service: Option<VadService>,
    mock: bool,
}

impl std::fmt::Debug for EngineCallHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineCallHandler")
            .field("models", &self.models)
            .field("mock", &self.mock)
            .finish_non_exhaustive()
    }
}

impl EngineCallHandler {
    /// Loads the models the agent file asks for and builds its providers.
    ///
    /// Blocking (model sessions are built and warmed here): call it before the
    /// server starts, not on an async worker.
    pub fn new(agent: &AgentSettings) -> Result<Self, EngineSetupError> {
        let providers = build_providers(agent)?;
        let vad_service = match agent.vad.detector {
            VadDetector::Silero => Some(silero_service(agent)?),
            VadDetector::Energy => None,
        };
        let verdict = match agent.turn.analyzer {
            TurnAnalyzer::SmartTurn => smart_turn_source(agent)?,
            TurnAnalyzer::AlwaysComplete => {
                VerdictSource::Fixed(brisvox_engine::turn::Verdict::Complete { probability: 1.0 })
            }
        };
        let vad = vad_service
            .clone()
            .map_or(VadSource::Energy, VadSource::Silero);
        Ok(EngineCallHandler {
            providers,
            models: Models { vad, verdict },
            vad_service,
            mock: agent.uses_mock(),
        })
    }

    /// Replaces the agent file's STT provider for every call (benchmarks that
    /// drive a mock with a known transcript, [`brisvox_providers::mock::MockStt`]).
    #[must_use]
    pub fn with_stt(mut self, stt: Arc<dyn brisvox_providers::SttProvider>) -> Self {
        self.providers.stt = stt;
        self
    }

    /// The model services whose counters `/metrics` shows.
    pub fn model_stats(&self) -> crate::model_metrics::ModelStatsSource {
        crate::model_metrics::ModelStatsSource {
            vad: self.vad_service.clone(),
            smart_turn: match &self.models.verdict {
                VerdictSource::Service(service) => Some(service.clone()),
                _ => None,
            },
        }
    }

    /// The admission guard over the VAD queue ("pool pressure"), if a model VAD runs.
    pub fn pool_pressure(&self) -> Option<Box<dyn PoolPressure>> {
        let service = self.vad_service.clone()?;
        Some(Box::new(VadQueuePressure {
            service,
            guard: Mutex::new(QueueDepthGuard::new(
                VAD_PRESSURE_WINDOWS,
                DEFAULT_QUEUE_CONFIRM,
            )),
        }))
    }
}

impl CallHandler for EngineCallHandler {
    fn run_call(&self, start: CallStart, input: CallInput, output: CallOutput) -> CallFuture {
        let config = engine_config(&start.agent, start.output_sample_rate_hz);
        let (events, rx) = EventSink::channel(EVENT_QUEUE_CAPACITY);
        let forwarder = tokio::spawn(forward_events(rx, output.clone()));
        let providers = self.providers.clone();
        let models = self.models.clone();
        let call_id = start.call_id;
        Box::pin(async move {
            let result = brisvox_engine::run_call_with_events(
                config,
                EngineInput(input),
                EngineOutput(output),
                providers,
                models,
                events,
            )
            .await;
            // The sink's last sender went with the call: the forwarder ends by itself.
            let _ = forwarder.await;
            match result {
                Ok(report) => {
                    tracing::info!(
                        call_id = %call_id,
                        turns = report.turn_counters.turns,
                        responses = report.turn_counters.responses,
                        barge_ins = report.turn_counters.barge_ins,
                        failed_responses = report.failed_responses,
                        end = ?report.end,
                        "call finished"
                    );
                    Ok(())
                }
                Err(e) => Err(CallFailed {
                    reason: e.to_string(),
                }),
            }
        })
    }
}

/// The caller's frames, as the engine reads them.
struct EngineInput(CallInput);

impl TransportSource for EngineInput {
    async fn recv_frame(&mut self) -> Option<AudioFrame> {
        self.0.recv_frame().await
    }
}

/// The answer's frames, as the engine writes them.
struct EngineOutput(CallOutput);

impl TransportSink for EngineOutput {
    async fn send_frame(&mut self, frame: AudioFrame) -> Result<(), TransportClosed> {
        self.0.send_frame(frame).await.map_err(|_| TransportClosed)
    }

    async fn clear(&mut self) {
        self.0.clear().await;
    }
}

/// Turns engine events into protocol events until the call's sink is dropped.
async fn forward_events(mut rx: mpsc::Receiver<EngineEvent>, mut output: CallOutput) {
    let mut state = ForwardState::default();
    while let Some(event) = rx.recv().await {
        let Some(server_event) = server_event(event, &mut state) else {
            continue;
        };
        if output.send_event(server_event).await.is_err() {
            break;
        }
    }
}

/// What the event forwarder remembers of a call.
#[derive(Debug, Default)]
struct ForwardState {
    /// A `bot_speaking_started` is open: every start gets exactly one stop.
    speaking: bool,
    /// The newest turn whose `turn_metrics` went out (at its response's end),
    /// so its later `TurnFinished` is not reported twice.
    reported: u64,
}

/// The protocol event for an engine event.
fn server_event(event: EngineEvent, state: &mut ForwardState) -> Option<ServerEvent> {
    let speaking = &mut state.speaking;
    match event {
        EngineEvent::Transcript { text, is_final } => {
            Some(ServerEvent::Transcript { text, is_final })
        }
        EngineEvent::BotSpeakingStarted { .. } if !*speaking => {
            *speaking = true;
            Some(ServerEvent::BotSpeakingStarted)
        }
        EngineEvent::BotSpeakingStopped { .. } if *speaking => {
            *speaking = false;
            Some(ServerEvent::BotSpeakingStopped { interrupted: false })
        }
        EngineEvent::Interrupted { .. } if *speaking => {
            *speaking = false;
            Some(ServerEvent::BotSpeakingStopped { interrupted: true })
        }
        EngineEvent::ResponseDone { record } => {
            state.reported = state.reported.max(record.epoch().0);
            turn_metrics(&record)
        }
        EngineEvent::TurnFinished { record } if record.epoch().0 > state.reported => {
            turn_metrics(&record)
        }
        _ => None,
    }
}

/// A `turn_metrics` event for a finished user turn (`None` for the greeting's epoch 0).
fn turn_metrics(record: &TurnRecord) -> Option<ServerEvent> {
    if record.epoch().0 == 0 {
        return None;
    }
    let m = record.metrics();
    let hops = record.engine_hops();
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
    Some(ServerEvent::TurnMetrics {
        turn: record.epoch().0,
        metrics: TurnMetricsMs {
            end_of_turn_delay_ms: ms(m.end_of_turn_delay),
            stt_final_delay_ms: ms(m.stt_final_delay),
            llm_ttft_ms: ms(m.llm_ttft),
            tts_ttfb_ms: ms(m.tts_ttfb),
            response_latency_ms: ms(m.response_latency),
            time_to_silence_ms: ms(m.time_to_silence),
            turn_end_to_llm_ms: ms(hops.turn_end_to_llm),
            tts_first_byte_to_transport_ms: ms(hops.tts_first_byte_to_transport),
            interrupt_to_clear_ms: ms(hops.interrupt_to_clear),
        },
    })
}

/// The engine settings of one call, from the agent file.
pub fn engine_config(agent: &AgentSettings, output_rate_hz: u32) -> EngineConfig {
    let mut config = EngineConfig {
        output_rate_hz,
        system_prompt: Arc::from(agent.prompt.as_str()),
        language: engine_language(agent.language),
        turn: turn_config(agent),
        ..EngineConfig::default()
    };
    // The agent's language reaches the providers too: Cartesia's `language`,
    // ElevenLabs' `language_code`, the STT's `language`.
    let language: Arc<str> = Arc::from(language_code(agent.language));
    config.tts.language = Some(language.clone());
    config.stt.language = Some(language);
    if agent.llm.provider == LlmProvider::OpenaiCompatible
        && let Some(s) = &agent.llm.openai_compatible
    {
        // The engine's own first-token stall must not cut a request the
        // adapter still waits for (the adapter's timeout plus a margin).
        let adapter = Duration::from_millis(u64::from(s.first_token_timeout_ms) + 1_000);
        config.limits.llm_first_token = config.limits.llm_first_token.max(adapter);
    }
    config.vad = agent.vad_params();
    config.energy_vad.speech_dbfs = agent.vad.energy_dbfs;
    let early = &agent.turn.early_analysis;
    config.early_analysis = early.enabled.then(|| EarlyAnalysisConfig {
        max_per_turn: early.max_per_turn,
        max_tail: Duration::from_millis(u64::from(early.max_tail_ms)),
    });
    config
}

fn engine_language(language: Language) -> brisvox_text::Language {
    match language {
        Language::Tr => brisvox_text::Language::Tr,
        Language::En => brisvox_text::Language::En,
    }
}

fn turn_config(agent: &AgentSettings) -> TurnConfig {
    let t = &agent.turn;
    let ms = |n: u32| Duration::from_millis(u64::from(n));
    let policy = match t.policy {
        TurnPolicy::Fixed => EnginePolicy::FixedSilence {
            silence: ms(t.silence_ms.unwrap_or(crate::agent::DEFAULT_SILENCE_MS)),
        },
        TurnPolicy::Adaptive => EnginePolicy::Adaptive {
            incomplete_timeout: ms(t
                .incomplete_timeout_ms
                .unwrap_or(crate::agent::DEFAULT_INCOMPLETE_TIMEOUT_MS)),
        },
    };
    let l = &agent.limits;
    let idle =
        (l.idle_prompt_after_s > 0 && !l.idle_prompt.trim().is_empty()).then(|| IdleConfig {
            prompt_after: Duration::from_secs(u64::from(l.idle_prompt_after_s)),
            prompt: l.idle_prompt.clone(),
            // The file counts both from the caller's last speech; the engine
            // counts the end from the prompt.
            end_after: Duration::from_secs(u64::from(
                l.idle_end_after_s
                    .saturating_sub(l.idle_prompt_after_s)
                    .max(1),
            )),
        });
    let s = &t.shortcut;
    let language = engine_language(agent.language);
    let incomplete_shortcut = s.enabled.then(|| IncompleteShortcut {
        language,
        short_answer: ms(s.short_answer_ms),
        short_answer_max_words: s.short_answer_max_words as usize,
        short_answer_max_turn: ms(s.short_answer_max_turn_ms),
        terminal: ms(s.terminal_ms),
    });
    let i = &agent.interruption;
    TurnConfig {
        policy,
        require_final: t.require_final,
        // The engine needs a positive wait; 0 in the file means "do not wait".
        final_timeout: ms(t.final_timeout_ms.max(1)),
        incomplete_shortcut,
        barge_in: BargeInConfig {
            enabled: i.enabled,
            min_speech: ms(i.min_speech_ms),
            min_words: i.min_words,
            backchannels: i
                .backchannels
                .clone()
                .unwrap_or_else(|| brisvox_engine::turn::words::default_backchannels(language)),
            max_wordless_speech: ms(i.max_wordless_speech_ms),
            word_grace: ms(i.word_grace_ms),
        },
        idle,
        // The server ends calls at [limits] max_call_duration_s itself.
        max_call_duration: None,
        greeting: agent.greeting.clone().filter(|g| !g.trim().is_empty()),
        resume_false_interruptions: i.resume_false_interruptions,
    }
}

/// The providers the agent file names.
fn build_providers(agent: &AgentSettings) -> Result<Providers, EngineSetupError> {
    Ok(Providers {
        tools: None,
        stt: build_stt(agent)?,
        llm: build_llm(agent)?,
        tts: build_tts(agent)?,
    })
}

fn language_code(language: Language) -> &'static str {
    match language {
        Language::En => "en",
        Language::Tr => "tr",
    }
}

fn fixed_ms(n: u32) -> Latency {
    Latency::Fixed(u64::from(n))
}

/// The key of a vendor section. The agent file check guarantees that a
/// vendor section has its `api_key` resolved from the environment.
fn api_key(
    setting: &crate::secret::SecretSetting,
    section: &'static str,
) -> Result<ApiKey, EngineSetupError> {
    setting
        .secret()
        .map(|s| ApiKey::new(s.expose()))
        .ok_or(EngineSetupError::MissingSection { section })
}

pub(crate) fn build_stt(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::SttProvider>, EngineSetupError> {
    match agent.stt.provider {
        SttProvider::Mock => {
            let stt = MockStt::new(MockSttConfig {
                final_latency: fixed_ms(agent.stt.mock.final_latency_ms),
                ..MockSttConfig::default()
            });
            stt.set_transcriber(|i| format!("mock transcript {}", i + 1));
            Ok(Arc::new(stt))
        }
        SttProvider::Deepgram => {
            let section = "stt.deepgram";
            let s = agent
                .stt
                .deepgram
                .as_ref()
                .ok_or(EngineSetupError::MissingSection { section })?;
            let mut options = DeepgramSttOptions::default();
            options.model = s.model.clone();
            if let Some(url) = &s.base_url {
                options.url = url.clone();
            }
            options.language = Some(language_code(agent.language).to_owned());
            options.keyterms.clone_from(&s.keyterms);
            let key = api_key(&s.api_key, section)?;
            Ok(Arc::new(DeepgramStt::new(key.expose(), options)))
        }
        SttProvider::OpenaiTranscribe => {
            let section = "stt.openai_transcribe";
            let s = agent
                .stt
                .openai_transcribe
                .as_ref()
                .ok_or(EngineSetupError::MissingSection { section })?;
            let mut options = OpenAiTranscribeOptions::default();
            options.model = s.model.clone();
            options.base_url = s.base_url.clone();
            options.language = Some(language_code(agent.language).to_owned());
            let key = match &s.api_key {
                Some(k) => Some(api_key(k, section)?.expose().to_owned()),
                None => None,
            };
            Ok(Arc::new(OpenAiTranscribe::new(key, options)))
        }
        SttProvider::Local => crate::local_stt::build(agent),
    }
}

pub(crate) fn build_llm(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::LlmProvider>, EngineSetupError> {
    match agent.llm.provider {
        LlmProvider::Mock => Ok(Arc::new(MockLlm::new(MockLlmConfig {
            first_token: fixed_ms(agent.llm.mock.first_token_ms),
            token_interval: fixed_ms(agent.llm.mock.token_interval_ms),
            default_answer: agent.llm.mock.answer.clone(),
            ..MockLlmConfig::default()
        }))),
        LlmProvider::OpenaiCompatible => {
            let section = "llm.openai_compatible";
            let s = agent
                .llm
                .openai_compatible
                .as_ref()
                .ok_or(EngineSetupError::MissingSection { section })?;
            Ok(Arc::new(OpenAiLlm::new(openai_llm_config(s)?)))
        }
        LlmProvider::Local => Ok(Arc::new(LocalRulesLlm::new(LocalLlmConfig {
            first_token_ms: u64::from(agent.llm.local.first_token_ms),
            word_interval_ms: u64::from(agent.llm.local.word_interval_ms),
            ..LocalLlmConfig::default()
        }))),
    }
}

/// The adapter settings of `[llm.openai_compatible]`: every key of the
/// section reaches the request (temperature, the limit in the field the
/// server documents, reasoning effort, the first-token timeout, routing).
pub fn openai_llm_config(
    s: &crate::agent::OpenAiCompatibleSettings,
) -> Result<OpenAiLlmConfig, EngineSetupError> {
    let section = "llm.openai_compatible";
    let mut config = OpenAiLlmConfig::new(api_key(&s.api_key, section)?, s.model.clone())
        .with_base_url(s.base_url.clone());
    if let Some(order) = &s.openrouter_order {
        config = config
            .with_provider_routing(order.clone(), s.openrouter_allow_fallbacks.unwrap_or(true));
    }
    if let Some(effort) = &s.reasoning_effort {
        config = config.with_reasoning_effort(effort.clone());
    }
    if let Some(max) = s.max_tokens {
        let field = match s.max_tokens_field.as_deref() {
            Some("max_tokens") => MaxTokensField::MaxTokens,
            Some(_) => MaxTokensField::MaxCompletionTokens,
            None => MaxTokensField::for_base_url(&s.base_url),
        };
        config = config.with_max_tokens(max, field);
    }
    if let Some(t) = s.temperature {
        config = config.with_temperature(t);
    }
    let chunk_ms = config.chunk_timeout_ms;
    Ok(config.with_timeouts(u64::from(s.first_token_timeout_ms), chunk_ms))
}

pub(crate) fn build_tts(
    agent: &AgentSettings,
) -> Result<Arc<dyn brisvox_providers::TtsProvider>, EngineSetupError> {
    let vendor = |s: &Option<crate::agent::VendorTtsSettings>, section: &'static str| {
        s.clone()
            .ok_or(EngineSetupError::MissingSection { section })
    };
    match agent.tts.provider {
        TtsProvider::Mock => Ok(Arc::new(MockTts::new(MockTtsConfig {
            first_byte: fixed_ms(agent.tts.mock.first_byte_ms),
            ..MockTtsConfig::default()
        }))),
        TtsProvider::Cartesia => {
            let section = "tts.cartesia";
            let s = vendor(&agent.tts.cartesia, section)?;
            let voice = s.voice.clone().unwrap_or_default();
            let mut config = CartesiaConfig::new(api_key(&s.api_key, section)?, s.model, voice);
            if let Some(url) = s.base_url {
                config = config.with_url(url);
            }
            Ok(Arc::new(CartesiaTts::new(config)))
        }
        TtsProvider::Elevenlabs => {
            let section = "tts.elevenlabs";
            let s = vendor(&agent.tts.elevenlabs, section)?;
            let voice = s.voice.clone().unwrap_or_default();
            let mut config = ElevenLabsConfig::new(api_key(&s.api_key, section)?, s.model, voice);
            if let Some(url) = s.base_url {
                config = config.with_base_url(url);
            }
            Ok(Arc::new(ElevenLabsTts::new(config)))
        }
        TtsProvider::DeepgramAura => {
            let section = "tts.deepgram_aura";
            let s = vendor(&agent.tts.deepgram_aura, section)?;
            let mut options = DeepgramAuraOptions::default();
            options.model = s.model;
            if let Some(url) = s.base_url {
                options.url = url;
            }
            let key = api_key(&s.api_key, section)?;
            Ok(Arc::new(DeepgramAura::new(key.expose(), options)))
        }
        TtsProvider::Local => crate::local_tts::build(agent),
    }
}

/// The batched Silero service on its own pool: `[runtime] vad_threads`
/// threads, queues sized from `[limits] max_calls`
/// ([`pool_queue_capacity`](crate::agent::pool_queue_capacity) jobs per line,
/// four windows per call, at least the service's default).
fn silero_service(agent: &AgentSettings) -> Result<VadService, EngineSetupError> {
    let model = SileroModel::load().map_err(|e| EngineSetupError::Model {
        what: "Silero VAD",
        reason: e.to_string(),
    })?;
    let queue = crate::agent::pool_queue_capacity(agent.limits.max_calls);
    let mut pool_config = PoolConfig::named("vad");
    if agent.runtime.vad_threads > 0 {
        pool_config.threads = agent.runtime.vad_threads as usize;
    }
    pool_config.high_capacity = queue;
    pool_config.normal_capacity = queue;
    let mut config = VadServiceConfig::new(SileroRate::Hz16000);
    config.queue_capacity = config
        .queue_capacity
        .max(4 * agent.limits.max_calls as usize);
    Ok(VadService::new(
        Arc::new(model),
        InferencePool::new(pool_config),
        config,
    ))
}

/// Smart Turn through one service shared by every call: its own pool of
/// `[runtime] smart_turn_threads` threads with `smart_turn_intra_threads`
/// ONNX Runtime threads per analysis, a queue sized from `[limits] max_calls`,
/// snapshot buffers from its free list, refused or late analyses counted as
/// failed verdicts (the turn then waits for its fallback).
fn smart_turn_source(agent: &AgentSettings) -> Result<VerdictSource, EngineSetupError> {
    let r = &agent.runtime;
    let mut config = SmartTurnServiceConfig {
        threads: r.smart_turn_threads as usize,
        queue_capacity: crate::agent::pool_queue_capacity(agent.limits.max_calls),
        start_timeout: Duration::from_millis(u64::from(r.smart_turn_start_timeout_ms)),
        ..SmartTurnServiceConfig::default()
    };
    config.model.intra_threads = r.smart_turn_intra_threads as usize;
    let service = SmartTurnService::start(config).map_err(|e| EngineSetupError::Model {
        what: "Smart Turn v3.2",
        reason: e.to_string(),
    })?;
    Ok(VerdictSource::Service(service))
}

/// Pool pressure: the VAD service's queue over its limit for long enough.
struct VadQueuePressure {
    service: VadService,
    guard: Mutex<QueueDepthGuard>,
}

impl PoolPressure for VadQueuePressure {
    fn under_pressure(&self) -> bool {
        let depth = usize::try_from(self.service.stats().queued).unwrap_or(usize::MAX);
        #[allow(clippy::disallowed_methods)]
        // admission runs in the server shell, on the wall clock
        let now = Instant::now();
        self.guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(now, depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisvox_core::Epoch;

    #[test]
    fn every_bot_speaking_start_gets_exactly_one_stop() {
        let mut speaking = ForwardState::default();
        let start = EngineEvent::BotSpeakingStarted { epoch: Epoch(1) };
        assert_eq!(
            server_event(start.clone(), &mut speaking),
            Some(ServerEvent::BotSpeakingStarted)
        );
        assert_eq!(server_event(start, &mut speaking), None);
        assert_eq!(
            server_event(
                EngineEvent::Interrupted {
                    old: Epoch(1),
                    new: Epoch(2)
                },
                &mut speaking
            ),
            Some(ServerEvent::BotSpeakingStopped { interrupted: true })
        );
        assert_eq!(
            server_event(
                EngineEvent::BotSpeakingStopped { epoch: Epoch(1) },
                &mut speaking
            ),
            None
        );
    }

    #[test]
    fn a_turn_reported_at_its_response_end_is_not_reported_again() {
        use brisvox_core::timeline::{TimelineRecorder, TurnEvent};
        let mut rec = TimelineRecorder::new();
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        rec.mark(Epoch(1), TurnEvent::UserSpeechEnd, t0);
        rec.mark(
            Epoch(1),
            TurnEvent::FirstAudioOut,
            t0 + Duration::from_millis(700),
        );
        let record = Box::new(rec.open_turn().unwrap().clone());
        let mut state = ForwardState::default();
        let first = server_event(
            EngineEvent::ResponseDone {
                record: record.clone(),
            },
            &mut state,
        );
        assert!(
            matches!(first, Some(ServerEvent::TurnMetrics { turn: 1, ref metrics })
                if metrics.response_latency_ms == Some(700.0)),
            "{first:?}"
        );
        assert_eq!(
            server_event(EngineEvent::TurnFinished { record }, &mut state),
            None
        );
    }

    #[test]
    fn turn_metrics_carry_the_engine_hops_in_fractional_ms() {
        use brisvox_core::timeline::{TimelineRecorder, TurnEvent};
        let mut rec = TimelineRecorder::new();
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        rec.mark(Epoch(1), TurnEvent::TurnEnd, us(0));
        rec.mark(Epoch(1), TurnEvent::LlmRequestSent, us(40));
        rec.mark(Epoch(1), TurnEvent::TtsFirstByte, us(500_000));
        rec.mark(Epoch(1), TurnEvent::FirstAudioOut, us(500_060));
        let Some(ServerEvent::TurnMetrics { metrics, .. }) =
            turn_metrics(rec.open_turn().expect("open"))
        else {
            panic!("no turn_metrics");
        };
        let near = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-9);
        assert!(near(metrics.turn_end_to_llm_ms, 0.04), "{metrics:?}");
        assert!(
            near(metrics.tts_first_byte_to_transport_ms, 0.06),
            "{metrics:?}"
        );
        assert_eq!(metrics.interrupt_to_clear_ms, None);
    }

    #[test]
    fn interruption_shortcut_early_analysis_and_runtime_reach_the_engine() {
        let agent = AgentSettings::from_toml_str(
            r#"
language = "tr"
[turn.shortcut]
terminal_ms = 0
[turn.early_analysis]
enabled = true
fall_delay_ms = 64
[interruption]
min_words = 2
[runtime]
smart_turn_threads = 2
"#,
            &|_| None,
        )
        .expect("a valid file");
        let config = engine_config(&agent, 16_000);
        config.validate().expect("valid");
        let barge_in = &config.turn.barge_in;
        assert_eq!(barge_in.min_words, 2);
        assert!(config.turn.resume_false_interruptions, "on by default");
        assert!(barge_in.backchannels.iter().any(|w| w == "tamam"));
        let shortcut = config.turn.incomplete_shortcut.expect("on by default");
        assert_eq!(shortcut.terminal, Duration::ZERO);
        assert_eq!(shortcut.language, brisvox_text::Language::Tr);
        assert_eq!(config.vad.fall_delay, Some(Duration::from_millis(64)));
        assert_eq!(config.early_analysis.map(|e| e.max_per_turn), Some(4));
        assert_eq!(agent.runtime.smart_turn_threads, 2);
        // `backchannels = []` turns the word rule off.
        let agent = AgentSettings::from_toml_str("[interruption]\nbackchannels = []\n", &|_| None)
            .expect("valid");
        assert!(!engine_config(&agent, 16_000).turn.barge_in.has_word_rule());
    }

    #[test]
    fn an_early_analysis_the_vad_cannot_hint_is_refused_naming_the_key() {
        let e = AgentSettings::from_toml_str(
            "[turn.early_analysis]\nenabled = true\nfall_delay_ms = 100\n",
            &|_| None,
        )
        .expect_err("100 ms is 4 windows, not below the 100 ms stop")
        .to_string();
        assert!(e.contains("turn.early_analysis.fall_delay_ms"), "{e}");
    }

    #[test]
    fn the_mock_agent_maps_to_a_valid_engine_config() {
        let agent = AgentSettings::mock_defaults();
        let config = engine_config(&agent, 8_000);
        config.validate().expect("valid");
        assert_eq!(config.output_rate_hz, 8_000);
        assert_eq!(config.vad.min_silence, Duration::from_millis(100));
    }
}
