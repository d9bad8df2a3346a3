//! Test support: fixtures, mock providers with fixed latencies, the simulator
//! config (energy VAD, fixed "complete" verdict) and trace helpers.
//!
//! Every test here runs on tokio's paused clock with the energy VAD and a
//! fixed verdict (no model thread, so the run is deterministic), unless the
//! test says otherwise.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_audio::wav::read_wav;
use brisvox_core::timeline::{TurnEvent, TurnRecord};
use brisvox_engine::sim::{RecordingSink, SimCaller, SinkEvent, SinkLog};
use brisvox_engine::{
    CallEdge, CallReport, EngineConfig, EngineEvent, EventBus, Models, Providers, run_call,
};
use brisvox_providers::ProviderError;
use brisvox_providers::mock::{
    Fault, FaultPlan, Latency, MockLlm, MockLlmConfig, MockStt, MockSttConfig, MockTts,
    MockTtsConfig,
};

/// LLM first token, ms.
pub const LLM_FIRST_TOKEN_MS: u64 = 350;
/// TTS first byte, ms.
pub const TTS_FIRST_BYTE_MS: u64 = 150;
/// STT final after finalize, ms.
pub const STT_FINAL_MS: u64 = 150;
/// The VAD's stop hangover in the simulator config, ms.
pub const MIN_SILENCE_MS: u64 = 300;

/// The caller-speech fixtures at 16 kHz (`fixtures/en_*` and `fixtures/librivox_*`).
pub const FIXTURES_16K: [&str; 8] = [
    "en_long_question",
    "en_pause_in_sentence",
    "en_two_utterances",
    "librivox_0870",
    "librivox_0880",
    "librivox_0890",
    "librivox_0920",
    "librivox_0930",
];

/// A fixture: 16 kHz mono samples and the ground-truth utterances (ms).
pub struct Fixture {
    pub samples: Vec<i16>,
    pub utterances: Vec<(u64, u64)>,
}

/// Loads `fixtures/<name>.wav` and its sidecar.
pub fn fixture(name: &str) -> Fixture {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/");
    let wav = std::fs::read(format!("{dir}{name}.wav")).expect("fixture wav");
    let audio = read_wav(&wav).expect("a PCM16 wav");
    assert_eq!(audio.spec.sample_rate_hz, 16_000);
    let json = std::fs::read_to_string(format!("{dir}{name}.json")).expect("sidecar");
    let sidecar: serde_json::Value = serde_json::from_str(&json).expect("sidecar json");
    let utterances = sidecar["utterances"]
        .as_array()
        .expect("utterances")
        .iter()
        .map(|u| {
            (
                u["start_ms"].as_f64().expect("start_ms") as u64,
                u["end_ms"].as_f64().expect("end_ms") as u64,
            )
        })
        .collect();
    Fixture {
        samples: audio.to_mono(),
        utterances,
    }
}

/// `samples` followed by `ms` of digital silence.
pub fn then_silence(mut samples: Vec<i16>, ms: u64) -> Vec<i16> {
    samples.extend(std::iter::repeat_n(0, (ms * 16) as usize));
    samples
}

/// `turns` copies of the first utterance of `en_two_utterances`, each
/// followed by 3.5 s of silence: room for an answer (and a stall) after it.
pub fn first_utterance_repeated(turns: usize) -> Vec<i16> {
    let fx = fixture("en_two_utterances");
    let one = &fx.samples[..3_600 * 16];
    let mut samples = Vec::new();
    for _ in 0..turns {
        samples.extend_from_slice(one);
        samples.extend(std::iter::repeat_n(0, 3_500 * 16));
    }
    samples
}

/// `base` with `extra` mixed in from `at_ms` (the buffer grows if needed).
pub fn overlay(mut base: Vec<i16>, extra: &[i16], at_ms: u64) -> Vec<i16> {
    let at = (at_ms * 16) as usize;
    if base.len() < at + extra.len() {
        base.resize(at + extra.len(), 0);
    }
    for (dst, &src) in base[at..].iter_mut().zip(extra) {
        *dst = dst.saturating_add(src);
    }
    base
}

/// The mock providers of one call, kept for their counters.
#[derive(Clone)]
pub struct Mocks {
    pub stt: MockStt,
    pub llm: MockLlm,
    pub tts: MockTts,
}

impl Mocks {
    /// Fixed latencies (final 150 ms, first token 350 ms, first byte 150 ms),
    /// the answer "Okay, got it." in one token, transcripts "utterance <i>".
    pub fn fixed(seed: u64) -> Self {
        let stt = MockStt::new(MockSttConfig {
            seed,
            final_latency: Latency::Fixed(STT_FINAL_MS),
            ..MockSttConfig::default()
        });
        stt.set_transcriber(|i| format!("utterance {i}"));
        let llm = MockLlm::new(MockLlmConfig {
            seed,
            first_token: Latency::Fixed(LLM_FIRST_TOKEN_MS),
            token_interval: Latency::Fixed(30),
            words_per_token: 0,
            default_answer: "Okay, got it.".to_owned(),
        });
        let tts = MockTts::new(MockTtsConfig {
            seed,
            first_byte: Latency::Fixed(TTS_FIRST_BYTE_MS),
            ..MockTtsConfig::default()
        });
        Mocks { stt, llm, tts }
    }

    /// [`Mocks::fixed`] with the answer streamed one word per token, so a
    /// fault after N items cuts it mid-answer.
    pub fn fixed_word_tokens(seed: u64) -> Self {
        let m = Self::fixed(seed);
        m.llm.set_config(MockLlmConfig {
            seed,
            first_token: Latency::Fixed(LLM_FIRST_TOKEN_MS),
            token_interval: Latency::Fixed(30),
            words_per_token: 1,
            default_answer: "Okay, got it.".to_owned(),
        });
        m
    }

    /// The LLM's first three requests fail, one way each: the first is
    /// refused (503), the second fails (500) after `items` tokens, the third
    /// stalls before its first token. Later requests answer.
    pub fn with_llm_refused_failed_stalled(self, items: u32) -> Self {
        self.llm.set_faults(
            FaultPlan::none()
                .at(0, Fault::Refuse(ProviderError::server(503, "busy")))
                .at(
                    1,
                    Fault::FailAfter {
                        items,
                        error: ProviderError::server(500, "broke"),
                    },
                )
                .at(2, Fault::StallAfter { items: 0 }),
        );
        self
    }

    /// Log-normal latencies around the same medians, seeded.
    pub fn lognormal(seed: u64) -> Self {
        let m = Self::fixed(seed);
        m.stt.set_config(MockSttConfig {
            seed,
            final_latency: Latency::LogNormal {
                median_ms: STT_FINAL_MS as f64,
                sigma: 0.3,
            },
            ..MockSttConfig::default()
        });
        m.llm.set_config(MockLlmConfig {
            seed,
            first_token: Latency::LogNormal {
                median_ms: LLM_FIRST_TOKEN_MS as f64,
                sigma: 0.3,
            },
            token_interval: Latency::Fixed(30),
            words_per_token: 1,
            default_answer: "Sure, here is a fairly long answer to your question.".to_owned(),
        });
        m.tts.set_config(MockTtsConfig {
            seed,
            first_byte: Latency::LogNormal {
                median_ms: TTS_FIRST_BYTE_MS as f64,
                sigma: 0.3,
            },
            ..MockTtsConfig::default()
        });
        m
    }

    pub fn providers(&self) -> Providers {
        Providers {
            stt: Arc::new(self.stt.clone()),
            llm: Arc::new(self.llm.clone()),
            tts: Arc::new(self.tts.clone()),
            tools: None,
        }
    }
}

/// The simulator's settings: energy VAD with a 300 ms stop hangover, adaptive
/// turns waiting for the STT final.
pub fn sim_config() -> EngineConfig {
    let mut config = EngineConfig::default();
    config.vad.min_silence = Duration::from_millis(MIN_SILENCE_MS);
    config
}

/// What one simulated call gave.
pub struct Run {
    pub report: CallReport,
    pub sink: SinkLog,
    /// The call's time zero (the caller's first frame starts here).
    pub t0: Instant,
}

impl Run {
    /// `at` as milliseconds since the start of the caller's audio.
    pub fn ms(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64() * 1000.0
    }

    /// Times (ms) of every non-silent frame handed to the transport.
    pub fn audible_frames_ms(&self) -> Vec<f64> {
        self.sink
            .events()
            .iter()
            .filter_map(|e| match e {
                SinkEvent::Frame { at, rms, .. } if *rms > 0.0 => Some(self.ms(*at)),
                _ => None,
            })
            .collect()
    }

    /// The answered user turns (an LLM request was made).
    pub fn answered(&self) -> Vec<&TurnRecord> {
        self.report
            .turns
            .iter()
            .filter(|t| t.at(TurnEvent::LlmRequest).is_some())
            .collect()
    }
}

/// Plays `samples` as the caller through `run_call` and returns what happened.
pub async fn run(samples: Vec<i16>, config: EngineConfig, mocks: &Mocks, models: Models) -> Run {
    run_with(samples, config, mocks.providers(), models).await
}

/// A tool executor for tests: each tool answers `answer(arguments)` after
/// its delay on tokio's clock; a tool with no delay never answers.
pub struct ScriptedTools {
    pub tools: Vec<ScriptedTool>,
    pub invocations: std::sync::Mutex<Vec<brisvox_engine::ToolInvocation>>,
}

/// One tool of [`ScriptedTools`].
pub struct ScriptedTool {
    pub name: &'static str,
    /// `None`: the call never finishes (the engine's timeout cuts it).
    pub delay: Option<Duration>,
    pub answer: fn(&str) -> String,
}

impl ScriptedTools {
    pub fn new(tools: Vec<ScriptedTool>) -> Arc<Self> {
        Arc::new(ScriptedTools {
            tools,
            invocations: std::sync::Mutex::default(),
        })
    }

    pub fn invocations(&self) -> Vec<brisvox_engine::ToolInvocation> {
        self.invocations.lock().unwrap().clone()
    }
}

impl brisvox_engine::ToolExecutor for ScriptedTools {
    fn definitions(&self) -> Arc<[brisvox_providers::ToolDefinition]> {
        self.tools
            .iter()
            .map(|t| brisvox_providers::ToolDefinition {
                name: Arc::from(t.name),
                description: Arc::from("a test tool"),
                parameters: Arc::new(serde_json::json!({"type": "object"})),
            })
            .collect()
    }

    fn invoke(
        &self,
        call: brisvox_engine::ToolInvocation,
    ) -> brisvox_providers::BoxFuture<'static, brisvox_engine::ToolOutcome> {
        self.invocations.lock().unwrap().push(call.clone());
        let Some(tool) = self.tools.iter().find(|t| t.name == &*call.name) else {
            let outcome = brisvox_engine::ToolOutcome::error(format!("unknown tool {}", call.name));
            return Box::pin(std::future::ready(outcome));
        };
        let (delay, answer) = (tool.delay, (tool.answer)(&call.arguments));
        Box::pin(async move {
            match delay {
                Some(delay) => tokio::time::sleep(delay).await,
                None => std::future::pending::<()>().await,
            }
            brisvox_engine::ToolOutcome::ok(answer)
        })
    }
}

/// The text of the last message of `request` with `role`.
pub fn last_text(request: &brisvox_providers::LlmRequest, role: brisvox_providers::Role) -> String {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == role)
        .map(|m| m.text.to_string())
        .unwrap_or_default()
}

/// Whether the conversation of `request` ends with a tool result.
pub fn ends_with_tool_result(request: &brisvox_providers::LlmRequest) -> bool {
    request
        .messages
        .last()
        .is_some_and(|m| m.role == brisvox_providers::Role::Tool)
}

/// Every text the mock TTS received, in order.
pub fn tts_texts(mocks: &Mocks) -> Vec<String> {
    mocks.tts.texts().into_iter().map(|(_, t)| t).collect()
}

/// Plays `samples` with `providers` (mocks plus tools) and returns what happened.
pub async fn run_with(
    samples: Vec<i16>,
    config: EngineConfig,
    providers: Providers,
    models: Models,
) -> Run {
    let (sink, log) = RecordingSink::new();
    let t0 = tokio::time::Instant::now().into_std();
    let report = run_call(
        config,
        CallEdge::new(SimCaller::new(samples), sink),
        providers,
        models,
    )
    .await
    .expect("a valid config");
    Run {
        report,
        sink: log,
        t0,
    }
}

/// [`run`], also collecting every engine event of the call, in order.
pub async fn run_with_events(
    samples: Vec<i16>,
    config: EngineConfig,
    mocks: &Mocks,
    models: Models,
) -> (Run, Vec<EngineEvent>) {
    let (sink, log) = RecordingSink::new();
    let mut events = EventBus::new();
    let mut rx = events.subscribe(4096);
    let t0 = tokio::time::Instant::now().into_std();
    let report = run_call(
        config,
        CallEdge::new(SimCaller::new(samples), sink).with_events(events),
        mocks.providers(),
        models,
    )
    .await
    .expect("a valid config");
    let mut seen = Vec::new();
    while let Some(event) = rx.try_recv() {
        seen.push(event);
    }
    let run = Run {
        report,
        sink: log,
        t0,
    };
    (run, seen)
}

/// Silero and Smart Turn loaded from the models folder, or `None` (with a message)
/// when they are missing and `CI` is unset; with `CI` set a missing model fails.
pub fn real_models() -> Option<(
    Arc<brisvox_models::vad::silero::SileroModel>,
    Arc<brisvox_models::smart_turn::SmartTurn>,
)> {
    let loaded = brisvox_models::vad::silero::SileroModel::load()
        .map_err(|e| e.to_string())
        .and_then(|silero| {
            brisvox_models::smart_turn::SmartTurn::load(
                brisvox_models::smart_turn::SmartTurnConfig::default(),
            )
            .map(|turn| (Arc::new(silero), Arc::new(turn)))
            .map_err(|e| e.to_string())
        });
    match loaded {
        Ok(models) => Some(models),
        Err(e) if !brisvox_models::runtime::models_required() => {
            eprintln!("skipped: models not available ({e})");
            None
        }
        Err(e) => panic!("models required but not loadable: {e}"),
    }
}
