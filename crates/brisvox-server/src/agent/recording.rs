//! `[recording]`: opt-in call recording (a stereo WAV, caller left and bot
//! right as played, and a JSON transcript per call), written at the call's
//! end into a directory, within a length cap and an optional byte budget.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::AgentError;
use super::policy::range;

/// Default of `[recording] max_duration_s`: 15 minutes.
pub const DEFAULT_RECORDING_MAX_DURATION_S: u32 = 15 * 60;

/// `[recording]`: present means on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordingSettings {
    /// The directory recordings are written to (must exist).
    pub directory: PathBuf,
    /// Longest recording, in seconds; audio past it is dropped and the
    /// transcript says `truncated`.
    #[serde(default = "default_max_duration_s")]
    pub max_duration_s: u32,
    /// Most bytes of recordings (`.wav` and `.json` files) the directory may
    /// hold; a recording that would pass it is not written. Unset: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_directory_bytes: Option<u64>,
}

fn default_max_duration_s() -> u32 {
    DEFAULT_RECORDING_MAX_DURATION_S
}

impl RecordingSettings {
    pub(super) fn check(&self) -> Result<(), AgentError> {
        if !self.directory.is_dir() {
            return Err(AgentError::invalid(
                "recording.directory",
                self.directory.display(),
                "an existing directory",
            ));
        }
        range("recording.max_duration_s", self.max_duration_s, 1, 86_400)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_names_the_key() {
        let s = RecordingSettings {
            directory: PathBuf::from("/nonexistent/brisvox-recordings"),
            max_duration_s: 60,
            max_directory_bytes: None,
        };
        let err = s.check().unwrap_err().to_string();
        assert!(err.contains("recording.directory"), "{err}");
        let ok = RecordingSettings {
            directory: std::env::temp_dir(),
            ..s
        };
        assert!(ok.check().is_ok());
        let zero = RecordingSettings {
            max_duration_s: 0,
            ..ok
        };
        assert!(zero.check().is_err());
    }
}
