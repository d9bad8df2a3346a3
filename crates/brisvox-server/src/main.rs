//! The `brisvox` binary: see `brisvox --help` and `docs/AGENT_FILE.md`.

use std::process::ExitCode;

use brisvox_server::agent::{AgentSettings, process_env};
use brisvox_server::cli::{Cli, Command, ModelsAction};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { file } => check(&file),
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

/// `brisvox check FILE`: the resolved settings on stdout, secrets redacted.
fn check(file: &std::path::Path) -> anyhow::Result<()> {
    let settings = AgentSettings::load(file, &process_env)?;
    println!("# {}: valid", file.display());
    if settings.uses_mock() {
        println!("# NOTE: mock providers selected (no real STT/LLM/TTS): for tests and demos only");
    }
    print!("{}", settings.to_redacted_toml());
    Ok(())
}
