//! PCM16 WAV files held in memory (RIFF/WAVE, mono or stereo).
//!
//! Fixtures and recordings are WAV files; this module parses and writes them from
//! and to byte buffers (the caller does the file I/O). The reader walks the RIFF
//! chunk list, so extra chunks (`LIST`, `fact`, `bext`, ...) before or after the
//! audio are skipped, and odd-sized chunks honour RIFF's pad byte. It accepts
//! `WAVE_FORMAT_PCM` and `WAVE_FORMAT_EXTENSIBLE` with the PCM sub-format, 16
//! bits per sample, one or two channels; anything else is a typed error.

/// `WAVE_FORMAT_PCM`.
const FORMAT_PCM: u16 = 0x0001;
/// `WAVE_FORMAT_EXTENSIBLE`.
const FORMAT_EXTENSIBLE: u16 = 0xFFFE;

/// Why a WAV buffer could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WavError {
    /// The buffer does not start with `RIFF....WAVE`.
    #[error("not a RIFF/WAVE buffer")]
    NotRiffWave,
    /// A chunk header or body runs past the end of the buffer.
    #[error("chunk {chunk:?} needs {needed} bytes at offset {offset}, buffer has {len}")]
    Truncated {
        /// Four-character chunk id (or "RIFF" for the header).
        chunk: String,
        /// Offset of the missing part.
        offset: usize,
        /// Bytes needed from that offset.
        needed: usize,
        /// Total buffer length.
        len: usize,
    },
    /// No `fmt ` chunk before the `data` chunk.
    #[error("no fmt chunk before the data chunk")]
    MissingFormat,
    /// No `data` chunk.
    #[error("no data chunk")]
    MissingData,
    /// The `fmt ` chunk is shorter than 16 bytes.
    #[error("fmt chunk of {len} bytes, at least 16 needed")]
    ShortFormat {
        /// Its size.
        len: usize,
    },
    /// Not integer PCM.
    #[error("unsupported WAV format tag {format_tag:#06x} (only PCM)")]
    UnsupportedFormat {
        /// The format tag (or the extensible sub-format's tag).
        format_tag: u16,
    },
    /// Not 16 bits per sample.
    #[error("unsupported {bits_per_sample} bits per sample (only 16)")]
    UnsupportedBitsPerSample {
        /// Bits per sample in the header.
        bits_per_sample: u16,
    },
    /// Not mono or stereo.
    #[error("unsupported channel count {channels} (only 1 or 2)")]
    UnsupportedChannels {
        /// Channels in the header (or offered to the writer).
        channels: u16,
    },
    /// A zero sample rate.
    #[error("sample rate of zero")]
    ZeroSampleRate,
    /// Block alignment disagrees with channels and bit depth.
    #[error("block align {block_align} does not match {channels} channels of 16 bits")]
    BadBlockAlign {
        /// Block align in the header.
        block_align: u16,
        /// Channels in the header.
        channels: u16,
    },
    /// The data length is not a whole number of sample frames.
    #[error("data of {len} bytes is not a multiple of the {block_align}-byte frame")]
    PartialFrame {
        /// Data bytes (or samples offered to the writer).
        len: usize,
        /// Bytes (or samples) per frame.
        block_align: usize,
    },
    /// The audio is too long for a RIFF file (4 GiB).
    #[error("{len} data bytes do not fit a RIFF file")]
    TooLong {
        /// Data bytes.
        len: usize,
    },
    /// The sample rate's byte rate does not fit the header's 32 bits.
    #[error("sample rate {sample_rate_hz} Hz is too high for a WAV header")]
    SampleRateTooHigh {
        /// The sample rate offered to the writer.
        sample_rate_hz: u32,
    },
}

/// The format of a PCM16 WAV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WavSpec {
    /// 1 (mono) or 2 (stereo).
    pub channels: u16,
    /// Sample rate in Hz.
    pub sample_rate_hz: u32,
}

/// Decoded PCM16 audio with its format; stereo samples are interleaved L, R.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WavAudio {
    /// The format.
    pub spec: WavSpec,
    /// Interleaved samples.
    pub samples: Vec<i16>,
}

impl WavAudio {
    /// The audio as mono: the channel mean for stereo (rounded toward zero), a copy for mono.
    pub fn to_mono(&self) -> Vec<i16> {
        match self.spec.channels {
            2 => self
                .samples
                .chunks_exact(2)
                // Cannot overflow: the mean of two i16 values is an i16.
                .map(|lr| ((i32::from(lr[0]) + i32::from(lr[1])) / 2) as i16)
                .collect(),
            _ => self.samples.clone(),
        }
    }

    /// Playing time in milliseconds (sample frames / rate, rounded down).
    pub fn duration_ms(&self) -> u64 {
        let frames = self.samples.len() as u64 / u64::from(self.spec.channels.max(1));
        frames * 1000 / u64::from(self.spec.sample_rate_hz.max(1))
    }
}

fn take<'a>(
    bytes: &'a [u8],
    offset: usize,
    needed: usize,
    chunk: &[u8],
) -> Result<&'a [u8], WavError> {
    offset
        .checked_add(needed)
        .and_then(|end| bytes.get(offset..end))
        .ok_or_else(|| WavError::Truncated {
            chunk: String::from_utf8_lossy(chunk).into_owned(),
            offset,
            needed,
            len: bytes.len(),
        })
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Parses the body of a `fmt ` chunk.
fn parse_format(body: &[u8]) -> Result<WavSpec, WavError> {
    if body.len() < 16 {
        return Err(WavError::ShortFormat { len: body.len() });
    }
    let mut format_tag = u16_at(body, 0);
    if format_tag == FORMAT_EXTENSIBLE && body.len() >= 26 {
        // The sub-format GUID starts at byte 24; its first two bytes are the tag.
        format_tag = u16_at(body, 24);
    }
    if format_tag != FORMAT_PCM {
        return Err(WavError::UnsupportedFormat { format_tag });
    }
    let channels = u16_at(body, 2);
    let sample_rate_hz = u32_at(body, 4);
    let block_align = u16_at(body, 12);
    let bits_per_sample = u16_at(body, 14);
    if bits_per_sample != 16 {
        return Err(WavError::UnsupportedBitsPerSample { bits_per_sample });
    }
    if !(1..=2).contains(&channels) {
        return Err(WavError::UnsupportedChannels { channels });
    }
    if sample_rate_hz == 0 {
        return Err(WavError::ZeroSampleRate);
    }
    if block_align != channels * 2 {
        return Err(WavError::BadBlockAlign {
            block_align,
            channels,
        });
    }
    // The header's 32-bit byte rate cannot describe a higher rate, and the
    // writer would refuse to write it back.
    if sample_rate_hz.checked_mul(u32::from(block_align)).is_none() {
        return Err(WavError::SampleRateTooHigh { sample_rate_hz });
    }
    Ok(WavSpec {
        channels,
        sample_rate_hz,
    })
}

/// Parses a PCM16 WAV file held in `bytes`.
///
/// A `data` chunk whose declared size runs past the end of the buffer (a
/// recording cut short, or a streaming writer that left the size at
/// `0xFFFFFFFF`) is read up to the last whole frame in the buffer.
pub fn read_wav(bytes: &[u8]) -> Result<WavAudio, WavError> {
    let header = take(bytes, 0, 12, b"RIFF").map_err(|_| WavError::NotRiffWave)?;
    if &header[0..4] != b"RIFF" || &header[8..12] != b"WAVE" {
        return Err(WavError::NotRiffWave);
    }
    let mut spec = None;
    let mut offset = 12;
    while offset < bytes.len() {
        let head = take(bytes, offset, 8, b"????")?;
        let id = &head[0..4];
        let size = u32_at(head, 4) as usize;
        let body_at = offset + 8;
        if id == b"data" {
            let spec = spec.ok_or(WavError::MissingFormat)?;
            let available = bytes.len() - body_at;
            return decode_data(
                &bytes[body_at..body_at + size.min(available)],
                spec,
                size <= available,
            );
        }
        let body = take(bytes, body_at, size, id)?;
        if id == b"fmt " {
            spec = Some(parse_format(body)?);
        }
        // RIFF chunks are padded to an even size.
        offset = body_at + size + (size & 1);
    }
    Err(WavError::MissingData)
}

fn decode_data(data: &[u8], spec: WavSpec, complete: bool) -> Result<WavAudio, WavError> {
    let block_align = usize::from(spec.channels) * 2;
    let whole = data.len() / block_align * block_align;
    if complete && whole != data.len() {
        return Err(WavError::PartialFrame {
            len: data.len(),
            block_align,
        });
    }
    let samples = data[..whole]
        .chunks_exact(2)
        .map(|p| i16::from_le_bytes([p[0], p[1]]))
        .collect();
    Ok(WavAudio { spec, samples })
}

/// Appends a canonical 44-byte-header PCM16 WAV file of `samples` (interleaved
/// if stereo) to `out`.
pub fn write_wav_into(spec: WavSpec, samples: &[i16], out: &mut Vec<u8>) -> Result<(), WavError> {
    let channels = spec.channels;
    if !(1..=2).contains(&channels) {
        return Err(WavError::UnsupportedChannels { channels });
    }
    if spec.sample_rate_hz == 0 {
        return Err(WavError::ZeroSampleRate);
    }
    if !samples.len().is_multiple_of(usize::from(channels)) {
        return Err(WavError::PartialFrame {
            len: samples.len(),
            block_align: usize::from(channels),
        });
    }
    let data_len = samples.len() * 2;
    let riff_len = u32::try_from(data_len + 36).map_err(|_| WavError::TooLong { len: data_len })?;
    let block_align = channels * 2;
    // A header read from an untrusted file may carry any rate (found by the
    // fuzz campaign of 2026-12-01: 3.9 GHz overflowed this product).
    let byte_rate = spec
        .sample_rate_hz
        .checked_mul(u32::from(block_align))
        .ok_or(WavError::SampleRateTooHigh {
            sample_rate_hz: spec.sample_rate_hz,
        })?;
    out.reserve(44 + data_len);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_len.to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&FORMAT_PCM.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&spec.sample_rate_hz.to_le_bytes());
    out.extend_from_slice(&byte_rate.to_le_bytes());
    out.extend_from_slice(&block_align.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    // Cannot truncate: data_len + 36 fits a u32 (checked above).
    out.extend_from_slice(&(data_len as u32).to_le_bytes());
    for s in samples {
        out.extend_from_slice(&s.to_le_bytes());
    }
    Ok(())
}

/// A PCM16 WAV file of `samples` as a new buffer.
pub fn write_wav(spec: WavSpec, samples: &[i16]) -> Result<Vec<u8>, WavError> {
    let mut out = Vec::new();
    write_wav_into(spec, samples, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MONO_16K: WavSpec = WavSpec {
        channels: 1,
        sample_rate_hz: 16_000,
    };

    fn chunk(id: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut c = id.to_vec();
        c.extend_from_slice(&(body.len() as u32).to_le_bytes());
        c.extend_from_slice(body);
        if body.len() % 2 == 1 {
            c.push(0);
        }
        c
    }

    /// A RIFF file from its chunks (the RIFF size is not checked by the reader).
    fn riff(chunks: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = chunks.concat();
        let mut f = b"RIFF".to_vec();
        f.extend_from_slice(&(body.len() as u32 + 4).to_le_bytes());
        f.extend_from_slice(b"WAVE");
        f.extend(body);
        f
    }

    fn fmt_body(tag: u16, channels: u16, rate: u32, bits: u16) -> Vec<u8> {
        let align = channels * bits / 8;
        let mut b = Vec::new();
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(&channels.to_le_bytes());
        b.extend_from_slice(&rate.to_le_bytes());
        b.extend_from_slice(&(rate * u32::from(align)).to_le_bytes());
        b.extend_from_slice(&align.to_le_bytes());
        b.extend_from_slice(&bits.to_le_bytes());
        b
    }

    #[test]
    fn mono_and_stereo_round_trip() {
        let mono: Vec<i16> = (0..321).map(|i| (i * 97 - 15000) as i16).collect();
        let bytes = write_wav(MONO_16K, &mono).unwrap();
        assert_eq!(bytes.len(), 44 + mono.len() * 2);
        let back = read_wav(&bytes).unwrap();
        assert_eq!(back.spec, MONO_16K);
        assert_eq!(back.samples, mono);
        assert_eq!(back.duration_ms(), 20);

        let stereo_spec = WavSpec {
            channels: 2,
            sample_rate_hz: 48_000,
        };
        let stereo = [100i16, 300, -100, -301, 7, 9];
        let back = read_wav(&write_wav(stereo_spec, &stereo).unwrap()).unwrap();
        assert_eq!(back.spec, stereo_spec);
        assert_eq!(back.samples, stereo);
        assert_eq!(back.to_mono(), vec![200, -200, 8]);
    }

    #[test]
    fn extra_chunks_and_odd_padding_are_skipped() {
        let data: Vec<u8> = [1i16, -2, 3].iter().flat_map(|s| s.to_le_bytes()).collect();
        let file = riff(&[
            chunk(b"LIST", b"INFOISFT\x05\x00\x00\x00brisv"),
            chunk(b"fmt ", &fmt_body(1, 1, 8_000, 16)),
            chunk(b"fact", &[0, 0, 0]),
            chunk(b"data", &data),
            chunk(b"LIST", b"tail"),
        ]);
        let wav = read_wav(&file).unwrap();
        assert_eq!(wav.samples, vec![1, -2, 3]);
        assert_eq!(wav.spec.sample_rate_hz, 8_000);
    }

    #[test]
    fn extensible_pcm_is_accepted() {
        let mut body = fmt_body(FORMAT_EXTENSIBLE, 1, 24_000, 16);
        body.extend_from_slice(&22u16.to_le_bytes());
        body.extend_from_slice(&16u16.to_le_bytes());
        body.extend_from_slice(&4u32.to_le_bytes());
        body.extend_from_slice(&[
            1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71,
        ]);
        let file = riff(&[chunk(b"fmt ", &body), chunk(b"data", &[5, 0])]);
        assert_eq!(read_wav(&file).unwrap().samples, vec![5]);
    }

    #[test]
    fn bad_headers_give_typed_errors() {
        let data = chunk(b"data", &[0, 0]);
        let cases: Vec<(Vec<u8>, WavError)> = vec![
            (b"RIFX\0\0\0\0WAVE".to_vec(), WavError::NotRiffWave),
            (b"RIFF".to_vec(), WavError::NotRiffWave),
            (riff(std::slice::from_ref(&data)), WavError::MissingFormat),
            (
                riff(&[chunk(b"fmt ", &fmt_body(1, 1, 8_000, 16))]),
                WavError::MissingData,
            ),
            (
                riff(&[chunk(b"fmt ", &fmt_body(3, 1, 8_000, 32)), data.clone()]),
                WavError::UnsupportedFormat { format_tag: 3 },
            ),
            (
                riff(&[chunk(b"fmt ", &fmt_body(1, 1, 8_000, 24)), data.clone()]),
                WavError::UnsupportedBitsPerSample {
                    bits_per_sample: 24,
                },
            ),
            (
                riff(&[chunk(b"fmt ", &fmt_body(1, 6, 8_000, 16)), data.clone()]),
                WavError::UnsupportedChannels { channels: 6 },
            ),
            (
                riff(&[chunk(b"fmt ", &fmt_body(1, 1, 0, 16)), data.clone()]),
                WavError::ZeroSampleRate,
            ),
            (
                riff(&[chunk(b"fmt ", &[1, 0, 1, 0]), data.clone()]),
                WavError::ShortFormat { len: 4 },
            ),
            (
                riff(&[chunk(b"fmt ", &fmt_body(1, 2, 8_000, 16)), data.clone()]),
                WavError::PartialFrame {
                    len: 2,
                    block_align: 4,
                },
            ),
        ];
        for (file, expected) in cases {
            assert_eq!(read_wav(&file), Err(expected));
        }
        let mut cut = riff(&[chunk(b"LIST", &[0; 10])]);
        cut.truncate(cut.len() - 4);
        assert!(
            matches!(read_wav(&cut), Err(WavError::Truncated { ref chunk, .. }) if chunk == "LIST")
        );
    }

    #[test]
    fn a_data_chunk_cut_short_yields_its_whole_frames() {
        let mut file = write_wav(MONO_16K, &[1, 2, 3, 4]).unwrap();
        file.truncate(file.len() - 3);
        assert_eq!(read_wav(&file).unwrap().samples, vec![1, 2]);
    }

    #[test]
    fn the_writer_refuses_what_it_cannot_represent() {
        let three = WavSpec {
            channels: 3,
            sample_rate_hz: 8_000,
        };
        assert_eq!(
            write_wav(three, &[0; 3]),
            Err(WavError::UnsupportedChannels { channels: 3 })
        );
        let stereo = WavSpec {
            channels: 2,
            sample_rate_hz: 8_000,
        };
        assert_eq!(
            write_wav(stereo, &[0; 3]),
            Err(WavError::PartialFrame {
                len: 3,
                block_align: 2
            })
        );
    }

    #[test]
    fn a_rate_whose_byte_rate_overflows_is_refused_by_reader_and_writer() {
        let spec = WavSpec {
            channels: 2,
            sample_rate_hz: 0xE803_1F40,
        };
        let refused = Err(WavError::SampleRateTooHigh {
            sample_rate_hz: 0xE803_1F40,
        });
        assert_eq!(write_wav(spec, &[0, 0]), refused);
        // The header of the fuzz campaign's crash (fuzz/crashes/wav/), mono.
        let mut file = write_wav(MONO_16K, &[0, 0]).unwrap();
        file[24..28].copy_from_slice(&0xE803_1F40u32.to_le_bytes());
        assert_eq!(
            read_wav(&file),
            Err(WavError::SampleRateTooHigh {
                sample_rate_hz: 0xE803_1F40
            })
        );
    }
}
