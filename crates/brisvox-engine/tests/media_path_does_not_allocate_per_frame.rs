//! Once a call is warm, the media path allocates nothing per 20 ms frame:
//! during a stretch where the caller is silent and the bot idle, frames still
//! flow through AudioIn (ring, VAD windows, the STT session's audio ring) and
//! the allocator is not called.
//! (A counting global allocator; paused clock on one thread, energy VAD,
//! fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use brisvox_engine::sim::{RecordingSink, SimCaller};
use brisvox_engine::{Models, run_call};
use common::*;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// The workspace denies unsafe code; a global allocator cannot be written
// without it, so this test opts in. Every method delegates to `System`.
#[allow(unsafe_code)]
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

#[tokio::test(start_paused = true)]
async fn a_quiet_stretch_of_frames_allocates_nothing() {
    let fx = fixture("en_two_utterances");
    let frames = SimCaller::new(fx.samples.clone()).frames();
    let mocks = Mocks::fixed(2);
    let (sink, _log) = RecordingSink::new();
    let call = tokio::spawn(run_call(
        sim_config(),
        SimCaller::new(fx.samples),
        sink,
        mocks.providers(),
        Models::energy_and_complete(),
    ));
    // The first answer has played out by 5.5 s; the second utterance starts at 7.07 s.
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(1_400)).await;
    let during = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let report = call.await.expect("the call task").expect("a valid config");
    println!("{during} allocations over 70 frames");
    assert!(
        before > 0,
        "the allocator counts (the call's setup allocates)"
    );
    assert_eq!(report.frames_in, frames as u64);
    assert_eq!(
        report.turn_counters.responses, 2,
        "a real call around the window"
    );
    assert_eq!(during, 0, "allocations in 70 quiet frames");
}
