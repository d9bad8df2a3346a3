//! The counting global allocator of the allocation and memory tests.
//!
//! A test binary installs it with
//!
//! ```
//! use brisvox_testkit::alloc::{CountingAllocator, allocations_during};
//!
//! #[global_allocator]
//! static ALLOCATOR: CountingAllocator = CountingAllocator;
//!
//! fn main() {
//!     let n = allocations_during(|| drop(std::hint::black_box(vec![0u8; 64])));
//!     assert_eq!(n, 1);
//! }
//! ```
//!
//! and reads two sets of counters:
//!
//! - **per thread** ([`thread_allocations`], [`thread_live_bytes`],
//!   [`allocations_during`]): what the calling thread did, so tests running in
//!   parallel in one binary do not disturb each other;
//! - **per process** ([`live_bytes`], [`peak_bytes`], [`reset_peak`]): what
//!   every thread holds, for memory-per-call and leak checks (a test reading
//!   these should run alone in its binary).
//!
//! It sees what Rust code allocates through the global allocator; memory ONNX
//! Runtime or another C library allocates itself is not counted. An
//! allocation and a reallocation count one each; freeing counts none.

#![allow(unsafe_code)] // A `GlobalAlloc` cannot be written without it; see the SAFETY notes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The system allocator with counters; see the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static THREAD_LIVE: Cell<i64> = const { Cell::new(0) };
}

fn record(allocations: u64, bytes: i64) {
    ALLOCATIONS.fetch_add(allocations, Ordering::Relaxed);
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
    // try_with: a thread being torn down has no counters any more. The cells are
    // const-initialised, so touching them never allocates (no re-entrance).
    let _ = THREAD_ALLOCATIONS.try_with(|c| c.set(c.get() + allocations));
    let _ = THREAD_LIVE.try_with(|c| c.set(c.get() + bytes));
}

fn size(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees hold; the counters are atomics and
// const-initialised thread-local cells that never touch the memory handed out
// and never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            record(1, size(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; the caller upholds `alloc_zeroed`'s contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            record(1, size(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        record(0, -size(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            record(1, size(new_size) - size(layout.size()));
        }
        p
    }
}

/// Allocations (and reallocations) made by this thread so far.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCATIONS.with(Cell::get)
}

/// Bytes this thread has allocated minus the bytes it has freed (memory one
/// thread allocates and another frees makes this drift; it is exact for work
/// that stays on one thread).
pub fn thread_live_bytes() -> i64 {
    THREAD_LIVE.with(Cell::get)
}

/// The allocations (and reallocations) `f` made on this thread.
pub fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = thread_allocations();
    f();
    thread_allocations() - before
}

/// Allocations (and reallocations) made by every thread so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Bytes allocated and not yet freed, over the whole process.
pub fn live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// The most [`live_bytes`] reached since the start or the last [`reset_peak`].
pub fn peak_bytes() -> i64 {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new peak from the bytes live now; returns them.
pub fn reset_peak() -> i64 {
    let live = live_bytes();
    PEAK.store(live, Ordering::Relaxed);
    live
}
