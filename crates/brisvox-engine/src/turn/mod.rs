//! Turn-taking: the settings, the sans-IO turn machine, its interruption policy
//! and the word rules it reads transcripts with.

pub mod config;
pub(crate) mod interruption;
pub mod machine;
pub mod speculation;
pub mod words;

pub use config::{
    BargeInConfig, IdleConfig, IncompleteShortcut, NotHeardConfig, TurnConfig, TurnConfigError,
    TurnPolicy,
};
pub use machine::{
    Action, EndReason, NoTextReason, SpeakKind, StopId, TurnCounters, TurnMachine, TurnState,
    Verdict,
};
pub use speculation::{SpeculationConfig, same_turn_text};
