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
        /// The agent file (TOML). Without it every default applies: MOCK providers.
        #[arg(long)]
        agent: Option<PathBuf>,
        /// Address to listen on (overrides `[server] bind`).
        #[arg(long)]
        bind: Option<std::net::SocketAddr>,
        /// Log options.
        #[command(flatten)]
        log: LogArgs,
    },
    /// Validate an agent file and print the resolved settings (secrets redacted).
    Check {
        /// The agent file (TOML).
        file: PathBuf,
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
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}
