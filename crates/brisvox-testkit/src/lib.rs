//! brisvox's one test kit, shared by every crate's tests (STYLE.md habit 13).
//!
//! A dev-dependency only, but for `brisvox-bench` (a measuring tool, never
//! shipped), which places WebRTC calls with [`webrtc`]: no library or
//! shipped binary of the workspace depends on it.
//!
//! - [`eventually`]: wait for a condition with a deadline instead of sleeping
//!   and hoping, in a sync form ([`eventually()`](eventually::eventually),
//!   [`eventually_some`](eventually::eventually_some)) and an async one
//!   ([`eventually_async`](eventually::eventually_async),
//!   [`eventually_some_async`](eventually::eventually_some_async)); with
//!   [`later`](eventually::later) a failure can show the last state seen.
//! - [`tasks`]: the tasks alive on the current tokio runtime, and waiting for
//!   them to wind down ([`until_alive_tasks`](tasks::until_alive_tasks)).
//! - [`alloc`]: the counting global allocator of the allocation and memory
//!   tests, per thread and per process.
//! - `webrtc` (feature `webrtc`): `webrtc::Caller`, the one WebRTC client of
//!   the workspace (a str0m peer with an Opus track and a data channel), and
//!   `webrtc::signal`, its offer posted to `/webrtc/offer`; the server's
//!   end-to-end tests and `brisvox-bench v2v` drive it; and `lossy_udp`, a
//!   loopback UDP proxy that drops a seeded share of the datagrams each way.
//! - `faulty_tcp` (feature `tcp`): a loopback TCP proxy that delays, ends,
//!   resets or stalls a server's stream after a number of bytes, for the
//!   adapters' chaos tests; [`dice`]: the seeded draws of both faulty links.

pub mod alloc;
pub mod dice;
pub mod eventually;
#[cfg(feature = "tcp")]
pub mod faulty_tcp;
#[cfg(feature = "webrtc")]
pub mod lossy_udp;
pub mod tasks;
#[cfg(feature = "webrtc")]
pub mod webrtc;

pub use eventually::{
    PATIENCE, eventually, eventually_async, eventually_some, eventually_some_async, later,
};
