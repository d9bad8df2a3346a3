//! The server's two clocks, in one leaf module: tokio's (the engine's time,
//! which paused-clock tests control) and the wall clock (dates a peer reads).

use std::time::{Duration, Instant};

/// The current time on tokio's clock, as a std instant (the engine's clock).
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// The wall clock since the Unix epoch: for dates a peer reads (a Vonage
/// JWT's `iat`, a recording's start), which no monotonic clock gives.
#[allow(clippy::disallowed_methods)] // dates for peers, never a duration
pub(crate) fn wall_clock() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}
