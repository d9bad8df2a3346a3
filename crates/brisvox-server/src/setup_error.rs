//! Why the engine could not be set up at startup (a leaf module: the setup
//! files, `providers`, `local_stt`, `local_tts` and `engine`, all report it).

/// Why the engine could not be set up at startup.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineSetupError {
    /// A model could not be loaded.
    #[error(
        "{what}: {reason} (run `brisvox models fetch`, or choose `[vad] detector = \"energy\"` and `[turn] analyzer = \"always_complete\"`)"
    )]
    Model {
        /// Which model.
        what: &'static str,
        /// The loader's message.
        reason: String,
    },
    /// The agent file selects a vendor but has no section for it.
    #[error("[{section}] is missing: it holds the vendor's model and api_key")]
    MissingSection {
        /// The section's name.
        section: &'static str,
    },
    /// The agent file selects a provider this build cannot run yet.
    #[error(
        "{section}.provider = \"{provider}\" is not available in this build; available: {available}"
    )]
    ProviderUnavailable {
        /// `stt`, `llm` or `tts`.
        section: &'static str,
        /// The provider asked for.
        provider: String,
        /// What this build offers.
        available: &'static str,
    },
    /// A local provider's program could not run (the message names the
    /// package to install).
    #[error("{reason}")]
    LocalProgram {
        /// What failed, and the fix.
        reason: String,
    },
}
