//! No allocation after construction on the media path: a counting global
//! allocator (per thread, so parallel tests do not disturb each other) watches
//! StreamResampler and OutputFramer in steady state.
//!
//! `unsafe` is denied in the workspace; a `GlobalAlloc` impl cannot be written
//! without it, so this test file (and only it) allows it. It forwards every
//! call to the system allocator unchanged and only counts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use brisvox_audio::{OutputFramer, StreamResampler};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // try_with: the slot may be gone while a thread is being torn down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every call is forwarded to `System` with the same arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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
