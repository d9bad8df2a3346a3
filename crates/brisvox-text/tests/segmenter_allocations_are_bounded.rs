//! The segmenter allocates about once per emitted chunk: at most 4 per chunk
//! plus 3 per push for text with sentence ends, plus a constant (a
//! per-char allocation would exceed it).
//! (The test kit's counting allocator, per thread.)

use brisvox_testkit::alloc::{CountingAllocator, thread_allocations};
use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocs() -> usize {
    thread_allocations() as usize
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
