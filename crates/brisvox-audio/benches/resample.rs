//! StreamResampler cost: one warm instance per pair processing one 20 ms frame,
//! and the construction cost of each pair.
//!
//! `cargo bench -p brisvox-audio --bench resample -- --measurement-time 2 --warm-up-time 1`
#![allow(missing_docs)] // criterion's macros generate undocumented public functions.

use std::hint::black_box;

use brisvox_audio::StreamResampler;
use criterion::{Criterion, criterion_group, criterion_main};

/// The common pairs: telephony in (8k -> 16k), internal to telephony (16k -> 8k),
/// TTS out (24k -> 8k / 16k), browser in and out (48k <-> 16k).
const FRAME_PAIRS: [(u32, u32); 6] = [
    (8_000, 16_000),
    (16_000, 8_000),
    (24_000, 8_000),
    (24_000, 16_000),
    (48_000, 16_000),
    (16_000, 48_000),
];

/// Construction: the frame pairs plus the costliest sinc pair (48k -> 8k).
const CONSTRUCTION_PAIRS: [(u32, u32); 7] = [
    (8_000, 16_000),
    (16_000, 8_000),
    (24_000, 8_000),
    (24_000, 16_000),
    (48_000, 16_000),
    (16_000, 48_000),
    (48_000, 8_000),
];

fn frame_of(rate_hz: u32) -> Vec<i16> {
    (0..rate_hz as usize / 50)
        .map(|n| (8_000.0 * (n as f64 * 0.07).sin()) as i16)
        .collect()
}

fn per_frame(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_20ms_frame");
    for (in_hz, out_hz) in FRAME_PAIRS {
        let mut r = StreamResampler::new(in_hz, out_hz).expect("supported pair");
        let frame = frame_of(in_hz);
        let mut out = Vec::with_capacity(r.max_output_len(frame.len()));
        group.bench_function(format!("{}k_to_{}k", in_hz / 1000, out_hz / 1000), |b| {
            b.iter(|| {
                out.clear();
                r.process_into(black_box(&frame), &mut out);
                black_box(out.len())
            })
        });
    }
    group.finish();
}

fn construction(c: &mut Criterion) {
    let mut group = c.benchmark_group("construction");
    for (in_hz, out_hz) in CONSTRUCTION_PAIRS {
        group.bench_function(format!("{}k_to_{}k", in_hz / 1000, out_hz / 1000), |b| {
            b.iter(|| {
                StreamResampler::new(black_box(in_hz), black_box(out_hz)).expect("supported pair")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, per_frame, construction);
criterion_main!(benches);
