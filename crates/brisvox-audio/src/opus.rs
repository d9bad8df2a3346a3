//! Opus, the codec of WebRTC audio, on the system libopus.
//!
//! [`OpusEncoder`] turns PCM16 frames into Opus packets at a voice bitrate with
//! in-band forward error correction (each packet carries a low-bitrate copy of
//! the previous frame); [`OpusDecoder`] turns packets back into PCM16 and fills
//! a lost packet either from the FEC copy in the packet after it
//! ([`OpusDecoder::recover`]) or by packet-loss concealment
//! ([`OpusDecoder::conceal`]). WebRTC runs Opus at 48 kHz (RFC 7587), mono here.
//!
//! Both own their buffers, sized at construction for the longest packet Opus
//! allows, and return slices into them: no allocation per frame. The bindings
//! are `opusic-c` with its bundled build switched off, so libopus is the
//! system's (Debian: `libopus-dev` to build, `libopus0` to run).

use opusic_c::{Application, Bitrate, Channels, InbandFec, SampleRate, Signal};

/// The RTP clock and sample rate of Opus in WebRTC (RFC 7587).
pub const OPUS_RTP_RATE: u32 = 48_000;

/// The longest audio one Opus packet carries, in milliseconds.
const MAX_PACKET_MS: usize = 120;

/// Bytes reserved for one encoded packet: libopus recommends 4000 as an upper
/// bound for any frame; a 20 ms voice packet at 32 kbit/s is about 80.
const MAX_PACKET_BYTES: usize = 4000;

/// Why an Opus call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpusError {
    /// Opus does not run at this sample rate.
    #[error("Opus runs at 8, 12, 16, 24 or 48 kHz, not {0} Hz")]
    UnsupportedRate(u32),
    /// The bitrate is outside what Opus encodes (6 to 510 kbit/s).
    #[error("Opus bitrate {0} bit/s is outside 6000..=510000")]
    UnsupportedBitrate(u32),
    /// The expected packet loss is a percentage.
    #[error("expected packet loss {0} % is outside 0..=100")]
    UnsupportedLoss(u8),
    /// The frame is not one of the durations Opus encodes (2.5 to 60 ms).
    #[error("a frame of {samples} samples at {rate} Hz is not 2.5, 5, 10, 20, 40 or 60 ms")]
    FrameLength {
        /// Samples in the frame given.
        samples: usize,
        /// The codec's sample rate.
        rate: u32,
    },
    /// libopus refused the call (a corrupt packet, a bad argument).
    #[error("libopus: {0}")]
    Codec(&'static str),
}

impl From<opusic_c::ErrorCode> for OpusError {
    fn from(code: opusic_c::ErrorCode) -> Self {
        OpusError::Codec(code.message())
    }
}

fn sample_rate(hz: u32) -> Result<SampleRate, OpusError> {
    Ok(match hz {
        8_000 => SampleRate::Hz8000,
        12_000 => SampleRate::Hz12000,
        16_000 => SampleRate::Hz16000,
        24_000 => SampleRate::Hz24000,
        48_000 => SampleRate::Hz48000,
        other => return Err(OpusError::UnsupportedRate(other)),
    })
}

/// Samples per channel in `ms` milliseconds at `hz`.
fn samples_in(hz: u32, ms: usize) -> usize {
    hz as usize / 1000 * ms
}

/// How the encoder is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpusEncoderConfig {
    /// Input sample rate in Hz (8, 12, 16, 24 or 48 kHz); WebRTC's is 48 kHz.
    pub sample_rate: u32,
    /// Target bitrate in bit/s; 32 kbit/s is wideband speech with room for FEC.
    pub bitrate: u32,
    /// Carry a low-bitrate copy of each frame in the next packet (in-band FEC).
    pub inband_fec: bool,
    /// The loss the encoder prepares for, in percent: the higher, the more
    /// bits go to the FEC copy. Update it from receiver reports when known.
    pub expected_loss_percent: u8,
}

impl Default for OpusEncoderConfig {
    fn default() -> Self {
        Self {
            sample_rate: OPUS_RTP_RATE,
            bitrate: 32_000,
            inband_fec: true,
            expected_loss_percent: 10,
        }
    }
}

/// PCM16 frames in, Opus packets out (mono, VoIP mode, voice signal).
pub struct OpusEncoder {
    codec: opusic_c::Encoder,
    rate: u32,
    /// The frame as libopus takes it (`opusic-c` passes samples as `u16`).
    pcm: Vec<u16>,
    packet: Vec<u8>,
}

impl std::fmt::Debug for OpusEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpusEncoder")
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

impl OpusEncoder {
    /// An encoder set up as `config` says.
    pub fn new(config: OpusEncoderConfig) -> Result<Self, OpusError> {
        let rate = sample_rate(config.sample_rate)?;
        if !(6_000..=510_000).contains(&config.bitrate) {
            return Err(OpusError::UnsupportedBitrate(config.bitrate));
        }
        if config.expected_loss_percent > 100 {
            return Err(OpusError::UnsupportedLoss(config.expected_loss_percent));
        }
        let mut codec = opusic_c::Encoder::new(Channels::Mono, rate, Application::Voip)?;
        codec.set_bitrate(Bitrate::Value(config.bitrate))?;
        codec.set_signal(Signal::Voice)?;
        let fec = if config.inband_fec {
            InbandFec::Mode1
        } else {
            InbandFec::Off
        };
        codec.set_inband_fec(fec)?;
        codec.set_packet_loss(config.expected_loss_percent)?;
        Ok(Self {
            codec,
            rate: config.sample_rate,
            pcm: Vec::with_capacity(samples_in(config.sample_rate, 60)),
            packet: vec![0; MAX_PACKET_BYTES],
        })
    }

    /// The input sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.rate
    }

    /// Samples per frame of `ms` milliseconds at this encoder's rate.
    pub fn frame_samples(&self, ms: usize) -> usize {
        samples_in(self.rate, ms)
    }

    /// Changes the loss the encoder prepares its FEC for (0..=100 %).
    pub fn set_expected_loss(&mut self, percent: u8) -> Result<(), OpusError> {
        if percent > 100 {
            return Err(OpusError::UnsupportedLoss(percent));
        }
        Ok(self.codec.set_packet_loss(percent)?)
    }

    /// Encodes one frame (2.5, 5, 10, 20, 40 or 60 ms of mono PCM16) into a
    /// packet; the slice lives until the next call.
    pub fn encode(&mut self, frame: &[i16]) -> Result<&[u8], OpusError> {
        self.check_frame(frame.len())?;
        self.pcm.clear();
        // Same bits, the type the binding takes.
        self.pcm.extend(frame.iter().map(|&s| s as u16));
        let len = self.codec.encode_to_slice(&self.pcm, &mut self.packet)?;
        Ok(&self.packet[..len])
    }

    fn check_frame(&self, samples: usize) -> Result<(), OpusError> {
        // Durations in units of 2.5 ms: 2.5, 5, 10, 20, 40, 60 ms.
        let quarter = samples_in(self.rate, 10) / 4;
        let fits =
            samples.is_multiple_of(quarter) && [1, 2, 4, 8, 16, 24].contains(&(samples / quarter));
        if fits {
            Ok(())
        } else {
            Err(OpusError::FrameLength {
                samples,
                rate: self.rate,
            })
        }
    }
}

/// Opus packets in, PCM16 out (mono), with concealment of lost packets.
pub struct OpusDecoder {
    codec: opusic_c::Decoder,
    rate: u32,
    /// Samples of the last packet decoded: the length a lost one is filled with.
    last_frame: usize,
    /// libopus writes here (`opusic-c` passes samples as `u16`).
    raw: Vec<u16>,
    pcm: Vec<i16>,
}

impl std::fmt::Debug for OpusDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpusDecoder")
            .field("rate", &self.rate)
            .field("last_frame", &self.last_frame)
            .finish_non_exhaustive()
    }
}

impl OpusDecoder {
    /// A mono decoder with output at `sample_rate` Hz (8, 12, 16, 24 or 48 kHz;
    /// libopus decodes any packet at any of these rates).
    pub fn new(sample_rate: u32) -> Result<Self, OpusError> {
        let codec = opusic_c::Decoder::new(Channels::Mono, self::sample_rate(sample_rate)?)?;
        let max = samples_in(sample_rate, MAX_PACKET_MS);
        Ok(Self {
            codec,
            rate: sample_rate,
            last_frame: samples_in(sample_rate, 20),
            raw: vec![0; max],
            pcm: vec![0; max],
        })
    }

    /// The output sample rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.rate
    }

    /// Decodes one packet; the audio lives until the next call.
    pub fn decode(&mut self, packet: &[u8]) -> Result<&[i16], OpusError> {
        if packet.is_empty() {
            // An empty packet is libopus's signal for a loss: say so explicitly.
            return Err(OpusError::Codec(
                "empty packet (use conceal for a lost one)",
            ));
        }
        let n = self.codec.decode_to_slice(packet, &mut self.raw, false)?;
        self.last_frame = n;
        Ok(self.take(n))
    }

    /// Fills one lost packet by concealment (as long as the last packet); use
    /// it when the packet after the loss has not arrived.
    pub fn conceal(&mut self) -> Result<&[i16], OpusError> {
        let n = self.last_frame;
        let n = self.codec.decode_to_slice(&[], &mut self.raw[..n], false)?;
        Ok(self.take(n))
    }

    /// Fills one lost packet from the FEC copy carried in `next`, the packet
    /// after it (libopus conceals when `next` carries none). Then decode
    /// `next` itself with [`decode`](Self::decode).
    pub fn recover(&mut self, next: &[u8]) -> Result<&[i16], OpusError> {
        if next.is_empty() {
            return self.conceal();
        }
        let n = self.last_frame;
        let n = self.codec.decode_to_slice(next, &mut self.raw[..n], true)?;
        Ok(self.take(n))
    }

    fn take(&mut self, n: usize) -> &[i16] {
        for (out, &raw) in self.pcm.iter_mut().zip(&self.raw[..n]) {
            *out = raw as i16;
        }
        &self.pcm[..n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    const FRAME: usize = 960;

    /// A vowel-like signal: 150 Hz fundamental and a few harmonics, so the
    /// encoder treats it as voice.
    fn voice(frames: usize) -> Vec<i16> {
        (0..frames * FRAME)
            .map(|i| {
                let t = i as f64 / 48_000.0;
                let s: f64 = [(150.0, 0.5), (300.0, 0.3), (450.0, 0.2), (750.0, 0.1)]
                    .iter()
                    .map(|(f, a)| a * (2.0 * PI * f * t).sin())
                    .sum();
                (s * 8000.0) as i16
            })
            .collect()
    }

    fn rms(x: &[i16]) -> f64 {
        (x.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
    }

    /// The best normalised correlation of `a` with `b` shifted by 0..max_lag.
    fn best_correlation(a: &[i16], b: &[i16], max_lag: usize) -> f64 {
        (0..max_lag)
            .map(|lag| {
                let n = a.len().min(b.len() - lag);
                let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
                for i in 0..n {
                    let (x, y) = (f64::from(a[i]), f64::from(b[i + lag]));
                    ab += x * y;
                    aa += x * x;
                    bb += y * y;
                }
                ab / (aa.sqrt() * bb.sqrt()).max(1.0)
            })
            .fold(f64::MIN, f64::max)
    }

    #[test]
    fn a_voice_signal_survives_the_round_trip() {
        let input = voice(50);
        let mut enc = OpusEncoder::new(OpusEncoderConfig::default()).unwrap();
        let mut dec = OpusDecoder::new(48_000).unwrap();
        let mut output = Vec::new();
        let mut bytes = 0;
        for frame in input.chunks(FRAME) {
            let packet = enc.encode(frame).unwrap();
            bytes += packet.len();
            output.extend_from_slice(dec.decode(packet).unwrap());
        }
        assert_eq!(output.len(), input.len());
        // About 32 kbit/s: 50 frames of 20 ms is one second.
        assert!(
            (2_000..6_000).contains(&bytes),
            "{bytes} bytes in one second"
        );
        // Past the codec's start-up, the output is the input delayed by the
        // encoder's look-ahead (6.5 ms = 312 samples), at the same level.
        let settled = &input[10 * FRAME..40 * FRAME];
        let corr = best_correlation(settled, &output[10 * FRAME..], 600);
        assert!(corr > 0.9, "correlation {corr}");
        let ratio = rms(&output[10 * FRAME..40 * FRAME]) / rms(settled);
        assert!((0.8..1.25).contains(&ratio), "level ratio {ratio}");
    }

    #[test]
    fn the_decoder_decodes_at_the_engine_rate_too() {
        let mut enc = OpusEncoder::new(OpusEncoderConfig::default()).unwrap();
        let mut dec = OpusDecoder::new(16_000).unwrap();
        let input = voice(10);
        for frame in input.chunks(FRAME) {
            let packet = enc.encode(frame).unwrap();
            assert_eq!(dec.decode(packet).unwrap().len(), 320);
        }
    }

    /// Decodes `input` frame by frame, losing `lost`, filled by `fill`.
    fn decode_with_loss(
        input: &[i16],
        lost: usize,
        fill: impl Fn(&mut OpusDecoder, &[u8]) -> Vec<i16>,
    ) -> Vec<i16> {
        decode_with_loss_using(OpusEncoderConfig::default(), input, lost, fill)
    }

    fn decode_with_loss_using(
        config: OpusEncoderConfig,
        input: &[i16],
        lost: usize,
        fill: impl Fn(&mut OpusDecoder, &[u8]) -> Vec<i16>,
    ) -> Vec<i16> {
        let mut enc = OpusEncoder::new(config).unwrap();
        let packets: Vec<Vec<u8>> = input
            .chunks(FRAME)
            .map(|f| enc.encode(f).unwrap().to_vec())
            .collect();
        let mut dec = OpusDecoder::new(48_000).unwrap();
        let mut output = Vec::new();
        for (i, packet) in packets.iter().enumerate() {
            if i == lost {
                output.extend(fill(&mut dec, &packets[i + 1]));
            } else {
                output.extend_from_slice(dec.decode(packet).unwrap());
            }
        }
        output
    }

    /// Real speech (a fixture, 16 kHz) at 48 kHz: SILK's voice activity
    /// detector codes FEC only for frames it judges to be speech.
    fn speech() -> Vec<i16> {
        let wav = crate::wav::read_wav(include_bytes!("../../../fixtures/en_long_question.wav"));
        let pcm = wav.unwrap().to_mono();
        let mut up = crate::StreamResampler::new(16_000, 48_000).unwrap();
        let mut out = Vec::new();
        up.process_into(&pcm, &mut out);
        out.truncate(out.len() / FRAME * FRAME);
        out
    }

    /// The frame lost in the loss tests: inside the first words.
    const LOST: usize = 40;

    fn frame(x: &[i16], i: usize) -> &[i16] {
        &x[i * FRAME..(i + 1) * FRAME]
    }

    /// The distance between two frames (root of the summed squared error).
    fn distance(a: &[i16], b: &[i16]) -> f64 {
        let sum: f64 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
            .sum();
        sum.sqrt()
    }

    #[test]
    fn a_lost_packet_is_concealed_with_audio_not_silence() {
        let input = speech();
        assert!(rms(frame(&input, LOST)) > 500.0, "the lost frame is speech");
        let output = decode_with_loss(&input, LOST, |dec, _| dec.conceal().unwrap().to_vec());
        assert_eq!(output.len(), input.len());
        let level = rms(frame(&output, LOST)) / rms(frame(&input, LOST));
        assert!(level > 0.2, "concealed frame at {level} of the input level");
        // Decoding goes on after the loss.
        let after = &output[(LOST + 5) * FRAME..(LOST + 16) * FRAME];
        let corr = best_correlation(&input[(LOST + 5) * FRAME..(LOST + 15) * FRAME], after, 600);
        assert!(corr > 0.8, "correlation after the loss {corr}");
    }

    #[test]
    fn a_lost_packet_is_rebuilt_from_the_fec_copy_in_the_next() {
        let input = speech();
        let clean = decode_with_loss(&input, usize::MAX, |_, _| unreachable!());
        let fec = decode_with_loss(&input, LOST, |dec, next| {
            dec.recover(next).unwrap().to_vec()
        });
        let plc = decode_with_loss(&input, LOST, |dec, _| dec.conceal().unwrap().to_vec());
        // The FEC copy is the lost frame at a lower bitrate: much nearer to
        // what the packet itself decodes to than a guess from the past.
        let target = frame(&clean, LOST);
        let (fec_error, plc_error) = (
            distance(frame(&fec, LOST), target),
            distance(frame(&plc, LOST), target),
        );
        assert!(
            fec_error < 0.5 * plc_error,
            "FEC error {fec_error}, concealment error {plc_error}"
        );
    }

    #[test]
    fn without_fec_recover_falls_back_to_concealment() {
        let input = speech();
        let config = OpusEncoderConfig {
            inband_fec: false,
            ..OpusEncoderConfig::default()
        };
        let fec = decode_with_loss_using(config, &input, LOST, |dec, next| {
            dec.recover(next).unwrap().to_vec()
        });
        let plc = decode_with_loss_using(config, &input, LOST, |dec, _| {
            dec.conceal().unwrap().to_vec()
        });
        assert_eq!(frame(&fec, LOST), frame(&plc, LOST));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let mut enc = OpusEncoder::new(OpusEncoderConfig::default()).unwrap();
        assert_eq!(
            enc.encode(&[0; 100]),
            Err(OpusError::FrameLength {
                samples: 100,
                rate: 48_000
            })
        );
        assert!(enc.encode(&[0; 480]).is_ok(), "10 ms is a valid frame");
        let mut dec = OpusDecoder::new(48_000).unwrap();
        assert!(matches!(dec.decode(&[]), Err(OpusError::Codec(_))));
        // A TOC byte announcing more frames than the packet holds.
        assert!(matches!(
            dec.decode(&[0xff, 0xff]),
            Err(OpusError::Codec(_))
        ));
        assert_eq!(
            OpusDecoder::new(44_100).unwrap_err(),
            OpusError::UnsupportedRate(44_100)
        );
        let bad = |f: fn(&mut OpusEncoderConfig)| {
            let mut c = OpusEncoderConfig::default();
            f(&mut c);
            OpusEncoder::new(c).unwrap_err()
        };
        assert_eq!(
            bad(|c| c.bitrate = 1_000),
            OpusError::UnsupportedBitrate(1_000)
        );
        assert_eq!(
            bad(|c| c.expected_loss_percent = 101),
            OpusError::UnsupportedLoss(101)
        );
        assert_eq!(
            bad(|c| c.sample_rate = 22_050),
            OpusError::UnsupportedRate(22_050)
        );
    }
}
