//! brisvox-server: the `brisvox` binary's library.
//!
//! - [`agent`]: the agent file (TOML) and its checked, resolved settings;
//!   [`secret`]: secrets as environment-variable references, never printed.
//! - [`handler`]: [`handler::CallHandler`], where a decoded call is handed to the
//!   engine; [`audio_edge`]: codec and rate conversion at the call's edge.
//! - [`http`]: the routes (`/healthz`, `/readyz`, `/metrics`, `/call`,
//!   `/twilio`); [`demo`]: the browser demo page at `/`; [`admission`]: call
//!   limit, pool pressure, draining;
//!   [`metrics`]: Prometheus metrics; [`serve`]: start, signal, drain;
//!   [`drain`]: `brisvox drain`, the drain started from outside (preStop);
//!   [`fd_limit`]: RLIMIT_NOFILE.
//! - [`cli`], [`logging`], [`models`]: the command line.
//!
//! Plugging the engine in: implement [`handler::CallHandler`] (one method,
//! `run_call(start, input, output)`), pass it in [`serve::ServerConfig`], and
//! start with [`serve::serve_until_signal`] (the binary) or [`serve::start`]
//! (tests, embedding).

pub mod admission;
pub mod agent;
pub mod audio_edge;
pub mod cli;
pub mod demo;
pub mod drain;
pub mod engine;
pub mod fd_limit;
pub mod handler;
pub mod http;
pub mod listener;
pub mod local_defaults;
pub mod local_stt;
pub mod local_tts;
pub mod logging;
pub mod metrics;
pub mod model_metrics;
pub mod models;
pub mod probe;
pub mod secret;
pub mod serve;
pub mod shedding;

mod session;
mod ws_call;
mod ws_twilio;

pub use ws_call::START_TIMEOUT;
pub use ws_twilio::MARK_EVERY_FRAMES;
