//! brisvox-core: the types every other crate shares, with no I/O.
//!
//! - [`frame`]: the audio frame (mono PCM16, rate explicit, stored inline);
//! - [`epoch`]: turn numbers that tag every response item;
//! - [`timeline`]: the per-call turn timeline and the per-turn metrics derived from it.
//!
//! Nothing here reads a clock: every time is passed in by the caller.

pub mod epoch;
pub mod frame;
pub mod gate;
pub mod timeline;

pub use epoch::Epoch;
pub use frame::{AudioFrame, CallerFrame};
