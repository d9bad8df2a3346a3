//! Cost of `normalize` on the chunk shapes the engine sees: a short chunk,
//! 250 chars without numbers, mixed chunks of 328 and 1,230 chars, 1,250
//! chars of pathological digit-dense text and 256-char (INLINE_CHUNK_CHARS)
//! digit-dense chunks in both languages.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use brisvox_text::Language;
use brisvox_text::normalize::{INLINE_CHUNK_CHARS, normalize};
use criterion::Criterion;

/// `pattern` repeated and cut to exactly `chars` chars.
fn sized(pattern: &str, chars: usize) -> String {
    pattern.chars().cycle().take(chars).collect()
}

const MIXED: &str = "Randevunuz 12.03.2026 tarihinde saat 14:30'da, Dr. Ayşe Yılmaz ile. \
Toplam tutar 1.250,50 TL, bunun %18'i KDV. Your order of $1,250.00 ships on 03/12/2026 at 9:05; \
call +90 532 123 45 67 or (555) 123-4567 for help. Oğlum 3. sınıf öğrencisi, the 3rd in line, \
ve 5'i de geldi. Pi is 3.14 and 1,000,000 users joined in 1990. ";

const PLAIN: &str = "Sure, here is what I found about your question. The short answer is that \
it depends on where you live and what you need, so let me walk you through the main options. \
First, check the local rules. Then compare the offers you get and pick the one that suits you best. ";

fn shapes() -> Vec<(String, Language, String)> {
    let mut shapes = vec![
        (
            "short_14".to_owned(),
            Language::Tr,
            "Saat 14:30'da.".to_owned(),
        ),
        ("plain_250".to_owned(), Language::En, sized(PLAIN, 250)),
        ("mixed_328".to_owned(), Language::Tr, sized(MIXED, 328)),
        ("mixed_1230".to_owned(), Language::Tr, sized(MIXED, 1230)),
        (
            "digits_1250_en".to_owned(),
            Language::En,
            sized("1 2 3 ", 1250),
        ),
        (
            "digits_1250_tr".to_owned(),
            Language::Tr,
            sized("1 2 3 ", 1250),
        ),
    ];
    let dense = [
        ("123", "1 2 3 "),
        ("big", "1234567 "),
        ("decimal", "3,14 "),
        ("percent", "%15 "),
        ("date", "12.03.2026 "),
        ("suffix", "3'te 5'i "),
    ];
    for language in [Language::En, Language::Tr] {
        for (name, pattern) in dense {
            let tag = format!(
                "dense_{INLINE_CHUNK_CHARS}_{name}_{}",
                if language == Language::En { "en" } else { "tr" }
            );
            shapes.push((tag, language, sized(pattern, INLINE_CHUNK_CHARS)));
        }
    }
    shapes
}

fn bench_normalize(c: &mut Criterion) {
    let mut group = c.benchmark_group("normalize");
    for (name, language, text) in shapes() {
        group.bench_function(name, |b| {
            b.iter(|| normalize(black_box(&text), language).len())
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30)
        .configure_from_args();
    bench_normalize(&mut criterion);
    criterion.final_summary();
}
