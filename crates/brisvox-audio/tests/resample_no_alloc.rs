//! No allocation after construction: a counting global allocator watches
//! StreamResampler::process_into, flush and reset on every rate pair once the
//! output vector has the advertised capacity.
//!
//! `unsafe` is denied in the workspace; a `GlobalAlloc` impl cannot be written
//! without it, so this test file (and only it) allows it. It forwards to the
//! system allocator unchanged and only counts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use brisvox_audio::StreamResampler;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` with the same arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 48_000];

/// The only test in this binary, so no other test thread allocates meanwhile.
#[test]
fn processing_flushing_and_resetting_do_not_allocate_after_construction() {
    for in_hz in RATES {
        for out_hz in RATES {
            let mut r = StreamResampler::new(in_hz, out_hz).unwrap();
            let frame: Vec<i16> = (0..in_hz as usize / 50)
                .map(|i| (i * 37 % 4000) as i16 - 2000)
                .collect();
            let odd = &frame[..frame.len() * 2 / 3];
            let mut out =
                Vec::with_capacity(r.max_output_len(frame.len()).max(r.max_flush_len()) * 4);
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            for _ in 0..50 {
                out.clear();
                r.process_into(&frame, &mut out);
                r.process_into(odd, &mut out);
            }
            out.clear();
            r.flush(&mut out);
            r.process_into(&frame, &mut out);
            r.reset();
            let after = ALLOCATIONS.load(Ordering::Relaxed);
            assert_eq!(after - before, 0, "{in_hz} -> {out_hz} Hz allocated");
        }
    }
}
