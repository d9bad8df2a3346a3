//! Memory each StreamResampler instance keeps after construction, measured by a
//! counting allocator: the sinc pairs hold their own 128-phase table, the FFT
//! pairs a few tens of KB.
//! `cargo test -p brisvox-audio --test resample_memory -- --nocapture` prints the figures.

use brisvox_audio::StreamResampler;
use brisvox_audio::resample::{ResamplerKind, SINC_OVERSAMPLING};
use brisvox_testkit::alloc::{CountingAllocator, thread_live_bytes as live_bytes};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 48_000];

#[test]
fn each_instance_retains_its_filter_and_buffers_within_bounds() {
    for in_hz in RATES {
        for out_hz in RATES.into_iter().filter(|&o| o != in_hz) {
            let before = live_bytes();
            let r = StreamResampler::new(in_hz, out_hz).unwrap();
            let retained = live_bytes() - before;
            let kind = r.kind();
            drop(r);
            assert_eq!(live_bytes(), before, "dropping frees everything");
            println!(
                "{in_hz:>5} -> {out_hz:>5} Hz: {:?}, {:.1} KB retained",
                kind,
                retained as f64 / 1000.0
            );
            match kind {
                ResamplerKind::Sinc { sinc_len } => {
                    let table = (SINC_OVERSAMPLING * sinc_len * 4) as i64;
                    assert!(
                        retained >= table,
                        "{in_hz} -> {out_hz}: {retained} B < table {table} B"
                    );
                    assert!(
                        retained <= table + 40_000,
                        "{in_hz} -> {out_hz}: {retained} B"
                    );
                }
                _ => assert!(retained <= 60_000, "{in_hz} -> {out_hz}: {retained} B"),
            }
        }
    }
}
