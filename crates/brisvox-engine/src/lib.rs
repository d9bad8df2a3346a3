//! brisvox-engine: one call, from caller audio in to a spoken answer out.
//!
//! The decisions live in sans-IO cores driven by `handle_*(now, ..)` and
//! `poll_*()`; the async stage tasks only move events in and out of them.
//!
//! - [`turn`]: the turn machine (listening, user speaking, paused, awaiting the
//!   verdict and the final, bot thinking, bot speaking, barge-in).

pub mod turn;
