//! Turn-taking: the settings and the sans-IO turn machine.

pub mod config;
pub mod machine;

pub use config::{BargeInConfig, IdleConfig, TurnConfig, TurnConfigError, TurnPolicy};
pub use machine::{
    Action, EndReason, SpeakKind, StopId, TurnCounters, TurnMachine, TurnState, Verdict,
};
