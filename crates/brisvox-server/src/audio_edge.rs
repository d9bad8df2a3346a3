//! The caller's audio at the call's edge: decoded and resampled.
//!
//! Inside the engine a call is 16 kHz mono PCM16 in 20 ms frames. The
//! transport's audio is PCM16, mu-law or A-law at 8 to 48 kHz.
//! [`InboundAudio`] turns whole transport frames into engine frames; it keeps
//! its buffers, so a warm call does not allocate per frame. The answer needs
//! no converter: the engine frames it at the transport's rate, and a route
//! only encodes each frame ([`AudioCodec::encode_to`]).

use brisvox_audio::resample::{ResamplerError, StreamResampler};
use brisvox_core::frame::{INTERNAL_FRAME_SAMPLES, INTERNAL_RATE_HZ};
use brisvox_transport::AudioCodec;

/// Transport frames in, 16 kHz 20 ms engine frames out.
#[derive(Debug)]
pub struct InboundAudio {
    codec: AudioCodec,
    resampler: StreamResampler,
    decoded: Vec<i16>,
    resampled: Vec<i16>,
}

impl InboundAudio {
    /// A converter for audio in `codec` at `rate_hz`. Building a resampler
    /// can take milliseconds: call this off the async workers.
    pub fn new(codec: AudioCodec, rate_hz: u32) -> Result<Self, ResamplerError> {
        let resampler = StreamResampler::new(rate_hz, INTERNAL_RATE_HZ)?;
        let cap = resampler.max_output_len(rate_hz as usize / 50) + INTERNAL_FRAME_SAMPLES;
        Ok(Self {
            codec,
            resampler,
            decoded: Vec::with_capacity(rate_hz as usize / 50),
            resampled: Vec::with_capacity(cap),
        })
    }

    /// Converts one transport frame; `emit` receives each whole engine frame
    /// (320 samples, 20 ms at 16 kHz).
    pub fn push(&mut self, bytes: &[u8], mut emit: impl FnMut(&[i16])) {
        self.codec.decode_to(bytes, &mut self.decoded);
        self.resampler
            .process_into(&self.decoded, &mut self.resampled);
        let mut start = 0;
        while self.resampled.len() - start >= INTERNAL_FRAME_SAMPLES {
            emit(&self.resampled[start..start + INTERNAL_FRAME_SAMPLES]);
            start += INTERNAL_FRAME_SAMPLES;
        }
        self.resampled.drain(..start);
    }
}

/// Builds the inbound converter of a call for `codec` at `rate_hz` (engine
/// frames at 16 kHz), on the blocking pool: a sinc resampler takes
/// milliseconds to build. `None` (logged) if that fails.
pub(crate) async fn build_inbound(codec: AudioCodec, rate_hz: u32) -> Option<InboundAudio> {
    let built = tokio::task::spawn_blocking(move || InboundAudio::new(codec, rate_hz)).await;
    match built {
        Ok(Ok(inbound)) => Some(inbound),
        Ok(Err(e)) => {
            tracing::error!(error = %e, rate_hz, "cannot build the call's resampler");
            None
        }
        Err(e) => {
            tracing::error!(error = %e, "the resampler setup task failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbound_gives_whole_16k_frames_for_every_rate() {
        for codec in [AudioCodec::Pcm16, AudioCodec::Mulaw, AudioCodec::Alaw] {
            for rate in [8000, 16000, 24000, 48000] {
                let mut conv = InboundAudio::new(codec, rate).unwrap();
                let frame_bytes = codec.frame_bytes(rate);
                let mut frames = 0;
                for _ in 0..50 {
                    conv.push(&vec![0x11; frame_bytes], |f| {
                        assert_eq!(f.len(), 320);
                        frames += 1;
                    });
                }
                // One second in; the resampler's block and delay hold back a little.
                assert!((45..=50).contains(&frames), "{codec:?} {rate}: {frames}");
            }
        }
    }
}
