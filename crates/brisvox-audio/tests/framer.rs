//! OutputFramer: TTS chunks of any size and rate in, whole transport frames out.

mod common;

use brisvox_audio::StreamResampler;
use brisvox_audio::framer::{DEFAULT_FRAME_MS, FramerError, OutputFramer};
use brisvox_core::AudioFrame;
use common::tone;

const CHUNK_SIZES: [usize; 7] = [1, 7, 160, 441, 480, 1_000, usize::MAX];

/// Pushes `input` in chunks of `chunk`, taking frames after every push, then flushes.
fn frames_of(
    framer: &mut OutputFramer,
    input: &[i16],
    rate_hz: u32,
    chunk: usize,
) -> Vec<AudioFrame> {
    let mut frames = Vec::new();
    for piece in input.chunks(chunk.min(input.len()).max(1)) {
        framer.push(piece, rate_hz).unwrap();
        frames.extend(std::iter::from_fn(|| framer.next_frame()));
    }
    framer.flush();
    frames.extend(std::iter::from_fn(|| framer.next_frame()));
    frames
}

fn concat(frames: &[AudioFrame]) -> Vec<i16> {
    frames.iter().flat_map(|f| f.samples().to_vec()).collect()
}

#[test]
fn every_chunk_size_from_one_sample_to_one_second_gives_the_same_whole_frames() {
    for (tts_hz, out_hz) in [
        (24_000, 8_000),
        (24_000, 16_000),
        (22_050, 16_000),
        (16_000, 48_000),
        (16_000, 16_000),
        (48_000, 8_000),
    ] {
        let input = tone(300.0, 0.4, tts_hz, tts_hz as usize); // one second
        let reference = frames_of(
            &mut OutputFramer::new(tts_hz, out_hz, DEFAULT_FRAME_MS).unwrap(),
            &input,
            tts_hz,
            usize::MAX,
        );
        let frame_len = out_hz as usize / 50;
        for chunk in CHUNK_SIZES {
            let frames = frames_of(
                &mut OutputFramer::new(tts_hz, out_hz, DEFAULT_FRAME_MS).unwrap(),
                &input,
                tts_hz,
                chunk,
            );
            assert!(
                frames
                    .iter()
                    .all(|f| f.len() == frame_len && f.sample_rate_hz() == out_hz)
            );
            assert_eq!(
                frames, reference,
                "{tts_hz} -> {out_hz} Hz in chunks of {chunk}"
            );
        }
    }
}

#[test]
fn the_frames_carry_exactly_the_resampled_audio_then_silence_padding() {
    for (tts_hz, out_hz) in [(24_000, 8_000), (22_050, 16_000), (8_000, 16_000)] {
        let input = tone(700.0, 0.4, tts_hz, tts_hz as usize * 37 / 100);
        let mut resampler = StreamResampler::new(tts_hz, out_hz).unwrap();
        let mut expected = Vec::new();
        resampler.process_into(&input, &mut expected);
        resampler.flush(&mut expected);
        let got = concat(&frames_of(
            &mut OutputFramer::new(tts_hz, out_hz, 20).unwrap(),
            &input,
            tts_hz,
            480,
        ));
        assert_eq!(&got[..expected.len()], &expected[..]);
        let frame_len = out_hz as usize / 50;
        assert_eq!(got.len(), expected.len().div_ceil(frame_len) * frame_len);
        assert!(got[expected.len()..].iter().all(|&s| s == 0));
    }
}

#[test]
fn flush_pads_the_last_partial_frame_with_silence() {
    let mut framer = OutputFramer::new(16_000, 16_000, 20).unwrap();
    let input: Vec<i16> = (1..=500).collect();
    framer.push(&input, 16_000).unwrap();
    let first = framer.next_frame().unwrap();
    assert_eq!(first.samples(), &input[..320]);
    assert!(
        framer.next_frame().is_none(),
        "180 samples are not a frame yet"
    );
    framer.flush();
    let last = framer.next_frame().unwrap();
    assert_eq!(&last.samples()[..180], &input[320..]);
    assert!(last.samples()[180..].iter().all(|&s| s == 0));
    assert!(framer.next_frame().is_none());
}

#[test]
fn reset_drops_everything_and_the_next_response_starts_clean() {
    let input = tone(500.0, 0.5, 24_000, 4_800);
    let fresh = frames_of(
        &mut OutputFramer::new(24_000, 16_000, 20).unwrap(),
        &input,
        24_000,
        480,
    );
    let mut framer = OutputFramer::new(24_000, 16_000, 20).unwrap();
    framer
        .push(&tone(2_000.0, 0.9, 24_000, 1_234), 24_000)
        .unwrap();
    assert!(framer.ready_frames() > 0);
    framer.reset();
    assert_eq!(framer.ready_frames(), 0);
    assert!(framer.next_frame().is_none());
    framer.flush();
    assert!(framer.next_frame().is_none(), "nothing survives a reset");
    assert_eq!(frames_of(&mut framer, &input, 24_000, 480), fresh);
}

#[test]
fn frames_of_10_20_and_40ms_at_transport_rates() {
    for out_hz in [8_000, 16_000, 24_000, 48_000] {
        for frame_ms in [10, 20, 40] {
            let mut framer = OutputFramer::new(24_000, out_hz, frame_ms).unwrap();
            let frames = frames_of(&mut framer, &tone(440.0, 0.3, 24_000, 24_000), 24_000, 960);
            let len = (out_hz * frame_ms / 1000) as usize;
            assert!(
                frames
                    .iter()
                    .all(|f| f.len() == len && f.duration().as_millis() == u128::from(frame_ms))
            );
            let total_ms = frames.len() as u32 * frame_ms;
            assert!(
                (1_000..1_000 + 10 + 2 * frame_ms).contains(&total_ms),
                "{out_hz} Hz, {frame_ms} ms: {total_ms} ms"
            );
        }
    }
}

#[test]
fn a_frame_longer_than_an_audio_frame_holds_is_refused() {
    let err = OutputFramer::new(24_000, 48_000, 50).unwrap_err();
    assert!(
        matches!(err, FramerError::BadFrameLength { samples: 2400, .. }),
        "{err:?}"
    );
    assert!(matches!(
        OutputFramer::new(24_000, 8_000, 0),
        Err(FramerError::BadFrameLength { .. })
    ));
    assert!(matches!(
        OutputFramer::new(0, 8_000, 20),
        Err(FramerError::Resampler(_))
    ));
}

#[test]
fn a_chunk_at_a_new_rate_drains_the_old_resampler_first() {
    let mut framer = OutputFramer::new(24_000, 16_000, 20).unwrap();
    let a = tone(400.0, 0.4, 24_000, 2_400); // 100 ms
    let b = tone(400.0, 0.4, 16_000, 1_600); // 100 ms
    framer.push(&a, 24_000).unwrap();
    framer.push(&b, 16_000).unwrap();
    framer.flush();
    let frames: Vec<AudioFrame> = std::iter::from_fn(|| framer.next_frame()).collect();
    // 100 ms resampled with its 5 ms delay and tail, then 100 ms passed through.
    assert_eq!(framer.resampler().in_rate_hz(), 16_000);
    assert_eq!(
        concat(&frames).len(),
        (1_600 + 80 + 1_600usize).div_ceil(320) * 320
    );
}
