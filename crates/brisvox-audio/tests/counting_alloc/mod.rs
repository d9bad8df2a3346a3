//! A counting global allocator for the allocation and memory tests. Counts are
//! per thread, so parallel tests in one binary do not disturb each other.
//!
//! `unsafe` is denied in the workspace; a `GlobalAlloc` impl cannot be written
//! without it, so this module (and only it) allows it. It forwards every call
//! to the system allocator unchanged and only counts.
#![allow(unsafe_code)]
#![allow(dead_code)] // Each test binary uses a different subset.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn record(allocs: usize, bytes: isize) {
    // try_with: the slots may be gone while a thread is being torn down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + allocs));
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get() + bytes));
}

/// Allocations (and reallocations) made by this thread so far.
pub(crate) fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Bytes this thread has allocated and not freed.
pub(crate) fn live_bytes() -> isize {
    LIVE_BYTES.with(Cell::get)
}

// SAFETY: every call is forwarded to `System` with the same arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(1, layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record(0, -(layout.size() as isize));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(1, new_size as isize - layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
