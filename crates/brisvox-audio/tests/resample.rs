//! StreamResampler: passband flatness over rate pairs, the reported delay
//! against a click, pass-through, chunking invariance, flush and reset.

mod common;

use brisvox_audio::StreamResampler;
use brisvox_audio::resample::ResamplerKind;
use common::{run_chunked, steady_gain_db, to_f64, tone};

const RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 48_000];

fn pairs() -> impl Iterator<Item = (u32, u32)> {
    RATES
        .into_iter()
        .flat_map(|a| RATES.into_iter().map(move |b| (a, b)))
        .filter(|(a, b)| a != b)
}

#[test]
fn the_passband_is_flat_within_0_2_db_up_to_0_85_of_the_lower_nyquist() {
    let amplitude = 0.5;
    for (in_hz, out_hz) in pairs() {
        let edge = 0.85 * f64::from(in_hz.min(out_hz)) / 2.0;
        let freqs = [100.0, edge / 4.0, edge / 2.0, edge * 0.75, edge * 0.9, edge];
        for freq in freqs {
            let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
            let input = tone(freq, amplitude, in_hz, in_hz as usize / 2);
            let out = to_f64(&run_chunked(&mut r, &input, in_hz as usize / 50));
            let gain = steady_gain_db(&out, out_hz, amplitude, 0.05);
            assert!(
                gain.abs() <= 0.2,
                "{in_hz} -> {out_hz} Hz at {freq:.0} Hz: {gain:+.3} dB"
            );
        }
    }
}

/// Position of the largest sample, refined to a fraction of a sample by a
/// parabola through it and its neighbours.
fn peak_position(x: &[i16]) -> f64 {
    let i = (1..x.len() - 1)
        .max_by_key(|&i| x[i].unsigned_abs())
        .unwrap();
    let (a, b, c) = (f64::from(x[i - 1]), f64::from(x[i]), f64::from(x[i + 1]));
    let denom = a - 2.0 * b + c;
    let offset = if denom == 0.0 {
        0.0
    } else {
        0.5 * (a - c) / denom
    };
    i as f64 + offset
}

#[test]
fn a_click_comes_out_after_exactly_the_reported_delay() {
    for (in_hz, out_hz) in pairs() {
        let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
        let mut input = vec![0i16; in_hz as usize / 2];
        let at = in_hz as usize / 10; // 100 ms in
        input[at] = 30_000;
        let out = run_chunked(&mut r, &input, 160);
        let peak = peak_position(&out);
        let expected = 0.1 * f64::from(out_hz) + r.delay().as_secs_f64() * f64::from(out_hz);
        assert!(
            (peak - expected).abs() <= 0.5,
            "{in_hz} -> {out_hz} Hz: click at {peak}, expected {expected:.2} (delay {:?})",
            r.delay()
        );
    }
}

#[test]
fn fft_delays_are_half_a_block_at_the_lower_rate() {
    let ms = |in_hz, out_hz| {
        StreamResampler::new(in_hz, out_hz)
            .unwrap()
            .delay()
            .as_secs_f64()
            * 1000.0
    };
    for (in_hz, out_hz, expected_ms) in [
        (8_000, 16_000, 10.0),
        (16_000, 48_000, 5.0),
        (48_000, 16_000, 5.0),
        (24_000, 16_000, 5.0),
        (48_000, 24_000, 10.0 / 3.0),
        (22_050, 24_000, 6.667),
        (48_000, 22_050, 6.667),
        (22_050, 16_000, 10.0),
    ] {
        assert!(
            (ms(in_hz, out_hz) - expected_ms).abs() < 0.01,
            "{in_hz} -> {out_hz}: {} ms",
            ms(in_hz, out_hz)
        );
    }
    // The sinc's delay is half its length at the input rate less one output
    // sample: 224 taps at 24 kHz.
    assert!((ms(24_000, 8_000) - (224.0 / 2.0 / 24.0 - 1.0 / 8.0)).abs() < 0.01);
}

#[test]
fn downsampling_to_8khz_uses_the_sinc_and_everything_else_the_fft() {
    for (in_hz, out_hz) in pairs() {
        let kind = StreamResampler::new(in_hz, out_hz).unwrap().kind();
        if out_hz == 8_000 {
            assert!(
                matches!(kind, ResamplerKind::Sinc { .. }),
                "{in_hz} -> {out_hz}"
            );
        } else {
            assert_eq!(kind, ResamplerKind::Fft, "{in_hz} -> {out_hz}");
        }
    }
}

#[test]
fn a_full_scale_tone_above_the_output_nyquist_leaves_nothing_above_the_16_bit_floor() {
    for (in_hz, out_hz) in pairs().filter(|(a, b)| a > b && *b != 8_000) {
        let freq = (f64::from(out_hz) / 2.0 * 1.2).min(f64::from(in_hz) / 2.0 * 0.95);
        let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
        let out = run_chunked(&mut r, &tone(freq, 0.99, in_hz, in_hz as usize / 2), 320);
        let skip = out_hz as usize / 20;
        let worst = out[skip..out.len() - skip]
            .iter()
            .map(|s| s.unsigned_abs())
            .max()
            .unwrap();
        assert!(
            worst <= 1,
            "{in_hz} -> {out_hz} Hz, {freq:.0} Hz tone: residue {worst} LSB"
        );
    }
}

#[test]
fn the_same_rate_passes_through_unchanged() {
    let mut r = StreamResampler::new(16_000, 16_000).unwrap();
    assert_eq!(r.kind(), ResamplerKind::Identity);
    assert_eq!(r.delay().as_nanos(), 0);
    let input: Vec<i16> = (0..1000).map(|i| (i * 31 % 2000 - 1000) as i16).collect();
    assert_eq!(run_chunked(&mut r, &input, 33), input);
}

#[test]
fn output_does_not_depend_on_how_the_input_is_chunked() {
    for (in_hz, out_hz) in [
        (8_000, 16_000),
        (24_000, 8_000),
        (22_050, 16_000),
        (48_000, 16_000),
        (16_000, 8_000),
    ] {
        let input = tone(440.0, 0.3, in_hz, in_hz as usize * 3 / 10);
        let whole = run_chunked(
            &mut StreamResampler::new(in_hz, out_hz).unwrap(),
            &input,
            input.len(),
        );
        for chunk in [1, 7, 160, 441, 1000] {
            let out = run_chunked(
                &mut StreamResampler::new(in_hz, out_hz).unwrap(),
                &input,
                chunk,
            );
            assert_eq!(out, whole, "{in_hz} -> {out_hz} Hz in chunks of {chunk}");
        }
    }
}

#[test]
fn flush_yields_the_delay_plus_every_resampled_input_sample() {
    for (in_hz, out_hz) in pairs() {
        for n in [1usize, 159, 1234, 16_000] {
            let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
            let delay = (r.delay().as_secs_f64() * f64::from(out_hz)).round() as usize;
            let out = run_chunked(&mut r, &vec![100; n], 320);
            let expected = delay + (n * out_hz as usize).div_ceil(in_hz as usize);
            assert_eq!(out.len(), expected, "{in_hz} -> {out_hz} Hz, {n} samples");
            assert_eq!(r.buffered(), 0);
        }
    }
}

#[test]
fn flushing_an_empty_stream_yields_nothing() {
    let mut r = StreamResampler::new(24_000, 16_000).unwrap();
    let mut out = Vec::new();
    r.flush(&mut out);
    assert!(out.is_empty());
}

#[test]
fn after_reset_the_resampler_behaves_like_a_new_one() {
    for (in_hz, out_hz) in [(24_000, 16_000), (48_000, 8_000)] {
        let input = tone(1_000.0, 0.5, in_hz, in_hz as usize / 5);
        let fresh = run_chunked(
            &mut StreamResampler::new(in_hz, out_hz).unwrap(),
            &input,
            480,
        );
        let mut used = StreamResampler::new(in_hz, out_hz).unwrap();
        let mut scratch = Vec::new();
        used.process_into(&tone(3_000.0, 0.9, in_hz, 1_111), &mut scratch);
        used.reset();
        assert_eq!(run_chunked(&mut used, &input, 480), fresh);
    }
}

#[test]
fn zero_rates_are_refused() {
    assert!(StreamResampler::new(0, 16_000).is_err());
    assert!(StreamResampler::new(16_000, 0).is_err());
}

/// SNR of `out` against the best-fitting sine at `freq_hz` (amplitude, phase
/// and offset fitted by least squares over the steady middle), in dB.
fn snr_db(out: &[i16], rate_hz: u32, freq_hz: f64) -> f64 {
    let skip = rate_hz as usize / 20;
    let mid = &out[skip..out.len() - skip];
    let w = 2.0 * std::f64::consts::PI * freq_hz / f64::from(rate_hz);
    let (mut ss, mut sc, mut cc, mut xs, mut xc) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (n, &x) in mid.iter().enumerate() {
        let (s, c) = (w * n as f64).sin_cos();
        let x = f64::from(x);
        ss += s * s;
        sc += s * c;
        cc += c * c;
        xs += x * s;
        xc += x * c;
    }
    let det = ss * cc - sc * sc;
    let (a, b) = ((xs * cc - xc * sc) / det, (xc * ss - xs * sc) / det);
    let (mut signal, mut noise) = (0.0, 0.0);
    for (n, &x) in mid.iter().enumerate() {
        let (s, c) = (w * n as f64).sin_cos();
        let fit = a * s + b * c;
        signal += fit * fit;
        noise += (f64::from(x) - fit).powi(2);
    }
    10.0 * (signal / noise).log10()
}

#[test]
fn a_loud_tone_keeps_an_snr_of_at_least_85_db_at_1khz_and_at_0_85_of_the_lower_nyquist() {
    for (in_hz, out_hz) in pairs() {
        for freq in [1_000.0, 0.85 * f64::from(in_hz.min(out_hz)) / 2.0] {
            let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
            let out = run_chunked(&mut r, &tone(freq, 0.9, in_hz, in_hz as usize / 2), 320);
            let snr = snr_db(&out, out_hz, freq);
            assert!(
                snr >= 85.0,
                "{in_hz} -> {out_hz} Hz at {freq:.0} Hz: SNR {snr:.1} dB"
            );
        }
    }
}

#[test]
fn input_aligned_to_the_block_comes_out_without_extra_buffering() {
    for (in_hz, out_hz) in [
        (8_000, 16_000),
        (24_000, 16_000),
        (48_000, 16_000),
        (24_000, 8_000),
        (16_000, 48_000),
    ] {
        let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
        let block = r.block_len_in();
        let mut out = Vec::new();
        r.process_into(&vec![1_000; block], &mut out);
        assert_eq!(r.buffered(), 0);
        let expected = block * out_hz as usize / in_hz as usize;
        if r.kind() == ResamplerKind::Fft {
            assert_eq!(out.len(), expected, "{in_hz} -> {out_hz} Hz");
        } else {
            // The sinc's output per block follows its fractional read position: +-1 sample.
            assert!(
                out.len().abs_diff(expected) <= 1,
                "{in_hz} -> {out_hz} Hz: {}",
                out.len()
            );
        }
        // One sample short of a block waits for the next call.
        r.process_into(&vec![1_000; block - 1], &mut out);
        assert_eq!(r.buffered(), block - 1);
        // The block is 20 ms of input at most, so a 20 ms TTS chunk always gives output at once.
        assert!(block <= in_hz as usize / 50);
    }
}
