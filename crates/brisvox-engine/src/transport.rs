//! The call's edges: where caller audio comes from and where the answer goes.
//!
//! A transport (websocket protocol, Twilio Media Streams, the simulator)
//! converts codecs and rates at its edge and hands the engine 16 kHz mono PCM16
//! frames of 20 ms ([`TransportSource`]); it takes the answer as frames at the
//! configured output rate ([`TransportSink`]), and drops everything it still
//! buffers on [`TransportSink::clear`] (barge-in).

use std::future::Future;

use brisvox_core::AudioFrame;

/// The transport refused a frame: the caller's side is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the transport is closed")]
pub struct TransportClosed;

/// Caller audio in.
pub trait TransportSource: Send + 'static {
    /// The next caller frame (16 kHz mono PCM16, 20 ms), or `None` when the
    /// caller hung up.
    ///
    /// # Cancel safety
    ///
    /// Must be cancel safe: the engine calls it in `select!`, and a frame must
    /// not be lost when the future is dropped before it completes.
    fn recv_frame(&mut self) -> impl Future<Output = Option<AudioFrame>> + Send;
}

/// Answer audio out.
pub trait TransportSink: Send + 'static {
    /// Hands one paced frame to the transport. Returns when the transport has
    /// taken it (the pacer measures its lag at that moment).
    ///
    /// # Cancel safety
    ///
    /// Must be cancel safe: on barge-in the engine drops a send that has not
    /// completed, and the frame must then not be played.
    fn send_frame(
        &mut self,
        frame: AudioFrame,
    ) -> impl Future<Output = Result<(), TransportClosed>> + Send;

    /// Drops every frame the transport still buffers (barge-in). When it
    /// returns, no frame handed over before it will be played.
    fn clear(&mut self) -> impl Future<Output = ()> + Send;
}
