//! The call engine behind the websocket routes: [`EngineCallHandler`].
//!
//! One handler serves the whole process. It is built once at startup from the
//! agent file: the models are loaded then (Silero's weights and one Smart
//! Turn session per process, never per call), the VAD runs on its own inference
//! pool with windows of every call batched together, and Smart Turn runs on a
//! second pool so an analysis never delays VAD windows; the providers come
//! from [`crate::providers`]. Each call gets an [`EngineConfig`] derived from
//! the agent file and runs [`brisvox_engine::run_call`] on the route's edge as
//! it is (the route consumes the engine's events itself).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use brisvox_engine::turn::{
    BargeInConfig, IdleConfig, IncompleteShortcut, NotHeardConfig, TurnConfig,
    TurnPolicy as EnginePolicy,
};
use brisvox_engine::{
    CallEdge, Control, EarlyAnalysisConfig, EngineConfig, EventObserver, Models, Providers,
    VadSource, VerdictSource,
};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::smart_turn::{SmartTurnService, SmartTurnServiceConfig};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroOptions, SileroRate};
use tokio::sync::mpsc;

use crate::admission::{DEFAULT_QUEUE_CONFIRM, PoolPressure, QueueDepthGuard};
use crate::agent::{AgentSettings, Language, LlmProvider, TurnAnalyzer, TurnPolicy, VadDetector};
use crate::agent_link::{AgentLinkTotals, AgentLinks, CallAgentLink, CallTools, LinkedSource};
use crate::chaos::CallChaos;
use crate::handler::{CallFailed, CallFuture, CallHandler, CallStart, CallTransport, RouteEdge};
use crate::providers::{build_providers, language_code};
pub use crate::setup_error::EngineSetupError;
use crate::transfer_tool::TransferTool;

/// VAD windows waiting in the batched service above which new calls are
/// refused, once that has lasted [`DEFAULT_QUEUE_CONFIRM`]: about four windows
/// per call of 64 calls, far more than a healthy server ever queues.
pub const VAD_PRESSURE_WINDOWS: usize = 256;

/// Controls of the built-in tools waiting for the engine, at most (a say and
/// a transfer).
const TRANSFER_CONTROLS: usize = 4;

/// Runs every call of the process through the engine.
pub struct EngineCallHandler {
    providers: Providers,
    models: Models,
    vad_service: Option<VadService>,
    mock: bool,
    /// The agent file's `[[tools]]`, one executor per call.
    webhooks: Option<crate::webhook::WebhookTools>,
    /// The agent file's `[agent_link]`, one link per call.
    agent_links: Option<AgentLinks>,
    /// Consumers added to every call's events (tests, later the agent link).
    observers: Vec<Arc<dyn EventObserver>>,
    /// The agent file's `[chaos]`: faulted mocks for a share of calls.
    chaos: Option<CallChaos>,
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
            webhooks: crate::webhook::WebhookTools::new(&agent.tools),
            agent_links: AgentLinks::new(&agent.agent_link),
            observers: Vec::new(),
            chaos: CallChaos::new(agent),
        })
    }

    /// Adds `observer` to the events of every call this handler runs, beside
    /// the route's own consumers (its writer, `/metrics`, the logs).
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn EventObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Replaces the agent file's STT provider for every call (benchmarks that
    /// drive a mock with a known transcript, [`brisvox_providers::mock::MockStt`]).
    #[must_use]
    pub fn with_stt(mut self, stt: Arc<dyn brisvox_providers::SttProvider>) -> Self {
        self.providers.stt = stt;
        self
    }

    /// Every call's agent link statistics added up, for `/metrics` (`None`
    /// without `[agent_link]`).
    pub fn agent_link_totals(&self) -> Option<AgentLinkTotals> {
        self.agent_links.as_ref().map(AgentLinks::totals)
    }

    /// The model services whose counters `/metrics` shows.
    pub fn model_stats(&self) -> crate::model_metrics::ModelStatsSource {
        crate::model_metrics::ModelStatsSource {
            vad: self.vad_service.clone(),
            smart_turn: match &self.models.verdict {
                VerdictSource::Service(service) => Some(service.clone()),
                _ => None,
            },
            shedding: None,
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
    fn run_call(&self, start: CallStart, mut edge: RouteEdge) -> CallFuture {
        let mut config = engine_config(&start.agent, start.output_sample_rate_hz);
        config.output_frame_ms = start.output_frame_ms;
        for observer in &self.observers {
            edge.events.observe(Arc::clone(observer));
        }
        let mut link = self.agent_links.as_ref().map(|l| l.start(&start));
        if let Some(link) = &link {
            edge.events.observe(link.observer());
        }
        let mut providers = self.providers.clone();
        if let Some(chaos) = &self.chaos
            && chaos.apply(&start.call_id, &mut providers)
        {
            tracing::info!(call_id = %start.call_id, "chaos: this call's mocks fail as [chaos] plans");
        }
        let webhooks = self
            .webhooks
            .as_ref()
            .map(|w| w.for_call(&start.call_id, start.metadata.clone()));
        let agent = link.as_ref().map(CallAgentLink::tools);
        let (transfer, server_controls) = transfer_tool(&start);
        if let Some(t) = &transfer {
            edge.events.observe(t.observer());
        }
        if webhooks.is_some() || agent.is_some() || transfer.is_some() {
            providers.tools = Some(Arc::new(CallTools {
                transfer,
                webhooks,
                agent,
            }));
        }
        let source = LinkedSource::new(edge.source, link.as_mut().and_then(|l| l.take_controls()))
            .with_server_controls(server_controls);
        let edge = CallEdge {
            context: edge.context,
            source,
            sink: edge.sink,
            events: edge.events,
        };
        let models = self.models.clone();
        let call_id = start.call_id;
        Box::pin(async move {
            let result = brisvox_engine::run_call(config, edge, providers, models).await;
            if let Some(link) = link {
                link.finish(result.as_ref().ok().map(|r| &r.end)).await;
            }
            let report = result.map_err(|e| CallFailed {
                reason: e.to_string(),
            })?;
            tracing::info!(
                call_id = %call_id,
                turns = report.turn_counters.turns,
                responses = report.turn_counters.responses,
                barge_ins = report.turn_counters.barge_ins,
                failed_responses = report.failed_responses,
                end = ?report.end,
                "call finished"
            );
            Ok(report.end)
        })
    }
}

/// The engine settings of one call, from the agent file.
pub fn engine_config(agent: &AgentSettings, output_rate_hz: u32) -> EngineConfig {
    let mut config = EngineConfig {
        output_rate_hz,
        system_prompt: Arc::from(agent.prompt.as_str()),
        language: engine_language(agent.language),
        turn: turn_config(agent),
        tools: tool_settings(agent),
        apology: (agent.apology.as_deref())
            .filter(|a| !a.trim().is_empty())
            .map(Arc::from),
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
    config.analysis_hold = Duration::from_millis(u64::from(agent.turn.analysis_hold_ms));
    let early = &agent.turn.early_analysis;
    config.early_analysis = early.enabled.then(|| EarlyAnalysisConfig {
        max_per_turn: early.max_per_turn,
        max_tail: Duration::from_millis(u64::from(early.max_tail_ms)),
    });
    config
}

/// The built-in `transfer_call` of a phone call (`[telephony.transfer]`),
/// and the receiver of its controls.
fn transfer_tool(
    start: &CallStart,
) -> (Option<Arc<TransferTool>>, Option<mpsc::Receiver<Control>>) {
    let settings = start.agent.telephony.transfer.as_ref();
    match (settings, &start.transport) {
        (Some(settings), CallTransport::Carrier { .. }) => {
            let (tx, rx) = mpsc::channel(TRANSFER_CONTROLS);
            (Some(Arc::new(TransferTool::new(settings, tx))), Some(rx))
        }
        _ => (None, None),
    }
}

/// `[tool_calls]` as the engine's tool settings.
fn tool_settings(agent: &AgentSettings) -> brisvox_engine::ToolSettings {
    let t = &agent.tool_calls;
    brisvox_engine::ToolSettings {
        max_rounds: t.max_rounds,
        timeout: Duration::from_millis(u64::from(t.timeout_ms)),
        filler: t.filler.clone().map(|text| brisvox_engine::ToolFiller {
            after: Duration::from_millis(u64::from(t.filler_after_ms)),
            text,
        }),
    }
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
        prefetch: s.prefetch,
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
        // The call's one length limit: the engine ends the call at it.
        max_call_duration: Some(Duration::from_secs(u64::from(
            agent.limits.max_call_duration_s,
        ))),
        greeting: agent.greeting.clone().filter(|g| !g.trim().is_empty()),
        resume_false_interruptions: i.resume_false_interruptions,
        not_heard: (!t.not_heard_reply.trim().is_empty()).then(|| NotHeardConfig {
            reply: t.not_heard_reply.clone(),
            min_speech: ms(t.not_heard_min_speech_ms),
        }),
        speculation: t
            .speculation
            .enabled
            .then(|| brisvox_engine::turn::SpeculationConfig {
                on_partial: t.speculation.on_partial,
                partial_stable: ms(t.speculation.partial_stable_ms),
            }),
    }
}

/// The batched Silero service on its own pool: `[runtime] vad_threads`
/// threads (0: half the cores this process may use), queues sized from `[limits] max_calls`
/// ([`pool_queue_capacity`](crate::agent::pool_queue_capacity) jobs per line,
/// four windows per call, at least the service's default).
fn silero_service(agent: &AgentSettings) -> Result<VadService, EngineSetupError> {
    let threads = agent.runtime.vad_threads_for(crate::agent::usable_cores());
    // The windows are computed in Rust (`SileroKernel::Native`, no session); on
    // ONNX Runtime it would be one session per pool thread, since a session runs
    // one batch at a time.
    let options = SileroOptions {
        sessions: threads,
        ..SileroOptions::default()
    };
    let model = SileroModel::load_with(options).map_err(|e| EngineSetupError::Model {
        what: "Silero VAD",
        reason: e.to_string(),
    })?;
    let queue = crate::agent::pool_queue_capacity(agent.limits.max_calls);
    let mut pool_config = PoolConfig::named("vad");
    pool_config.threads = threads;
    pool_config.high_capacity = queue;
    pool_config.normal_capacity = queue;
    let config = vad_service_config(agent);
    tracing::info!(threads, kernel = ?model.options().kernel, linger = ?config.linger, "Silero VAD pool started");
    Ok(VadService::new(
        Arc::new(model),
        InferencePool::new(pool_config),
        config,
    ))
}

/// The VAD service's batching: its window queue sized from `[limits]
/// max_calls`, its linger from `[runtime] vad_linger_ms`.
fn vad_service_config(agent: &AgentSettings) -> VadServiceConfig {
    let mut config = VadServiceConfig::new(SileroRate::Hz16000);
    config.queue_capacity = config
        .queue_capacity
        .max(4 * agent.limits.max_calls as usize);
    config.linger = agent.runtime.vad_linger();
    config
}

/// Smart Turn through one service shared by every call: its own pool of
/// `[runtime] smart_turn_threads` threads (0: one per core this process may use) with `smart_turn_intra_threads`
/// ONNX Runtime threads per analysis, a queue sized from `[limits] max_calls`,
/// snapshot buffers from its free list, refused or late analyses counted as
/// failed verdicts (the turn then waits for its fallback).
fn smart_turn_source(agent: &AgentSettings) -> Result<VerdictSource, EngineSetupError> {
    let r = &agent.runtime;
    let mut config = SmartTurnServiceConfig {
        threads: r.smart_turn_threads_for(crate::agent::usable_cores()),
        queue_capacity: crate::agent::pool_queue_capacity(agent.limits.max_calls),
        start_timeout: Duration::from_millis(u64::from(r.smart_turn_start_timeout_ms)),
        ..SmartTurnServiceConfig::default()
    };
    config.model.intra_threads = r.smart_turn_intra_threads as usize;
    tracing::info!(
        threads = config.threads,
        intra_threads = config.model.intra_threads,
        "Smart Turn executor starting"
    );
    let service = SmartTurnService::start(config).map_err(|e| EngineSetupError::Model {
        what: "Smart Turn v3.2",
        reason: e.to_string(),
    })?;
    let model = service.model();
    match model.softmax_fallback() {
        None => tracing::info!(
            exact_softmax_nodes = model.exact_softmax_nodes(),
            lookup_chains = model.lookup_chains(),
            signed_operands = model.signed_operands(),
            "Smart Turn attention softmax on brisvox's kernel (ONNX Runtime's output, bit for bit)"
        ),
        Some(why) => tracing::warn!(
            reason = why,
            "Smart Turn attention softmax left on ONNX Runtime's kernel (same output, more CPU)"
        ),
    }
    if let Some(why) = model.lookup_fallback() {
        tracing::warn!(
            reason = why,
            "Smart Turn elementwise chains left on ONNX Runtime's operators (same output, more CPU)"
        );
    }
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

    #[test]
    fn the_apology_reaches_the_engine_and_blank_is_none() {
        let parse = |text| AgentSettings::from_toml_str(text, &|_| None).expect("valid");
        let agent = parse("apology = \"Sorry, one moment.\"");
        let config = engine_config(&agent, 16_000);
        assert_eq!(config.apology.as_deref(), Some("Sorry, one moment."));
        assert_eq!(
            engine_config(&parse("apology = \" \""), 16_000).apology,
            None
        );
    }

    #[test]
    fn interruption_shortcut_early_analysis_and_runtime_reach_the_engine() {
        let agent = AgentSettings::from_toml_str(
            r#"
language = "tr"
[turn]
analysis_hold_ms = 400
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
        assert_eq!(config.apology, None, "none by default");
        let barge_in = &config.turn.barge_in;
        assert_eq!(barge_in.min_words, 2);
        assert!(config.turn.resume_false_interruptions, "on by default");
        assert!(barge_in.backchannels.iter().any(|w| w == "tamam"));
        let shortcut = config.turn.incomplete_shortcut.expect("on by default");
        assert_eq!(shortcut.terminal, Duration::ZERO);
        assert_eq!(shortcut.language, brisvox_text::Language::Tr);
        assert_eq!(config.vad.fall_delay, Some(Duration::from_millis(64)));
        assert_eq!(config.early_analysis.map(|e| e.max_per_turn), Some(4));
        assert_eq!(config.analysis_hold, Duration::from_millis(400));
        assert_eq!(EngineConfig::default().analysis_hold, Duration::ZERO);
        assert_eq!(agent.runtime.smart_turn_threads, 2);
        assert_eq!(config.turn.speculation, None, "speculation is opt-in");
        let agent = AgentSettings::from_toml_str(
            "[turn.speculation]\nenabled = true\non_partial = false\npartial_stable_ms = 150\n",
            &|_| None,
        )
        .expect("valid");
        let spec = engine_config(&agent, 16_000).turn.speculation.expect("on");
        assert!(!spec.on_partial);
        assert_eq!(spec.partial_stable, Duration::from_millis(150));
        // `backchannels = []` turns the word rule off.
        let agent = AgentSettings::from_toml_str("[interruption]\nbackchannels = []\n", &|_| None)
            .expect("valid");
        assert!(!engine_config(&agent, 16_000).turn.barge_in.has_word_rule());
    }

    #[test]
    fn the_vad_linger_key_reaches_the_vad_service() {
        use brisvox_models::vad::linger::Linger;
        let parse = |text| AgentSettings::from_toml_str(text, &|_| None).expect("valid");
        let linger = |text| vad_service_config(&parse(text)).linger;
        assert_eq!(linger(""), Linger::Adaptive(Duration::from_millis(4)));
        assert_eq!(
            linger("[runtime]\nvad_linger_ms = 7\n"),
            Linger::Adaptive(Duration::from_millis(7))
        );
        assert_eq!(linger("[runtime]\nvad_linger_ms = 0\n"), Linger::Off);
        let e = AgentSettings::from_toml_str("[runtime]\nvad_linger_ms = 33\n", &|_| None)
            .expect_err("past one window")
            .to_string();
        assert!(e.contains("runtime.vad_linger_ms"), "{e}");
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

    /// The agent file's scripted tool calls: the mock calls the tool the
    /// caller's words name, then answers with the result; other words get
    /// the plain answer. `[tool_calls]` reaches the engine's settings.
    #[tokio::test(start_paused = true)]
    async fn the_mock_llm_calls_scripted_tools_and_answers_with_the_result() {
        use brisvox_providers::{LlmEvent, LlmProvider, LlmRequest, Message, ToolCallAssembler};
        let agent = AgentSettings::from_toml_str(
            "[llm.mock]\ntool_result_answer = \"Found {result}\"\n\
             tool_calls = [{ when_heard = \"Order\", tool = \"order_status\", arguments = '{\"order_id\":\"42\"}' }]\n\
             [tool_calls]\nmax_rounds = 2\ntimeout_ms = 900\nfiller = \"One moment.\"\n",
            &|_| None,
        )
        .expect("valid");
        let tools = engine_config(&agent, 16_000).tools;
        assert_eq!(
            (tools.max_rounds, tools.timeout),
            (2, Duration::from_millis(900))
        );
        assert_eq!(tools.filler.map(|f| f.text), Some("One moment.".to_owned()));
        let llm = crate::providers::mock_llm(&agent.llm.mock, 0);
        let events = |messages: Vec<Message>| {
            let mut stream = llm.stream(LlmRequest::new(messages));
            async move {
                let mut out = Vec::new();
                while let Some(e) = stream.next().await {
                    out.push(e);
                }
                out
            }
        };
        let mut calls = ToolCallAssembler::default();
        for e in events(vec![Message::user("where is my order")]).await {
            calls.push(&e);
        }
        let calls = calls.finish();
        assert_eq!(
            (&*calls[0].name, &*calls[0].arguments),
            ("order_status", r#"{"order_id":"42"}"#)
        );
        let after = events(vec![
            Message::user("where is my order"),
            Message::assistant_tool_calls(calls.clone()),
            Message::tool_result(calls[0].id.clone(), "shipped"),
        ])
        .await;
        let text: String = after
            .iter()
            .filter_map(|e| match e {
                LlmEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Found shipped");
        let plain = events(vec![Message::user("hello")]).await;
        assert!(
            plain.contains(&LlmEvent::TextDelta("Okay, ".to_owned())),
            "{plain:?}"
        );
        let bad = AgentSettings::from_toml_str(
            "[llm.mock]\ntool_calls = [{ when_heard = \"x\", tool = \"t\", arguments = \"[1]\" }]\n",
            &|_| None,
        )
        .expect_err("arguments must be an object")
        .to_string();
        assert!(bad.contains("llm.mock.tool_calls[0].arguments"), "{bad}");
    }
}
