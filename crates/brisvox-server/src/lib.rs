//! brisvox-server: the `brisvox` binary's library.
//!
//! - [`agent`]: the agent file (TOML) and its checked, resolved settings.
//! - [`secret`]: secrets as environment-variable references, never printed.
//! - [`cli`]: the command line (clap); [`logging`]: text or JSON logs.
//! - [`models`]: `brisvox models fetch`.
//!
//! The binary (`src/main.rs`) is a thin shell over these modules.

pub mod agent;
pub mod cli;
pub mod logging;
pub mod models;
pub mod secret;
