//! The chunks are the same however the text is split into deltas.
use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};
use proptest::prelude::*;

fn run(config: SegmenterConfig, pieces: &[&str]) -> Vec<String> {
    let mut s = Segmenter::new(config);
    let mut out = Vec::new();
    for piece in pieces {
        s.push_into(piece, &mut out);
    }
    out.extend(s.finish());
    out
}

/// Splits `text` at the char offsets in `cuts` (taken modulo its length).
fn split_at<'a>(text: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let mut at: Vec<usize> = cuts.iter().map(|c| bounds[c % bounds.len()]).collect();
    at.extend([0, text.len()]);
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

fn pieces_of(text: &str, sizes: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut k = 0;
    while i < chars.len() {
        let n = sizes[k % sizes.len()].clamp(1, 3);
        out.push(chars[i..(i + n).min(chars.len())].iter().collect());
        i += n;
        k += 1;
    }
    out
}

/// Tokens that exercise every rule.
const TOKENS: &[&str] = &[
    "Sure",
    ",",
    " ",
    "  ",
    "\n",
    "\n\n",
    "Dr",
    ".",
    "Smith",
    "3",
    "14",
    "3.",
    "sınıf",
    "1.",
    "Buy",
    "milk",
    "etc",
    "vb",
    "E.U.",
    "...",
    "…",
    "?!",
    "!",
    "?",
    "**",
    "\"",
    ")",
    "-",
    " - ",
    ";",
    ":",
    "www.x.com",
    "a@b.io",
    "We",
    "we",
    "İ",
    "ı",
    "👨\u{200d}👩",
    "🇹🇷",
    "e\u{301}",
    "x",
    "10:30",
    "1,000",
    "Oğlum",
    "öğrencisi",
    "https://a.b/c",
    "xxxxxxxxxxxxxxxxxxxxxxx",
];

fn config(tr: bool, max: usize, words: usize) -> SegmenterConfig {
    let language = if tr { Language::Tr } else { Language::En };
    SegmenterConfig::new(language)
        .with_max_chunk_chars(max)
        .with_first_min_words(words)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn one_to_three_char_pieces_give_the_same_chunks(
        tokens in prop::collection::vec(prop::sample::select(TOKENS), 1..80),
        sizes in prop::collection::vec(1usize..=3, 1..8),
        tr in any::<bool>(), max in 2usize..60, words in 0usize..4,
    ) {
        let text: String = tokens.concat();
        let config = config(tr, max, words);
        let whole = run(config, &[&text]);
        let pieces = pieces_of(&text, &sizes);
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        prop_assert_eq!(whole, run(config, &refs));
    }

    #[test]
    fn random_splits_give_the_same_chunks(
        tokens in prop::collection::vec(prop::sample::select(TOKENS), 1..80),
        cuts in prop::collection::vec(any::<usize>(), 0..30),
        tr in any::<bool>(), max in 2usize..60, words in 0usize..4,
    ) {
        let text: String = tokens.concat();
        let config = config(tr, max, words);
        prop_assert_eq!(run(config, &[&text]), run(config, &split_at(&text, &cuts)));
    }

    #[test]
    fn token_streams_give_the_same_chunks_as_the_whole_text(
        tokens in prop::collection::vec(prop::sample::select(TOKENS), 1..120),
        tr in any::<bool>(), max in 2usize..60, words in 0usize..4,
    ) {
        let text: String = tokens.concat();
        let config = config(tr, max, words);
        prop_assert_eq!(run(config, &[&text]), run(config, &tokens));
    }

    #[test]
    fn arbitrary_text_gives_the_same_chunks_char_by_char(
        text in "[a-zA-Zçğıöşü0-9 .,;:!?…\\-\\n\"*)(@/]{0,300}",
        tr in any::<bool>(), max in 2usize..40,
    ) {
        let config = config(tr, max, 1);
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        prop_assert_eq!(run(config, &[&text]), run(config, &refs));
    }

    #[test]
    fn chunks_keep_every_non_space_char_in_order(
        tokens in prop::collection::vec(prop::sample::select(TOKENS), 1..80),
        max in 2usize..60,
    ) {
        let text: String = tokens.concat();
        let out = run(config(false, max, 1), &tokens);
        let got: String = out.concat().chars().filter(|c| !c.is_whitespace()).collect();
        let want: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        prop_assert_eq!(got, want);
        prop_assert!(out.iter().all(|c| !c.is_empty() && c.trim() == c));
    }
}
