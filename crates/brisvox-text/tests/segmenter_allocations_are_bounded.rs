//! The segmenter allocates about once per emitted chunk: at most 4 per chunk
//! plus 3 per push for text with sentence ends, plus a constant (a
//! per-char allocation would exceed it).
//!
//! The counting allocator needs `unsafe impl GlobalAlloc`; it only forwards
//! to the system allocator and counts, so `unsafe_code` is allowed in this
//! test file alone.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call forwards to `System` with the caller's arguments; the
// counter is a const-initialised thread-local that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

/// Pushes `text` in `size`-char deltas; returns (allocations, chunks, pushes).
fn measure(language: Language, text: &str, size: usize) -> (usize, usize, usize) {
    let chars: Vec<char> = text.chars().collect();
    let pieces: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    let mut segmenter = Segmenter::new(SegmenterConfig::new(language));
    let mut out: Vec<String> = Vec::with_capacity(256);
    let before = allocs();
    for piece in &pieces {
        segmenter.push_into(piece, &mut out);
    }
    out.extend(segmenter.finish());
    let spent = allocs() - before;
    (spent, out.len(), pieces.len())
}

const CONSTANT: usize = 16;

#[test]
fn allocations_per_chunk_and_push_are_bounded() {
    let en = include_str!("fixtures/answers_en.txt").repeat(4);
    let tr = include_str!("fixtures/answers_tr.txt").repeat(4);
    let flat = "and then the words keep coming without any end in sight ".repeat(40);
    for size in [1, 4, 12] {
        for (language, text) in [(Language::En, &en), (Language::Tr, &tr)] {
            let (spent, chunks, pushes) = measure(language, text, size);
            let bound = 4 * chunks + 3 * pushes + CONSTANT;
            println!(
                "{language:?} {size}-char deltas: {spent} allocations, {chunks} chunks, {pushes} pushes"
            );
            assert!(spent <= bound, "{language:?}/{size}: {spent} > {bound}");
            // Our design does better: one allocation per chunk, none per push.
            assert!(
                spent <= chunks + CONSTANT,
                "{language:?}/{size}: {spent} for {chunks} chunks"
            );
        }
        let (spent, chunks, pushes) = measure(Language::En, &flat, size);
        println!(
            "no sentence ends, {size}-char deltas: {spent} allocations, {chunks} chunks, {pushes} pushes"
        );
        assert!(
            spent <= 4 * chunks + CONSTANT,
            "no sentence ends/{size}: {spent}"
        );
    }
}
