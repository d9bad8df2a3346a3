//! Starting, running and draining the server.
//!
//! [`start`] binds the listener and serves the router on a task; the returned
//! [`RunningServer`] drains it: stop admitting (readiness false), wait for the
//! calls up to the grace period, end the rest, stop the listener.
//! [`serve_until_signal`] is `brisvox serve`: start, wait for SIGTERM or
//! ctrl-c, drain.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::admission::{Admission, PoolPressure};
use crate::agent::AgentSettings;
use crate::auth_limit::AuthLimiter;
use crate::carrier_control::CarrierControls;
use crate::handler::CallHandler;
use crate::http::router;
use crate::listener::{self, ConnectionLimits, ConnectionStats};
use crate::metrics::ServerMetrics;
use crate::state::AppState;
use crate::telemetry::Telemetry;

/// How long calls ended at the end of the grace get to close.
pub const END_CALLS_GRACE: Duration = Duration::from_secs(5);

/// What the server needs to start.
pub struct ServerConfig {
    /// The agent (also the source of `[server]` and `[limits]`).
    pub agent: Arc<AgentSettings>,
    /// Where to listen (usually `agent.server.bind` or `--bind`).
    pub bind: SocketAddr,
    /// Runs each call.
    pub handler: Arc<dyn CallHandler>,
    /// The pool-pressure hook of admission control.
    pub pressure: Box<dyn PoolPressure>,
    /// The metrics `/metrics` renders (every call's events feed them).
    pub metrics: ServerMetrics,
    /// The OpenTelemetry tracer every call's spans go to, if a collector is
    /// configured ([`Telemetry::from_env`]).
    pub telemetry: Option<Telemetry>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .finish_non_exhaustive()
    }
}

/// The connection rules of `agent` for `max_calls` calls under the
/// process's file limit ([`listener`]).
fn connection_limits(agent: &AgentSettings, max_calls: usize) -> ConnectionLimits {
    let nofile = rlimit::Resource::NOFILE
        .get()
        .map_or(1024, |(soft, _hard)| soft);
    ConnectionLimits {
        header_read_timeout: Duration::from_millis(u64::from(agent.server.header_read_timeout_ms)),
        max_connections: agent
            .server
            .max_connections
            .unwrap_or_else(|| listener::max_connections_for(nofile, max_calls)),
    }
}

/// A server serving on a task.
#[derive(Debug)]
pub struct RunningServer {
    local_addr: SocketAddr,
    state: Arc<AppState>,
    connections: Arc<ConnectionStats>,
    end_calls: watch::Sender<bool>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

/// How a drain went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainReport {
    /// Calls running when the drain began.
    pub calls_at_start: usize,
    /// Calls still running at the end of the grace, then ended by the server.
    pub calls_ended: usize,
}

/// Binds and starts serving.
pub async fn start(config: ServerConfig) -> std::io::Result<RunningServer> {
    let listener = TcpListener::bind(config.bind).await?;
    let local_addr = listener.local_addr()?;
    let (end_tx, end_rx) = watch::channel(false);
    let max_calls = config.agent.limits.max_calls as usize;
    let controls =
        CarrierControls::from_settings(&config.agent.telephony).map_err(std::io::Error::other)?;
    let state = Arc::new(AppState {
        controls,
        limits: AppState::limits_for(&config.agent),
        auth_limiter: AuthLimiter::new(config.agent.server.failed_auth.rules()),
        agent: config.agent,
        handler: config.handler,
        admission: Admission::new(max_calls, config.pressure),
        metrics: config.metrics,
        telemetry: config.telemetry,
        end_calls: end_rx,
        plivo_transfers: Default::default(),
    });
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let app = router(state.clone());
    let limits = connection_limits(&state.agent, max_calls);
    let connections = Arc::new(ConnectionStats::default());
    let stats = Arc::clone(&connections);
    let task = tokio::spawn(async move {
        listener::serve(listener, app, limits, stats, async move {
            let _ = stop_rx.await;
        })
        .await
    });
    tracing::info!(
        %local_addr,
        max_calls,
        max_connections = limits.max_connections,
        "listening"
    );
    Ok(RunningServer {
        local_addr,
        state,
        connections,
        end_calls: end_tx,
        stop: stop_tx,
        task,
    })
}

impl RunningServer {
    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The shared state (admission, metrics).
    pub fn state(&self) -> &Arc<AppState> {
        &self.state
    }

    /// The accept loop's counters (sockets open, refused at the bound).
    pub fn connections(&self) -> &Arc<ConnectionStats> {
        &self.connections
    }

    /// Drains: readiness false and new calls refused at once; running calls get
    /// up to `grace`, then are ended (`end` with `server_draining`, close 1001);
    /// then the listener stops.
    pub async fn drain(self, grace: Duration) -> DrainReport {
        let plan = DrainPlan {
            admit_for: Duration::ZERO,
            grace,
        };
        self.drain_with(plan, std::future::pending()).await
    }

    /// Drains by `plan`: readiness false at once; new calls still admitted for
    /// `plan.admit_for`, then refused; running calls get up to `plan.grace`
    /// (counted from the start), or until `end_now` resolves (a second signal),
    /// then are ended; then the listener stops.
    pub async fn drain_with(
        self,
        plan: DrainPlan,
        end_now: impl std::future::Future<Output = ()>,
    ) -> DrainReport {
        let admission = self.state.admission.clone();
        admission.stop_ready();
        let calls_at_start = admission.active();
        tracing::info!(
            calls = calls_at_start,
            admit_s = plan.admit_for.as_secs_f32(),
            grace_s = plan.grace.as_secs(),
            "draining"
        );
        let deadline = tokio::time::Instant::now() + plan.grace;
        let finished = async {
            tokio::time::sleep(plan.admit_for.min(plan.grace)).await;
            admission.start_draining();
            tracing::info!(calls = admission.active(), "draining: new calls refused");
            admission.wait_idle().await;
        };
        let ended_early = tokio::select! {
            () = finished => false,
            () = tokio::time::sleep_until(deadline) => {
                tracing::warn!(calls = admission.active(), "drain grace over: ending the remaining calls");
                true
            }
            () = end_now => {
                tracing::warn!(calls = admission.active(), "second signal: ending the remaining calls");
                true
            }
        };
        admission.start_draining();
        let mut calls_ended = 0;
        if ended_early && admission.active() > 0 {
            calls_ended = admission.active();
            let _ = self.end_calls.send(true);
            let _ = tokio::time::timeout(END_CALLS_GRACE, admission.wait_idle()).await;
        }
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "server stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "server task failed"),
            Ok(Ok(())) => {}
        }
        tracing::info!("drained");
        DrainReport {
            calls_at_start,
            calls_ended,
        }
    }
}

/// How a drain goes: see [`RunningServer::drain_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainPlan {
    /// How long new calls are still admitted after readiness turned false.
    pub admit_for: Duration,
    /// How long running calls may go on, from the start of the drain.
    pub grace: Duration,
}

/// The signal that stopped the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGTERM: an orchestrator stops the process (keep admitting for
    /// `[server] drain_admit_s`).
    Terminate,
    /// Ctrl-c: someone at a terminal (refuse new calls at once).
    Interrupt,
}

/// The stop signals, listened for from the moment they are installed: a
/// signal that arrives after [`StopSignals::install`] is never the default
/// action (which would kill the process without a drain), even while the
/// server is still starting.
#[derive(Debug)]
pub struct StopSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    /// Installs the handlers for SIGTERM and ctrl-c (SIGINT). Call it inside
    /// the runtime, before the server starts listening.
    pub fn install() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listen = |kind: SignalKind, name: &str| match signal(kind) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for {name}");
                    None
                }
            };
            StopSignals {
                term: listen(SignalKind::terminate(), "SIGTERM"),
                int: listen(SignalKind::interrupt(), "ctrl-c"),
            }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// Resolves on the next SIGTERM or ctrl-c, saying which.
    pub async fn next(&mut self) -> StopSignal {
        #[cfg(unix)]
        {
            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                () = recv(&mut self.int) => {
                    tracing::info!("ctrl-c");
                    StopSignal::Interrupt
                }
                () = recv(&mut self.term) => {
                    tracing::info!("SIGTERM");
                    StopSignal::Terminate
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("ctrl-c");
            StopSignal::Interrupt
        }
    }
}

/// Resolves on SIGTERM or ctrl-c, saying which (listening from this call on).
pub async fn shutdown_signal() -> StopSignal {
    StopSignals::install().next().await
}

/// What `brisvox serve` tells the person who started it once it listens: the
/// demo page's address (a wildcard bind is reached on 127.0.0.1) and the
/// providers in use.
pub fn ready_banner(addr: std::net::SocketAddr, agent: &AgentSettings) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    let what = |name: &str, local: &str| match name {
        "local" => local.to_owned(),
        "mock" => "mock (a stand-in for tests)".to_owned(),
        other => other.to_owned(),
    };
    format!(
        "brisvox is ready: open http://{host}:{port}/ in a browser, press Start and speak.\n\
         brisvox uses STT {stt}, LLM {llm}, TTS {tts}; calls also on {routes}. Ctrl-C stops it.",
        port = addr.port(),
        routes = call_routes(agent),
        stt = what(agent.stt.provider.as_str(), "local Whisper tiny.en"),
        llm = what(
            agent.llm.provider.as_str(),
            "local rules agent (no language model)"
        ),
        tts = what(agent.tts.provider.as_str(), "local voice"),
    )
}

/// The call routes `agent` serves, for the banner: `/call`, WebRTC's
/// `/webrtc/offer`, and each carrier's route that is on (`/twilio` always,
/// the others with their `[telephony.*]` table).
fn call_routes(agent: &AgentSettings) -> String {
    let carriers = brisvox_transport::Carrier::ALL
        .into_iter()
        .filter(|&c| agent.telephony.route_enabled(c))
        .map(|c| format!("/{}", c.as_str()));
    let routes: Vec<String> = ["/call".to_owned(), "/webrtc/offer (WebRTC)".to_owned()]
        .into_iter()
        .chain(carriers)
        .collect();
    routes.join(", ")
}

/// `brisvox serve`: raises the open-file limit, starts, waits for a signal,
/// drains (`[server] drain_admit_s` after SIGTERM, `drain_grace_s`); a second
/// signal ends the remaining calls at once.
pub async fn serve_until_signal(config: ServerConfig) -> std::io::Result<DrainReport> {
    match crate::fd_limit::raise_nofile_limit() {
        Ok(r) => tracing::info!(
            before = r.before,
            after = r.after,
            "RLIMIT_NOFILE soft limit"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot raise RLIMIT_NOFILE"),
    }
    let agent = Arc::clone(&config.agent);
    // Before listening: a SIGTERM right after "listening" must drain, not kill.
    let mut signals = StopSignals::install();
    let server = start(config).await?;
    // For the person who started it (scripts/run.sh): where to go, what runs.
    println!("{}", ready_banner(server.local_addr(), &agent));
    let signal = signals.next().await;
    let admit_s = match signal {
        StopSignal::Terminate => agent.server.drain_admit_s,
        StopSignal::Interrupt => 0,
    };
    let plan = DrainPlan {
        admit_for: Duration::from_secs(u64::from(admit_s)),
        grace: Duration::from_secs(u64::from(agent.drain_grace_s())),
    };
    let second = async move {
        signals.next().await;
    };
    Ok(server.drain_with(plan, second).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_gives_a_reachable_url_and_the_providers() {
        let mut agent = AgentSettings::mock_defaults();
        agent.stt.provider = crate::agent::SttProvider::Local;
        let banner = ready_banner("0.0.0.0:8080".parse().unwrap(), &agent);
        assert!(banner.contains("http://127.0.0.1:8080/"), "{banner}");
        assert!(banner.contains("STT local Whisper tiny.en"), "{banner}");
        assert!(banner.contains("LLM mock"), "{banner}");
        let banner = ready_banner("[::1]:9000".parse().unwrap(), &agent);
        assert!(banner.contains("http://[::1]:9000/"), "{banner}");
    }

    #[test]
    fn the_banner_names_the_call_routes_that_are_on() {
        let mut agent = AgentSettings::mock_defaults();
        let banner = ready_banner("127.0.0.1:8080".parse().unwrap(), &agent);
        assert!(
            banner.contains("calls also on /call, /webrtc/offer (WebRTC), /twilio."),
            "{banner}"
        );
        agent.telephony.telnyx = Some(Default::default());
        let banner = ready_banner("127.0.0.1:8080".parse().unwrap(), &agent);
        assert!(
            banner.contains("/webrtc/offer (WebRTC), /twilio, /telnyx."),
            "{banner}"
        );
    }
}
