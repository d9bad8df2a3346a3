//! Cost of `Segmenter::push` on realistic answers (EN, TR), on text without
//! sentence ends and on an over-long token (hard cuts).
//!
//! Criterion reports the time per push through the element throughput; the
//! worst single push is measured separately (best of 3 runs of the maximum)
//! and printed before the criterion groups.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};
use criterion::{Criterion, Throughput};

struct Shape {
    name: &'static str,
    language: Language,
    text: String,
}

fn shapes() -> Vec<Shape> {
    let en = include_str!("../tests/fixtures/answers_en.txt").to_owned();
    let tr = include_str!("../tests/fixtures/answers_tr.txt").to_owned();
    let flat = "and then the words keep coming without any end in sight ".repeat(20);
    let long = format!("Ok. {} done.", "x".repeat(2600));
    vec![
        Shape {
            name: "en_answers",
            language: Language::En,
            text: en,
        },
        Shape {
            name: "tr_answers",
            language: Language::Tr,
            text: tr,
        },
        Shape {
            name: "no_sentence_ends",
            language: Language::En,
            text: flat,
        },
        Shape {
            name: "long_token",
            language: Language::En,
            text: long,
        },
    ]
}

fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The slowest single push of one pass over `pieces`.
#[allow(clippy::disallowed_methods)] // a bench reads the clock; the crate itself never does
fn worst_push(language: Language, pieces: &[String]) -> (Duration, Duration) {
    let mut segmenter = Segmenter::new(SegmenterConfig::new(language));
    let mut out = Vec::with_capacity(64);
    let mut times = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let start = Instant::now();
        segmenter.push_into(black_box(piece), &mut out);
        times.push(start.elapsed());
        out.clear();
    }
    segmenter.finish();
    times.sort_unstable();
    let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
    (p99, *times.last().unwrap_or(&Duration::ZERO))
}

fn report_worst_pushes() {
    println!("worst single push (best of 3 runs of 20 passes each): p99 / max");
    for shape in shapes() {
        for size in [4, 12] {
            let pieces = pieces(&shape.text, size);
            let best = (0..3)
                .map(|_| {
                    (0..20)
                        .map(|_| worst_push(shape.language, &pieces))
                        .fold((Duration::ZERO, Duration::ZERO), |a, b| {
                            (a.0.max(b.0), a.1.max(b.1))
                        })
                })
                .min_by_key(|r| r.1)
                .unwrap_or_default();
            println!(
                "  {}/{size}: {} pushes, p99 {:?}, max {:?}",
                shape.name,
                pieces.len(),
                best.0,
                best.1
            );
        }
    }
}

fn bench_push(c: &mut Criterion) {
    let mut group = c.benchmark_group("segment_push");
    for shape in shapes() {
        for size in [4, 12] {
            let pieces = pieces(&shape.text, size);
            group.throughput(Throughput::Elements(pieces.len() as u64));
            let mut segmenter = Segmenter::new(SegmenterConfig::new(shape.language));
            let mut out = Vec::with_capacity(64);
            group.bench_function(format!("{}/{size}_chars", shape.name), |b| {
                b.iter(|| {
                    for piece in &pieces {
                        segmenter.push_into(black_box(piece), &mut out);
                        out.clear();
                    }
                    black_box(segmenter.finish())
                })
            });
        }
    }
    group.finish();
}

fn main() {
    report_worst_pushes();
    let mut criterion = Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30)
        .configure_from_args();
    bench_push(&mut criterion);
    criterion.final_summary();
}
