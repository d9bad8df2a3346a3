//! `v2v --sim`: the brisvox server in this process, behind its real websocket
//! on 127.0.0.1, with the agent file's mock providers of fixed latency; the
//! normal v2v client measures it from the outside.
//!
//! Every turn then has a known floor, computed from the agent settings
//! ([`Floor::of`]): the VAD's stop (its minimum silence rounded up to whole
//! 32 ms windows), the STT final after it, the LLM's first token and the TTS's
//! first audio. V2V minus the floor is what the engine, the transport and the
//! harness add. The server runs on a runtime of its own, so the client's timers
//! and the server's work are scheduled apart, as with two processes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use brisvox_server::admission::NoPoolPressure;
use brisvox_server::agent::{
    AgentSettings, LlmProvider, SttProvider, TtsProvider, TurnAnalyzer, TurnPolicy, VadDetector,
    process_env,
};
use brisvox_server::engine::EngineCallHandler;
use brisvox_server::metrics::ServerMetrics;
use brisvox_server::serve::{RunningServer, ServerConfig, start};
use serde::Serialize;

/// The agent file `--sim` uses without `--agent`.
pub(crate) const DEFAULT_AGENT: &str = "bench/agents/mock-no-models.toml";

/// Audio time of one VAD window (Silero and the energy detector), ms.
const VAD_WINDOW_MS: u32 = 32;

/// The nominal latency floor of a turn with the agent's mock providers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Floor {
    /// The VAD stop after the end of speech: `min_silence_ms` rounded up to
    /// whole 32 ms windows, ms.
    pub(crate) vad_stop_ms: u32,
    /// The mock STT's final after the VAD stop's Finalize, ms (0 when the
    /// turn does not wait for the final).
    pub(crate) stt_final_ms: u32,
    /// A fixed-silence turn end, counted from the end of speech, ms (0 under
    /// the adaptive policy).
    pub(crate) fixed_silence_ms: u32,
    /// The turn end after the end of speech: `vad_stop + stt_final`, or the
    /// fixed silence if that is longer, ms.
    pub(crate) turn_end_ms: u32,
    /// The mock LLM's first token, ms.
    pub(crate) llm_first_token_ms: u32,
    /// The mock TTS's first audio, ms.
    pub(crate) tts_first_byte_ms: u32,
    /// `turn_end + llm_first_token + tts_first_byte`, ms.
    pub(crate) total_ms: u32,
}

impl Floor {
    /// The floor of `agent`; an error when a provider is not a mock (its
    /// latency is not fixed, so there is no floor to state).
    pub(crate) fn of(agent: &AgentSettings) -> Result<Floor, String> {
        if agent.stt.provider != SttProvider::Mock
            || agent.llm.provider != LlmProvider::Mock
            || agent.tts.provider != TtsProvider::Mock
        {
            return Err(format!(
                "--sim needs mock providers of fixed latency; the agent has stt {}, llm {}, tts {}",
                agent.stt.provider.as_str(),
                agent.llm.provider.as_str(),
                agent.tts.provider.as_str()
            ));
        }
        let vad_stop_ms = agent.vad.min_silence_ms.div_ceil(VAD_WINDOW_MS) * VAD_WINDOW_MS;
        let stt_final_ms = if agent.turn.require_final {
            agent.stt.mock.final_latency_ms
        } else {
            0
        };
        let fixed_silence_ms = match agent.turn.policy {
            TurnPolicy::Fixed => agent
                .turn
                .silence_ms
                .unwrap_or(brisvox_server::agent::DEFAULT_SILENCE_MS),
            TurnPolicy::Adaptive => 0,
        };
        let turn_end_ms = (vad_stop_ms + stt_final_ms).max(fixed_silence_ms);
        let llm_first_token_ms = agent.llm.mock.first_token_ms;
        let tts_first_byte_ms = agent.tts.mock.first_byte_ms;
        Ok(Floor {
            vad_stop_ms,
            stt_final_ms,
            fixed_silence_ms,
            turn_end_ms,
            llm_first_token_ms,
            tts_first_byte_ms,
            total_ms: turn_end_ms + llm_first_token_ms + tts_first_byte_ms,
        })
    }

    /// One line for the report.
    pub(crate) fn describe(&self) -> String {
        let end = if self.fixed_silence_ms > self.vad_stop_ms + self.stt_final_ms {
            format!("fixed silence {}", self.fixed_silence_ms)
        } else {
            format!(
                "VAD stop {} (min silence in 32 ms windows) + STT final {}",
                self.vad_stop_ms, self.stt_final_ms
            )
        };
        format!(
            "floor {} ms = turn end {} ms ({end}) + LLM first token {} + TTS first byte {}",
            self.total_ms, self.turn_end_ms, self.llm_first_token_ms, self.tts_first_byte_ms
        )
    }
}

/// The agent file as given, or found from the source tree when the relative
/// path does not exist here (tests run in the crate's directory).
pub(crate) fn resolve_agent(path: &Path) -> PathBuf {
    if path.is_relative() && !path.exists() {
        let from_tree = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path);
        if from_tree.exists() {
            return from_tree;
        }
    }
    path.to_path_buf()
}

/// What the report says about the simulated server.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SimInfo {
    /// The agent file.
    pub(crate) agent: String,
    /// VAD detector and turn analyzer, as configured.
    pub(crate) vad: String,
    /// The turn analyzer.
    pub(crate) turn_analyzer: String,
    /// The floor.
    pub(crate) floor: Floor,
    /// Worker threads of the server's runtime.
    pub(crate) server_workers: usize,
}

/// The server running in this process.
pub(crate) struct SimServer {
    runtime: tokio::runtime::Runtime,
    server: RunningServer,
    /// What the report states.
    pub(crate) info: SimInfo,
    /// The server's metrics (the calls' counters, read after a run).
    pub(crate) metrics: ServerMetrics,
}

impl SimServer {
    /// Loads `agent_path`, builds the engine (models loaded here, blocking) and
    /// starts the server on 127.0.0.1 with a free port.
    pub(crate) fn start(agent_path: &Path, server_workers: usize) -> Result<SimServer, String> {
        Self::start_with_stt(agent_path, server_workers, None)
    }

    /// [`start`](Self::start), with `stt` instead of the agent file's STT when given.
    pub(crate) fn start_with_stt(
        agent_path: &Path,
        server_workers: usize,
        stt: Option<Arc<dyn brisvox_providers::SttProvider>>,
    ) -> Result<SimServer, String> {
        let agent = AgentSettings::load(agent_path, &process_env).map_err(|e| e.to_string())?;
        let floor = Floor::of(&agent)?;
        let mut handler = EngineCallHandler::new(&agent).map_err(|e| e.to_string())?;
        if let Some(stt) = stt {
            handler = handler.with_stt(stt);
        }
        let pressure = handler
            .pool_pressure()
            .unwrap_or_else(|| Box::new(NoPoolPressure));
        let info = SimInfo {
            agent: agent_path.display().to_string(),
            vad: match agent.vad.detector {
                VadDetector::Silero => "silero",
                VadDetector::Energy => "energy",
            }
            .to_string(),
            turn_analyzer: match agent.turn.analyzer {
                TurnAnalyzer::SmartTurn => "smart_turn",
                TurnAnalyzer::AlwaysComplete => "always_complete",
            }
            .to_string(),
            floor,
            server_workers: server_workers.max(1),
        };
        let metrics = ServerMetrics::new();
        let config = ServerConfig {
            agent: Arc::new(agent),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            handler: Arc::new(handler),
            pressure,
            metrics: metrics.clone(),
            telemetry: None,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(server_workers.max(1))
            .thread_name("sim-server")
            .enable_all()
            .build()
            .map_err(|e| format!("server runtime: {e}"))?;
        let server = runtime
            .block_on(start(config))
            .map_err(|e| format!("cannot start the server on 127.0.0.1: {e}"))?;
        Ok(SimServer {
            runtime,
            server,
            info,
            metrics,
        })
    }

    /// The websocket URL of `route` (`/call` when empty).
    pub(crate) fn url(&self, route: &str) -> String {
        let route = if route.is_empty() { "/call" } else { route };
        format!("ws://{}{route}", self.server.local_addr())
    }

    /// Drains the server (calls are over by now) and stops its runtime.
    pub(crate) fn stop(self) {
        let SimServer {
            runtime, server, ..
        } = self;
        runtime.block_on(server.drain(Duration::from_secs(1)));
        runtime.shutdown_timeout(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(text: &str) -> AgentSettings {
        AgentSettings::from_toml_str(text, &|_| None).unwrap()
    }

    const MOCKS: &str = r#"
[stt]
provider = "mock"
[stt.mock]
final_latency_ms = 150
[llm]
provider = "mock"
[llm.mock]
first_token_ms = 350
[tts]
provider = "mock"
[tts.mock]
first_byte_ms = 150
"#;

    #[test]
    fn the_floor_adds_the_vad_windows_and_the_mock_latencies() {
        let a = agent(&format!("{MOCKS}\n[vad]\nmin_silence_ms = 100\n"));
        let f = Floor::of(&a).unwrap();
        assert_eq!(f.vad_stop_ms, 128, "100 ms is 4 windows of 32 ms");
        assert_eq!(f.turn_end_ms, 128 + 150);
        assert_eq!(f.total_ms, 128 + 150 + 350 + 150);
        let a = agent(&format!("{MOCKS}\n[vad]\nmin_silence_ms = 96\n"));
        assert_eq!(Floor::of(&a).unwrap().vad_stop_ms, 96);
        assert!(
            Floor::of(&a)
                .unwrap()
                .describe()
                .starts_with("floor 746 ms")
        );
    }

    #[test]
    fn a_longer_fixed_silence_sets_the_turn_end() {
        let a = agent(&format!(
            "{MOCKS}\n[turn]\npolicy = \"fixed\"\nsilence_ms = 450\n"
        ));
        let f = Floor::of(&a).unwrap();
        assert_eq!((f.fixed_silence_ms, f.turn_end_ms), (450, 450));
        assert_eq!(f.total_ms, 450 + 350 + 150);
        assert!(f.describe().contains("fixed silence 450"));
    }

    #[test]
    fn real_providers_have_no_floor() {
        let mut a = agent(MOCKS);
        a.llm.provider = LlmProvider::Local;
        let e = Floor::of(&a).unwrap_err();
        assert!(e.contains("mock providers"), "{e}");
    }

    #[test]
    fn a_missing_agent_file_is_an_error_not_a_panic() {
        let e = SimServer::start(Path::new("/nonexistent/agent.toml"), 1)
            .err()
            .expect("refused");
        assert!(e.contains("/nonexistent/agent.toml"), "{e}");
    }
}
