//! brisvox's one test kit, shared by every crate's tests (STYLE.md habit 13).
//!
//! A dev-dependency only: no library or binary of the workspace depends on it.
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

pub mod alloc;
pub mod eventually;
pub mod tasks;

pub use eventually::{
    PATIENCE, eventually, eventually_async, eventually_some, eventually_some_async, later,
};
