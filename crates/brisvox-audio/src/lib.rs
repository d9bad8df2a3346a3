//! brisvox-audio: the audio edges of a call, with no I/O.
//!
//! Inside the engine a call is 16 kHz mono PCM16 in 20 ms frames
//! ([`brisvox_core::AudioFrame`]). This crate converts at the edges and decides
//! when output audio leaves:
//!
//! - [`g711`]: mu-law and A-law for telephony transports;
//! - `opus` (feature `opus`, on in the server): Opus encoder with in-band FEC
//!   and decoder with loss concealment, for WebRTC, on the system libopus;
//! - [`pcm`]: PCM16 bytes, float conversion and levels (RMS, dBFS);
//! - [`wav`]: reading and writing PCM16 WAV files held in memory;
//! - [`resample`]: [`StreamResampler`], a streaming PCM16 resampler on rubato;
//! - [`framer`]: [`OutputFramer`], TTS chunks of any size in, transport frames out;
//! - [`pacer`]: [`OutputPacer`], the sans-IO schedule that releases frames in real time.
//!
//! Nothing here reads a clock, spawns a task or touches a socket. The codecs,
//! resampler and framer are synchronous `&mut self` calls that write into buffers
//! the caller owns (no allocation after construction). The pacer is driven like
//! str0m: feed it inputs with `handle_*(now, ..)`, then call
//! [`OutputPacer::poll`] until it returns [`PacerOutput::WaitUntil`] or
//! [`PacerOutput::Idle`]; arm one timer for the deadline and poll again when it
//! fires or when a new input arrives.

pub mod framer;
pub mod g711;
#[cfg(feature = "opus")]
pub mod opus;
pub mod pacer;
pub mod pcm;
pub mod resample;
pub mod wav;

pub use framer::OutputFramer;
pub use g711::G711Law;
pub use pacer::{OutputPacer, PacerMetrics, PacerOutput};
pub use resample::StreamResampler;
