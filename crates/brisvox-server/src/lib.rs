//! brisvox-server: the `brisvox` binary's library.
//!
//! Two sides, whose modules never import each other in a ring
//! (`scripts/check-module-cycles.py`):
//!
//! - **Setup** (once, at startup): [`agent`] (the agent file (TOML) and its
//!   checked, resolved settings), [`secret`] (secrets as environment-variable
//!   references, never printed);
//!   [`providers`], [`local_stt`], [`local_tts`], [`local_defaults`] (which
//!   providers run), [`engine`] ([`engine::EngineCallHandler`]: models,
//!   providers and the per-call engine settings), [`setup_error`].
//! - **Calls**: [`http`] (the router: `/healthz`, `/readyz`, `/metrics`,
//!   `/call`, the carriers' routes) over [`state`], with `gate` (route
//!   tokens, the failed-auth limiter of [`auth_limit`], admission at the
//!   upgrade); each route is one adapter file on
//!   the engine's one call edge, `ws_call` (the brisvox protocol) and
//!   `ws_carrier` (every phone carrier's media stream through its codec;
//!   their webhooks and upgrade checks in `carrier_http`, REST hang-up in
//!   [`carrier_control`]), sharing `route` (the call's edge, its writer task, how calls
//!   end); [`handler`] ([`handler::CallHandler`]: where a route hands the edge
//!   to the engine); [`audio_edge`] (decode and resample in, encode out);
//!   `wire_events` (engine events as protocol events); consumers of a call's
//!   events besides the writer: [`metrics`], `call_log` and `call_recording`
//!   (the opt-in recorder, also fed by the reader and the writer). Also
//!   [`admission`] (with [`shedding`] over the model pools' waits and
//!   [`forecast`] over their predicted load), [`demo`], [`model_metrics`], [`serve`] (start, signal,
//!   drain), [`drain`] (`brisvox drain`, the drain started from outside),
//!   [`fd_limit`].
//! - [`cli`], [`logging`], [`models`]: the command line.
//!
//! Plugging the engine in: implement [`handler::CallHandler`] (one method,
//! `run_call(start, edge)`), pass it in [`serve::ServerConfig`], and start with
//! [`serve::serve_until_signal`] (the binary) or [`serve::start`] (tests,
//! embedding).

pub mod admission;
pub mod after_say;
pub mod agent;
pub mod agent_link;
pub mod audio_edge;
pub mod auth_limit;
pub mod carrier_control;
mod carrier_http;
pub mod chaos;
pub mod cli;
pub mod demo;
pub mod drain;
pub mod engine;
pub mod fd_limit;
pub mod forecast;
mod gate;
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
pub mod pacer;
pub mod plivo_transfer;
pub mod probe;
pub mod providers;
pub mod secret;
pub mod serve;
pub mod setup_error;
pub mod shedding;
pub mod state;
pub mod telemetry;
pub mod transfer_tool;
pub mod webhook;

mod call_log;
mod call_recording;
mod clock;
mod route;
mod webrtc_call;
mod wire_events;
mod ws_call;
mod ws_carrier;

pub use route::{HANDLER_EXIT_GRACE, START_TIMEOUT, WRITER_EXIT_GRACE};
pub use ws_carrier::{MARK_EVERY_FRAMES, TOKEN_PARAMETER};
