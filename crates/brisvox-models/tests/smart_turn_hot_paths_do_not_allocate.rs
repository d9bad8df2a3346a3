//! After construction, pushing frames into the ring, snapshotting it into a sized
//! buffer and computing features into a caller's buffer allocate nothing (counted
//! on the calling thread by a counting global allocator).

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use brisvox_models::smart_turn::{
    FEATURES_LEN, FRAME_SAMPLES, FeatureExtractor, SmartTurnRing, snapshot_buffer,
};

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` with its arguments unchanged; the
// counter is a const-initialised thread-local Cell that never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `ptr` came from `System.alloc` above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn ring_pushes_and_snapshots_do_not_allocate() {
    let mut ring = SmartTurnRing::new();
    let mut out = snapshot_buffer();
    let frame: Vec<i16> = (0..FRAME_SAMPLES as i16).collect();
    let n = allocations_during(|| {
        for k in 0..1_000 {
            ring.push(&frame);
            if k == 10 {
                ring.mark_speech_start(200);
            }
            if k % 50 == 0 {
                ring.snapshot_into(&mut out);
            }
        }
        ring.end_turn();
        ring.snapshot_into(&mut out);
    });
    assert_eq!(n, 0, "allocations on the media path");
}

#[test]
fn features_into_a_callers_buffer_do_not_allocate_after_construction() {
    let mut extractor = FeatureExtractor::new();
    let mut out = vec![0.0f32; FEATURES_LEN];
    let audio: Vec<i16> = (0..96_000)
        .map(|i| ((i as f64 * 0.05).sin() * 5_000.0) as i16)
        .collect();
    let n = allocations_during(|| {
        for len in [96_000, 20_000, 1] {
            extractor
                .compute_into(&audio[..len], &mut out)
                .expect("sized");
        }
    });
    assert_eq!(n, 0, "allocations per analysis");
}
