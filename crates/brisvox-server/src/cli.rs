//! The command line: `brisvox serve`, `brisvox check FILE`, `brisvox models fetch`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::logging::LogFormat;

/// brisvox: a real-time voice-agent server.
#[derive(Debug, Parser)]
#[command(name = "brisvox", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve calls: /call, /twilio, /healthz, /readyz, /metrics.
    Serve {
        /// The agent file (TOML). Without it the local demo's defaults apply.
        #[arg(long, env = "BRISVOX_AGENT")]
        agent: Option<PathBuf>,
        /// Address to listen on (overrides `[server] bind`).
        #[arg(long, env = "BRISVOX_BIND")]
        bind: Option<std::net::SocketAddr>,
        /// Serve `/call` and `/twilio` without tokens on a non-loopback
        /// address even though the agent uses paid providers (refused by
        /// default: anyone who finds the port could run up the bill). Same as
        /// `[server] allow_unauthenticated_calls = true`.
        #[arg(long, env = "BRISVOX_ALLOW_UNAUTHENTICATED_CALLS")]
        allow_unauthenticated_calls: bool,
        /// Log options.
        #[command(flatten)]
        log: LogArgs,
    },
    /// Validate an agent file and print the resolved settings (secrets redacted).
    Check {
        /// The agent file (TOML).
        file: PathBuf,
        /// Also make one minimal live request per vendor provider with the
        /// file's keys (auth, model, voice, rate) and report what works.
        #[arg(long)]
        probe: bool,
        /// Time allowed to each probe, in seconds.
        #[arg(long, default_value_t = 15)]
        probe_timeout_s: u64,
    },
    /// Start the drain of a running `brisvox serve` (SIGTERM to its process)
    /// and wait until it has exited: the Kubernetes preStop hook.
    Drain {
        /// The server's process id (1 inside its container).
        #[arg(long, default_value_t = 1)]
        pid: u32,
        /// Give up waiting after this many seconds (the process keeps draining).
        #[arg(long, default_value_t = 86_400)]
        timeout_s: u64,
    },
    /// Model files.
    Models {
        /// What to do with them.
        #[command(subcommand)]
        action: ModelsAction,
    },
}

/// `brisvox models ...`.
#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Download the pinned model files and check their sha256
    /// (runs scripts/fetch-models.sh).
    Fetch {
        /// Where to put them (default: $BRISVOX_MODELS_DIR or ./models).
        #[arg(long)]
        dest: Option<PathBuf>,
    },
}

/// Log options shared by the subcommands that log.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct LogArgs {
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, env = "BRISVOX_LOG_FORMAT")]
    pub log_format: LogFormat,
}
