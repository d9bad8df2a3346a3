//! Where a decoded call is handed to the engine: the [`CallHandler`] trait.
//!
//! The websocket routes (`/call`, `/twilio`) accept a call, decode its audio to
//! 16 kHz mono PCM16 frames of 20 ms and call [`CallHandler::run_call`] with:
//!
//! - [`CallStart`]: who is calling, over which transport, with which settings;
//! - [`CallInput`]: the caller's frames ([`CallInput::recv_frame`], `None` when the
//!   caller hung up or the server ends the call) and controls (`say`, DTMF);
//! - [`CallOutput`]: the answer's frames ([`CallOutput::send_frame`], at any rate:
//!   [`CallStart::output_sample_rate_hz`] avoids a resampler), barge-in
//!   ([`CallOutput::clear`]) and events for the client ([`CallOutput::send_event`]).
//!
//! `run_call` returns when the call is over. The integrator implements the trait
//! with `brisvox_engine::run_call` (see `docs/AGENT_FILE.md` and the crate docs);
//! [`EchoCallHandler`] is a test double that plays the caller back to itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use brisvox_core::AudioFrame;
use brisvox_core::frame::{INTERNAL_FRAME_SAMPLES, INTERNAL_RATE_HZ};
use brisvox_transport::AudioCodec;
use brisvox_transport::brisvox_ws::ServerEvent;
use tokio::sync::mpsc;

use crate::agent::AgentSettings;

/// Capacity of a call's input frame queue: 1 s of 20 ms frames. When the
/// handler falls behind, the newest frame is dropped and counted.
pub const INPUT_FRAME_QUEUE: usize = 50;

/// Capacity of a call's control queue (`say`, DTMF).
pub const INPUT_CONTROL_QUEUE: usize = 16;

/// Capacity of a call's output queue (frames and events towards the socket).
pub const OUTPUT_QUEUE: usize = 64;

/// The transport a call arrived on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallTransport {
    /// The brisvox websocket protocol (`/call`).
    BrisvoxWs {
        /// The client's codec.
        codec: AudioCodec,
        /// The client's sample rate, in Hz.
        sample_rate_hz: u32,
    },
    /// Twilio Media Streams (`/twilio`), mu-law at 8 kHz.
    Twilio {
        /// `start.streamSid`.
        stream_sid: String,
        /// `start.callSid`.
        call_sid: String,
        /// `start.accountSid`.
        account_sid: String,
    },
}

/// What the handler knows when the call starts.
#[derive(Debug, Clone)]
pub struct CallStart {
    /// The call's id (the client's `call_id`, or Twilio's `callSid`).
    pub call_id: String,
    /// The transport.
    pub transport: CallTransport,
    /// Free metadata (the client's `metadata`, or Twilio's `customParameters`).
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The agent.
    pub agent: Arc<AgentSettings>,
    /// The rate at which [`CallOutput::send_frame`] takes frames without
    /// resampling, in Hz (the transport's rate).
    pub output_sample_rate_hz: u32,
}

/// A control from the caller's side, outside the audio.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallControl {
    /// The client asks the bot to say this (`say`).
    Say(String),
    /// A key press (Twilio `dtmf`).
    Dtmf(char),
}

/// One queued caller frame: 20 ms at 16 kHz. Queued as a plain array, not an
/// [`AudioFrame`] (3.8 KB inline), so the queue's blocks stay small.
pub type QueuedFrame = [i16; INTERNAL_FRAME_SAMPLES];

fn to_audio_frame(samples: &QueuedFrame) -> AudioFrame {
    // Cannot fail: 320 samples at 16 kHz fit a frame and the rate is not zero.
    AudioFrame::from_samples(samples, INTERNAL_RATE_HZ).expect("a 20 ms 16 kHz frame always fits")
}

/// One item of a call's input.
// Frames are the common item; boxing one would allocate per frame.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum CallInputItem {
    /// A caller frame (16 kHz mono PCM16, 20 ms).
    Frame(AudioFrame),
    /// A control (`say`, DTMF).
    Control(CallControl),
}

/// The caller's side of a call, as the handler reads it.
#[derive(Debug)]
pub struct CallInput {
    pub(crate) frames: mpsc::Receiver<QueuedFrame>,
    pub(crate) controls: mpsc::Receiver<CallControl>,
}

impl CallInput {
    /// The next caller frame (16 kHz mono PCM16, 20 ms), or `None` when the
    /// caller hung up or the server ends the call.
    ///
    /// # Cancel safety
    /// Cancel safe: a frame is never lost when the future is dropped.
    pub async fn recv_frame(&mut self) -> Option<AudioFrame> {
        self.frames.recv().await.map(|f| to_audio_frame(&f))
    }

    /// The next control, or `None` once the call's input is closed.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn recv_control(&mut self) -> Option<CallControl> {
        self.controls.recv().await
    }

    /// The next frame or control, whichever comes first (controls first when
    /// both wait); `None` when the caller's audio has ended.
    ///
    /// # Cancel safety
    /// Cancel safe: at most one item is taken, and only when this completes.
    pub async fn recv(&mut self) -> Option<CallInputItem> {
        tokio::select! {
            biased;
            Some(c) = self.controls.recv() => Some(CallInputItem::Control(c)),
            f = self.frames.recv() => f.map(|f| CallInputItem::Frame(to_audio_frame(&f))),
        }
    }

    /// Splits into the frame and control receivers (for an engine that reads
    /// them from different tasks).
    pub fn into_parts(self) -> (mpsc::Receiver<QueuedFrame>, mpsc::Receiver<CallControl>) {
        (self.frames, self.controls)
    }
}

/// The output side is gone: the caller hung up or the socket failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the call's transport is closed")]
pub struct OutputClosed;

/// Samples in one queued output chunk: 20 ms at 24 kHz, 10 ms at 48 kHz. A
/// frame travels to the writer as one or more chunks, so that a queue slot
/// stays under 1 KB (an [`AudioFrame`] holds 3.8 KB inline, and the queue
/// allocates its slots 32 at a time).
pub(crate) const OUT_CHUNK_SAMPLES: usize = 480;

/// A piece of an answer frame, stored inline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutChunk {
    samples: [i16; OUT_CHUNK_SAMPLES],
    len: u16,
    rate_hz: u32,
}

impl OutChunk {
    fn new(samples: &[i16], rate_hz: u32) -> Self {
        let mut chunk = Self {
            samples: [0; OUT_CHUNK_SAMPLES],
            len: samples.len().min(OUT_CHUNK_SAMPLES) as u16,
            rate_hz,
        };
        chunk.samples[..usize::from(chunk.len)].copy_from_slice(&samples[..usize::from(chunk.len)]);
        chunk
    }

    /// The samples.
    pub(crate) fn samples(&self) -> &[i16] {
        &self.samples[..usize::from(self.len)]
    }

    /// Their rate, in Hz.
    pub(crate) fn rate_hz(&self) -> u32 {
        self.rate_hz
    }
}

/// What travels from a call's output to its socket writer.
// Audio is the common item and is stored inline; boxing it would allocate per
// frame on the media path.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Outbound {
    /// Audio, tagged with the clear generation it was sent in.
    Audio { chunk: OutChunk, generation: u64 },
    /// Barge-in: drop frames of older generations, tell the client.
    Clear,
    /// An event for the client.
    Event(ServerEvent),
}

/// The answer side of a call, as the handler writes it.
#[derive(Debug, Clone)]
pub struct CallOutput {
    pub(crate) tx: mpsc::Sender<Outbound>,
    pub(crate) generation: Arc<AtomicU64>,
}

impl CallOutput {
    /// Hands one answer frame to the transport (any rate and length; see
    /// [`CallStart::output_sample_rate_hz`]). Returns once the frame is in the
    /// call's output queue.
    ///
    /// # Cancel safety
    /// Cancel safe: a send dropped before it completes sends nothing (room for
    /// the whole frame is reserved before any of it is queued).
    pub async fn send_frame(&mut self, frame: AudioFrame) -> Result<(), OutputClosed> {
        let generation = self.generation.load(Ordering::Acquire);
        let chunks = frame.samples().chunks(OUT_CHUNK_SAMPLES);
        if chunks.len() == 0 {
            return Ok(());
        }
        let permits = self
            .tx
            .reserve_many(chunks.len())
            .await
            .map_err(|_| OutputClosed)?;
        for (permit, samples) in permits.zip(chunks) {
            let chunk = OutChunk::new(samples, frame.sample_rate_hz());
            permit.send(Outbound::Audio { chunk, generation });
        }
        Ok(())
    }

    /// Barge-in: every frame handed over before this call is dropped, never
    /// played; the client is told to drop what it buffered (`clear`).
    pub async fn clear(&mut self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        // A closed writer has nothing left to play: ignoring the error is right.
        let _ = self.tx.send(Outbound::Clear).await;
    }

    /// Sends an event to the client (`transcript`, `turn_metrics`, ...). Twilio
    /// has no JSON events: there only `clear` has an effect.
    pub async fn send_event(&mut self, event: ServerEvent) -> Result<(), OutputClosed> {
        self.tx
            .send(Outbound::Event(event))
            .await
            .map_err(|_| OutputClosed)
    }
}

/// The handler could not run the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("call failed: {reason}")]
pub struct CallFailed {
    /// Why, for the `error` event and the logs.
    pub reason: String,
}

/// The future `run_call` returns.
pub type CallFuture = Pin<Box<dyn Future<Output = Result<(), CallFailed>> + Send>>;

/// Runs one call. Implemented by the engine's integration; the server calls it
/// once per admitted call, on its own task.
pub trait CallHandler: Send + Sync + 'static {
    /// Runs the call until the input ends (`recv_frame` gives `None`), the
    /// output closes, or the agent ends it. The server aborts the task if it
    /// does not return within the drain grace after the input closed.
    fn run_call(&self, start: CallStart, input: CallInput, output: CallOutput) -> CallFuture;
}

/// A test double, not the product: plays the caller's audio straight back and
/// echoes `say` as a final transcript. Used by the server's own tests.
#[derive(Debug, Clone, Copy, Default)]
pub struct EchoCallHandler;

impl CallHandler for EchoCallHandler {
    fn run_call(
        &self,
        _start: CallStart,
        mut input: CallInput,
        mut output: CallOutput,
    ) -> CallFuture {
        Box::pin(async move {
            while let Some(item) = input.recv().await {
                let sent = match item {
                    CallInputItem::Frame(f) => output.send_frame(f).await,
                    CallInputItem::Control(CallControl::Say(text)) => {
                        let ev = ServerEvent::Transcript {
                            text,
                            is_final: true,
                        };
                        output.send_event(ev).await
                    }
                    CallInputItem::Control(_) => Ok(()),
                };
                if sent.is_err() {
                    break;
                }
            }
            Ok(())
        })
    }
}

/// Builds the channels of one call: the handler's ends and the server's ends.
pub(crate) fn call_channels() -> (CallInput, CallOutput, CallChannels) {
    let (frame_tx, frames) = mpsc::channel(INPUT_FRAME_QUEUE);
    let (control_tx, controls) = mpsc::channel(INPUT_CONTROL_QUEUE);
    let (out_tx, out_rx) = mpsc::channel(OUTPUT_QUEUE);
    let generation = Arc::new(AtomicU64::new(0));
    let output = CallOutput {
        tx: out_tx,
        generation: generation.clone(),
    };
    let server = CallChannels {
        frame_tx,
        control_tx,
        out_rx,
        generation,
    };
    (CallInput { frames, controls }, output, server)
}

/// The server's ends of a call's channels.
#[derive(Debug)]
pub(crate) struct CallChannels {
    pub(crate) frame_tx: mpsc::Sender<QueuedFrame>,
    pub(crate) control_tx: mpsc::Sender<CallControl>,
    pub(crate) out_rx: mpsc::Receiver<Outbound>,
    pub(crate) generation: Arc<AtomicU64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_frame_travels_as_small_chunks_in_order() {
        let (_input, mut output, mut chans) = call_channels();
        let samples: Vec<i16> = (0..1920).map(|i| i as i16).collect();
        let frame = AudioFrame::from_samples(&samples, 48_000).unwrap();
        output.send_frame(frame).await.unwrap();
        output.clear().await;
        output
            .send_frame(AudioFrame::from_samples(&[5; 480], 24_000).unwrap())
            .await
            .unwrap();
        let mut got = Vec::new();
        for _ in 0..4 {
            match chans.out_rx.recv().await.unwrap() {
                Outbound::Audio { chunk, generation } => {
                    assert_eq!((chunk.rate_hz(), generation), (48_000, 0));
                    got.extend_from_slice(chunk.samples());
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got, samples);
        assert!(matches!(chans.out_rx.recv().await, Some(Outbound::Clear)));
        match chans.out_rx.recv().await.unwrap() {
            Outbound::Audio { chunk, generation } => {
                assert_eq!((chunk.samples().len(), generation), (480, 1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_queue_slot_stays_small() {
        // The queue allocates 32 slots at a time: keep a block near 32 KB.
        assert!(
            std::mem::size_of::<Outbound>() <= 1024,
            "{}",
            std::mem::size_of::<Outbound>()
        );
        assert_eq!(std::mem::size_of::<QueuedFrame>(), 640);
    }
}
