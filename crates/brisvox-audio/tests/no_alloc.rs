//! No allocation after construction on the media path: a counting global
//! allocator (the test kit's, per thread) watches StreamResampler and OutputFramer
//! in steady state.

use brisvox_audio::{OutputFramer, StreamResampler};
use brisvox_testkit::alloc::{CountingAllocator, thread_allocations as allocations};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 48_000];

fn test_signal(len: usize) -> Vec<i16> {
    (0..len).map(|i| (i * 37 % 4000) as i16 - 2000).collect()
}

#[test]
fn the_resampler_does_not_allocate_after_construction() {
    for in_hz in RATES {
        for out_hz in RATES {
            let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
            let frame = test_signal(in_hz as usize / 50);
            let odd = &frame[..frame.len() * 2 / 3];
            let mut out =
                Vec::with_capacity(r.max_output_len(frame.len()).max(r.max_flush_len()) * 4);
            let before = allocations();
            for _ in 0..50 {
                out.clear();
                r.process_into(&frame, &mut out);
                r.process_into(odd, &mut out);
            }
            out.clear();
            r.flush(&mut out);
            r.process_into(&frame, &mut out);
            r.reset();
            assert_eq!(
                allocations() - before,
                0,
                "{in_hz} -> {out_hz} Hz allocated"
            );
        }
    }
}

#[test]
fn the_framer_does_not_allocate_in_steady_state() {
    for tts_hz in [16_000, 22_050, 24_000] {
        for out_hz in [8_000, 16_000, 48_000] {
            let mut framer = OutputFramer::new(tts_hz, out_hz, 20).unwrap();
            let chunks = [
                test_signal(tts_hz as usize / 25),
                test_signal(333),
                test_signal(1),
            ];
            let before = allocations();
            let mut frames = 0;
            for round in 0..30 {
                framer.push(&chunks[round % 3], tts_hz).unwrap();
                while let Some(frame) = framer.next_frame() {
                    frames += frame.len();
                }
            }
            framer.flush();
            while framer.next_frame().is_some() {}
            framer.reset();
            assert_eq!(
                allocations() - before,
                0,
                "{tts_hz} -> {out_hz} Hz allocated"
            );
            assert!(frames > 0);
        }
    }
}
