//! Codec and rate conversion at the call's edge.
//!
//! Inside the engine a call is 16 kHz mono PCM16 in 20 ms frames. The
//! transport's audio is PCM16 or mu-law at 8 to 48 kHz. [`InboundAudio`] turns
//! whole transport frames into engine frames; [`OutboundAudio`] turns the
//! engine's answer frames into transport bytes. Both are synchronous and keep
//! their buffers between calls, so a warm call does not allocate per frame.

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

/// Engine frames in, whole 20 ms transport frames out.
///
/// Frames of any length and rate go in with [`OutboundAudio::push`]; whole
/// 20 ms frames in the transport's codec come out of
/// [`OutboundAudio::next_frame`] (a resampler's output per call varies by a
/// sample or two, and the engine may use 10 or 40 ms frames: the client still
/// gets exact 20 ms frames). Less than a frame stays until the next push.
#[derive(Debug)]
pub struct OutboundAudio {
    codec: AudioCodec,
    rate_hz: u32,
    frame_samples: usize,
    resampler: Option<StreamResampler>,
    pending: Vec<i16>,
    read: usize,
    bytes: Vec<u8>,
}

impl OutboundAudio {
    /// An encoder to `codec` at `rate_hz`. Frames already at `rate_hz` are only
    /// re-framed and encoded; frames at `engine_rate_hz` are resampled first
    /// (the resampler is built here, so call this off the async workers).
    pub fn new(
        codec: AudioCodec,
        rate_hz: u32,
        engine_rate_hz: u32,
    ) -> Result<Self, ResamplerError> {
        let resampler = if engine_rate_hz == rate_hz {
            None
        } else {
            Some(StreamResampler::new(engine_rate_hz, rate_hz)?)
        };
        let frame_samples = rate_hz as usize / 50;
        Ok(Self {
            codec,
            rate_hz,
            frame_samples,
            resampler,
            pending: Vec::with_capacity(4 * frame_samples + 1920),
            read: 0,
            bytes: Vec::with_capacity(2 * frame_samples),
        })
    }

    /// The transport's rate, in Hz.
    pub fn rate_hz(&self) -> u32 {
        self.rate_hz
    }

    /// Takes answer audio: `samples` at `rate_hz`. Audio at a rate this
    /// encoder was not built for gets a resampler built on the spot.
    pub fn push(&mut self, samples: &[i16], rate_hz: u32) -> Result<(), ResamplerError> {
        if self.read > 0 {
            self.pending.drain(..self.read);
            self.read = 0;
        }
        if rate_hz == self.rate_hz {
            self.pending.extend_from_slice(samples);
            return Ok(());
        }
        let stale = self
            .resampler
            .as_ref()
            .is_none_or(|r| r.in_rate_hz() != rate_hz);
        if stale {
            self.resampler = Some(StreamResampler::new(rate_hz, self.rate_hz)?);
        }
        if let Some(r) = self.resampler.as_mut() {
            r.process_into(samples, &mut self.pending);
        }
        Ok(())
    }

    /// The next whole 20 ms frame in the transport's codec, if one is ready;
    /// the bytes are valid until the next call.
    pub fn next_frame(&mut self) -> Option<&[u8]> {
        if self.pending.len() - self.read < self.frame_samples {
            return None;
        }
        let samples = &self.pending[self.read..self.read + self.frame_samples];
        self.codec.encode_to(samples, &mut self.bytes);
        self.read += self.frame_samples;
        Some(&self.bytes)
    }

    /// Barge-in: forget the partial frame and the resampler's buffered input.
    pub fn reset(&mut self) {
        self.pending.clear();
        self.read = 0;
        if let Some(r) = self.resampler.as_mut() {
            r.reset();
        }
    }
}

/// Builds both converters of a call for `codec` at `rate_hz` (engine frames
/// at 16 kHz), on the blocking pool: a sinc resampler takes milliseconds to
/// build. `None` (logged) if that fails.
pub(crate) async fn build_edges(
    codec: AudioCodec,
    rate_hz: u32,
) -> Option<(InboundAudio, OutboundAudio)> {
    let built = tokio::task::spawn_blocking(move || {
        Ok::<_, ResamplerError>((
            InboundAudio::new(codec, rate_hz)?,
            OutboundAudio::new(codec, rate_hz, INTERNAL_RATE_HZ)?,
        ))
    })
    .await;
    match built {
        Ok(Ok(edges)) => Some(edges),
        Ok(Err(e)) => {
            tracing::error!(error = %e, rate_hz, "cannot build the call's resamplers");
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

    #[test]
    fn outbound_gives_exact_20ms_frames_in_the_transport_codec() {
        for (codec, rate) in [
            (AudioCodec::Pcm16, 16000),
            (AudioCodec::Mulaw, 8000),
            (AudioCodec::Pcm16, 24000),
            (AudioCodec::Pcm16, 48000),
            (AudioCodec::Mulaw, 16000),
            (AudioCodec::Alaw, 8000),
        ] {
            let mut out = OutboundAudio::new(codec, rate, 16000).unwrap();
            let frame = [1000i16; 320];
            let want = codec.frame_bytes(rate);
            let mut frames = 0;
            for _ in 0..50 {
                out.push(&frame, 16000).unwrap();
                while let Some(bytes) = out.next_frame() {
                    assert_eq!(bytes.len(), want, "{codec:?} {rate}");
                    frames += 1;
                }
            }
            assert!((47..=50).contains(&frames), "{codec:?} {rate}: {frames}");
        }
    }

    #[test]
    fn outbound_reframes_10ms_engine_frames_and_keeps_samples_exact() {
        let mut out = OutboundAudio::new(AudioCodec::Pcm16, 16000, 16000).unwrap();
        let half = [1000i16; 160];
        out.push(&half, 16000).unwrap();
        assert!(out.next_frame().is_none());
        out.push(&half, 16000).unwrap();
        let bytes = out.next_frame().unwrap();
        assert_eq!(bytes.len(), 640);
        assert_eq!(&bytes[..2], &1000i16.to_le_bytes());
        out.push(&half, 16000).unwrap();
        out.reset();
        out.push(&half, 16000).unwrap();
        assert!(
            out.next_frame().is_none(),
            "reset dropped the partial frame"
        );
    }
}
