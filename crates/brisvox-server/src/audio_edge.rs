//! Codec and rate conversion at the call's edge.
//!
//! Inside the engine a call is 16 kHz mono PCM16 in 20 ms frames. The
//! transport's audio is PCM16 or mu-law at 8 to 48 kHz. [`InboundAudio`] turns
//! whole transport frames into engine frames; [`OutboundAudio`] turns the
//! engine's answer frames into transport bytes. Both are synchronous and keep
//! their buffers between calls, so a warm call does not allocate per frame.

use brisvox_audio::g711::G711Law;
use brisvox_audio::resample::{ResamplerError, StreamResampler};
use brisvox_core::AudioFrame;
use brisvox_core::frame::{INTERNAL_FRAME_SAMPLES, INTERNAL_RATE_HZ};
use brisvox_transport::AudioCodec;

fn decode_into(codec: AudioCodec, bytes: &[u8], out: &mut Vec<i16>) {
    out.clear();
    match codec {
        AudioCodec::Pcm16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]])),
        ),
        AudioCodec::Mulaw => out.extend(bytes.iter().map(|&c| G711Law::MuLaw.decode(c))),
    }
}

fn encode_into(codec: AudioCodec, samples: &[i16], out: &mut Vec<u8>) {
    out.clear();
    match codec {
        AudioCodec::Pcm16 => samples
            .iter()
            .for_each(|s| out.extend_from_slice(&s.to_le_bytes())),
        AudioCodec::Mulaw => out.extend(samples.iter().map(|&s| G711Law::MuLaw.encode(s))),
    }
}

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
        decode_into(self.codec, bytes, &mut self.decoded);
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

/// Engine frames in, transport bytes out.
#[derive(Debug)]
pub struct OutboundAudio {
    codec: AudioCodec,
    rate_hz: u32,
    resampler: Option<StreamResampler>,
    samples: Vec<i16>,
    bytes: Vec<u8>,
}

impl OutboundAudio {
    /// An encoder to `codec` at `rate_hz`. Frames already at `rate_hz` are only
    /// encoded; frames at `engine_rate_hz` are resampled first (the resampler is
    /// built here, so call this off the async workers).
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
        Ok(Self {
            codec,
            rate_hz,
            resampler,
            samples: Vec::with_capacity(rate_hz as usize / 25),
            bytes: Vec::with_capacity(rate_hz as usize / 25 * 2),
        })
    }

    /// The transport's rate, in Hz.
    pub fn rate_hz(&self) -> u32 {
        self.rate_hz
    }

    /// Encodes one frame; the bytes are valid until the next call. A frame at a
    /// rate this encoder was not built for gets a resampler built on the spot.
    pub fn encode(&mut self, frame: &AudioFrame) -> Result<&[u8], ResamplerError> {
        if frame.sample_rate_hz() == self.rate_hz {
            encode_into(self.codec, frame.samples(), &mut self.bytes);
            return Ok(&self.bytes);
        }
        let stale = self
            .resampler
            .as_ref()
            .is_none_or(|r| r.in_rate_hz() != frame.sample_rate_hz());
        if stale {
            self.resampler = Some(StreamResampler::new(frame.sample_rate_hz(), self.rate_hz)?);
        }
        self.samples.clear();
        if let Some(r) = self.resampler.as_mut() {
            r.process_into(frame.samples(), &mut self.samples);
        }
        encode_into(self.codec, &self.samples, &mut self.bytes);
        Ok(&self.bytes)
    }

    /// Barge-in: forget the resampler's buffered input.
    pub fn reset(&mut self) {
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
        for codec in [AudioCodec::Pcm16, AudioCodec::Mulaw] {
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
    fn outbound_encodes_in_the_transport_codec() {
        let frame = AudioFrame::from_samples(&[1000; 320], 16000).unwrap();
        let mut pcm = OutboundAudio::new(AudioCodec::Pcm16, 16000, 16000).unwrap();
        let bytes = pcm.encode(&frame).unwrap();
        assert_eq!(bytes.len(), 640);
        assert_eq!(&bytes[..2], &1000i16.to_le_bytes());
        let mut mulaw = OutboundAudio::new(AudioCodec::Mulaw, 8000, 16000).unwrap();
        let total: usize = (0..10).map(|_| mulaw.encode(&frame).unwrap().len()).sum();
        assert!((1200..=1600).contains(&total), "{total}");
    }
}
