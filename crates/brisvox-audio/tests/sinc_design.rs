//! The windowed-sinc filters used for downsampling to 8 kHz against the quality
//! bar: |gain| <= 0.2 dB at 3.4 kHz, >= -2 dB at 3.6 kHz, >= 55 dB rejection of
//! a 4.4 kHz tone (aliasing to 3.6 kHz) and of a 6 kHz tone (aliasing to 2 kHz).
//! The ignored probe sweeps filter lengths to choose them:
//! `cargo test --release -p brisvox-audio --test sinc_design -- --ignored --nocapture`.

mod common;

use brisvox_audio::StreamResampler;
use brisvox_audio::resample::{ResamplerKind, SINC_OVERSAMPLING, sinc_len_for};
use common::{run_chunked, steady_gain_db, to_f64, tone};
use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{
    Async, FixedAsync, Resampler, SincInterpolationParameters, SincInterpolationType,
    WindowFunction,
};

const SOURCE_RATES: [u32; 5] = [16_000, 22_050, 24_000, 44_100, 48_000];
const AMPLITUDE: f64 = 0.5;

/// (gain at 3.4 kHz, gain at 3.6 kHz, level of the 4.4 kHz alias, level of the 6 kHz alias), dB.
fn bar_figures(mut measure: impl FnMut(f64) -> f64) -> [f64; 4] {
    [
        measure(3_400.0),
        measure(3_600.0),
        measure(4_400.0),
        measure(6_000.0),
    ]
}

fn meets_bar(f: &[f64; 4]) -> bool {
    f[0].abs() <= 0.2 && f[1] >= -2.0 && f[2] <= -55.0 && f[3] <= -55.0
}

#[test]
fn sinc_pairs_meet_the_passband_and_stopband_bar() {
    for in_hz in SOURCE_RATES {
        let figures = bar_figures(|freq| {
            let mut r = StreamResampler::new(in_hz, 8_000).unwrap();
            assert_eq!(
                r.kind(),
                ResamplerKind::Sinc {
                    sinc_len: sinc_len_for(in_hz)
                }
            );
            let input = tone(freq, AMPLITUDE, in_hz, in_hz as usize / 2);
            let out = to_f64(&run_chunked(&mut r, &input, in_hz as usize / 50));
            steady_gain_db(&out, 8_000, AMPLITUDE, 0.05)
        });
        assert!(meets_bar(&figures), "{in_hz} Hz -> 8 kHz: {figures:?}");
    }
}

/// Runs a raw rubato sinc of `sinc_len` on an f32 tone (no PCM16 floor).
fn rubato_sinc_gain_db(in_hz: u32, sinc_len: usize, freq: f64) -> f64 {
    let params = SincInterpolationParameters::new(sinc_len, WindowFunction::BlackmanHarris2)
        .oversampling_factor(SINC_OVERSAMPLING)
        .interpolation(SincInterpolationType::Cubic);
    let mut r = Async::<f32>::new_sinc(
        8_000.0 / f64::from(in_hz),
        1.0,
        &params,
        1024,
        1,
        FixedAsync::Input,
    )
    .unwrap();
    let input: Vec<f32> = (0..in_hz as usize)
        .map(|n| {
            (AMPLITUDE * (2.0 * std::f64::consts::PI * freq * n as f64 / f64::from(in_hz)).sin())
                as f32
        })
        .collect();
    let needed = r.process_all_needed_output_len(input.len());
    let mut out = vec![0f32; needed];
    let adapter_in = InterleavedSlice::new(&input[..], 1, input.len()).unwrap();
    let mut adapter_out = InterleavedSlice::new_mut(&mut out[..], 1, needed).unwrap();
    let (_, produced) = r
        .process_all_into_buffer(&adapter_in, &mut adapter_out, input.len(), None)
        .unwrap();
    let out: Vec<f64> = out[..produced].iter().map(|&v| f64::from(v)).collect();
    steady_gain_db(&out, 8_000, AMPLITUDE, 0.1)
}

#[test]
#[ignore = "probe: prints the length sweep that chose sinc_len_for"]
fn probe_sinc_length_sweep() {
    for in_hz in SOURCE_RATES {
        for sinc_len in (128..=512).step_by(16) {
            let f = bar_figures(|freq| rubato_sinc_gain_db(in_hz, sinc_len, freq));
            println!(
                "{in_hz:>6} Hz len {sinc_len:>3}: 3.4k {:+.3} dB, 3.6k {:+.3} dB, 4.4k alias {:.1} dB, 6k alias {:.1} dB{}",
                f[0],
                f[1],
                f[2],
                f[3],
                if meets_bar(&f) { "  meets the bar" } else { "" }
            );
        }
    }
}
