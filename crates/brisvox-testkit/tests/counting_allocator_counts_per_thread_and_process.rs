//! The counting allocator sees this thread's allocations and frees, and the
//! process-wide live bytes and their peak.

use brisvox_testkit::alloc::{
    CountingAllocator, allocations_during, live_bytes, peak_bytes, reset_peak, thread_allocations,
    thread_live_bytes,
};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn allocations_frees_live_bytes_and_the_peak_are_counted() {
    let start = reset_peak();
    let live_before = thread_live_bytes();
    let n = allocations_during(|| {
        let v: Vec<u8> = Vec::with_capacity(1_000_000);
        std::hint::black_box(&v);
    });
    assert_eq!(n, 1);
    assert_eq!(thread_live_bytes(), live_before, "freed again");
    assert!(peak_bytes() >= start + 1_000_000, "the peak saw the vector");

    let before = thread_allocations();
    let kept: Vec<u64> = Vec::with_capacity(1_000);
    assert_eq!(thread_allocations() - before, 1);
    assert_eq!(thread_live_bytes() - live_before, 8_000);
    assert!(live_bytes() >= 8_000);
    drop(kept);
    assert_eq!(allocations_during(|| {}), 0);
}
