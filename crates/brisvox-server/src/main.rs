//! The `brisvox` binary: see `brisvox --help`, `docs/AGENT_FILE.md` and
//! `docs/WEBSOCKET_PROTOCOL.md`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use brisvox_server::admission::{NoPoolPressure, PoolPressure};
use brisvox_server::agent::exposure::{
    ALLOW_UNAUTHENTICATED_CALLS_FLAG, ALLOW_UNAUTHENTICATED_CALLS_KEY, check_exposure,
};
use brisvox_server::agent::{AgentSettings, process_env};
use brisvox_server::cli::{Cli, Command, LogArgs, ModelsAction};
use brisvox_server::engine::EngineCallHandler;
use brisvox_server::handler::CallHandler;
use brisvox_server::metrics::ServerMetrics;
use brisvox_server::model_metrics::ModelStatsSource;
use brisvox_server::serve::{ServerConfig, serve_until_signal};
use brisvox_server::shedding::{ModelPressure, ShedLimits};
use brisvox_server::telemetry::Telemetry;
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve {
            agent,
            bind,
            allow_unauthenticated_calls,
            log,
        } => serve(agent, bind, allow_unauthenticated_calls, log),
        Command::Check {
            file,
            probe,
            probe_timeout_s,
        } => check(
            &file,
            probe.then(|| std::time::Duration::from_secs(probe_timeout_s)),
        ),
        Command::Drain { pid, timeout_s } => {
            brisvox_server::drain::drain_process(pid, std::time::Duration::from_secs(timeout_s))
                .map_err(anyhow::Error::from)
        }
        Command::Models {
            action: ModelsAction::Fetch { dest },
        } => brisvox_server::models::fetch(dest.as_deref()).map_err(anyhow::Error::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("brisvox: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The call handler, the admission guard, the model counters and the
/// agent link's totals.
type CallEngine = (
    Arc<dyn CallHandler>,
    Box<dyn PoolPressure>,
    ModelStatsSource,
    Option<brisvox_server::agent_link::AgentLinkTotals>,
);

/// The call engine and the admission guard: over the model pools' waits
/// (`[limits] load_shedding`), else over its VAD queue. Loads the models
/// (blocking: before the runtime starts).
fn call_handler(settings: &AgentSettings) -> anyhow::Result<CallEngine> {
    let handler = EngineCallHandler::new(settings)?;
    let mut model_stats = handler.model_stats();
    let agent_link_totals = handler.agent_link_totals();
    let shedding = settings.limits.load_shedding.then(|| {
        ModelPressure::new(
            model_stats.vad.clone(),
            model_stats.smart_turn.clone(),
            ShedLimits {
                wait_ms: settings.limits.shed_wait_ms,
                target_percent: settings.limits.shed_target_load_percent,
                rate_percent: settings.limits.shed_admission_rate_percent,
            },
        )
    });
    let pressure: Box<dyn PoolPressure> = match shedding.flatten() {
        Some(p) => {
            model_stats.shedding = Some(p.report());
            Box::new(p)
        }
        None => handler
            .pool_pressure()
            .unwrap_or_else(|| Box::new(NoPoolPressure)),
    };
    tracing::info!(
        vad = ?settings.vad.detector,
        turn_analyzer = ?settings.turn.analyzer,
        load_shedding = settings.limits.load_shedding,
        shed_wait_ms = settings.limits.shed_wait_ms,
        shed_target_load_percent = settings.limits.shed_target_load_percent,
        shed_admission_rate_percent = settings.limits.shed_admission_rate_percent,
        "call engine ready"
    );
    Ok((Arc::new(handler), pressure, model_stats, agent_link_totals))
}

/// `brisvox serve`.
fn serve(
    agent: Option<PathBuf>,
    bind: Option<std::net::SocketAddr>,
    allow_unauthenticated_calls: bool,
    log: LogArgs,
) -> anyhow::Result<()> {
    brisvox_server::logging::init(log.log_format);
    let mut settings = match &agent {
        Some(path) => AgentSettings::load(path, &process_env)?,
        None => brisvox_server::local_defaults::local_demo_defaults(),
    };
    settings.apply_env_overrides(&process_env)?;
    if settings.uses_mock() {
        tracing::warn!(
            stt = settings.stt.provider.as_str(),
            llm = settings.llm.provider.as_str(),
            tts = settings.tts.provider.as_str(),
            "MOCK providers selected: the mock ones recognise no speech, write canned answers or play tones"
        );
    }
    let bind = match bind {
        Some(b) => b,
        None => settings.server.bind.parse().context("server.bind")?,
    };
    if let Some(open) = check_exposure(&settings, bind, allow_unauthenticated_calls)? {
        tracing::warn!(
            bind = %open.bind,
            open_routes = ?open.open_routes,
            paid_providers = ?open.paid,
            "UNAUTHENTICATED CALLS ALLOWED: anyone who reaches this address can start calls \
             on paid providers; allowed explicitly by {ALLOW_UNAUTHENTICATED_CALLS_KEY} or \
             {ALLOW_UNAUTHENTICATED_CALLS_FLAG}"
        );
    }
    let (handler, pressure, model_stats, agent_link_totals) = call_handler(&settings)?;
    let telemetry = Telemetry::from_env()?;
    if telemetry.is_some() {
        tracing::info!("OpenTelemetry: call traces exported over OTLP/HTTP");
    }
    let config = ServerConfig {
        agent: Arc::new(settings),
        bind,
        handler,
        pressure,
        metrics: ServerMetrics::new()
            .with_models(model_stats)
            .with_agent_link(agent_link_totals),
        telemetry: telemetry.clone(),
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let report = runtime
        .block_on(serve_until_signal(config))
        .with_context(|| format!("cannot serve on {bind}"))?;
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    tracing::info!(
        calls_at_start = report.calls_at_start,
        calls_ended = report.calls_ended,
        "stopped"
    );
    Ok(())
}

/// `brisvox check FILE`: the resolved settings on stdout, secrets redacted.
fn check(file: &Path, probe: Option<std::time::Duration>) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut settings = AgentSettings::load(file, &process_env)?;
    settings.apply_env_overrides(&process_env)?;
    let mut text = format!("# {}: valid\n", file.display());
    if settings.uses_mock() {
        text.push_str(
            "# NOTE: mock providers selected (no real STT/LLM/TTS): for tests and demos only\n",
        );
    }
    if let Ok(bind) = settings.server.bind.parse()
        && let Err(e) = check_exposure(&settings, bind, false)
    {
        text.push_str(&format!(
            "# WARNING: brisvox serve would refuse this file: {e}\n"
        ));
    }
    text.push_str(&settings.to_redacted_toml());
    let report = match probe {
        Some(within) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let report = runtime.block_on(brisvox_server::probe::probe(&settings, within))?;
            text.push_str(&report.to_string());
            Some(report)
        }
        None => None,
    };
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        // A reader that stopped early (`| head`) is not an error of the check.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    match report {
        Some(r) if !r.ok() => anyhow::bail!("a provider failed its probe (see above)"),
        _ => Ok(()),
    }
}
