//! Helpers shared by the segmenter tests.
#![allow(dead_code, unreachable_pub)]

use brisvox_text::segment::{Segmenter, SegmenterConfig};

/// Feeds `pieces` one push each, then finishes; returns every chunk.
pub fn segment_pieces(config: SegmenterConfig, pieces: &[&str]) -> Vec<String> {
    let mut segmenter = Segmenter::new(config);
    let mut out = Vec::new();
    for piece in pieces {
        segmenter.push_into(piece, &mut out);
    }
    out.extend(segmenter.finish());
    out
}

/// Feeds `text` as one delta, then finishes.
pub fn segment(config: SegmenterConfig, text: &str) -> Vec<String> {
    segment_pieces(config, &[text])
}

/// Feeds `text` one char at a time, then finishes.
pub fn segment_by_char(config: SegmenterConfig, text: &str) -> Vec<String> {
    let pieces: Vec<String> = text.chars().map(String::from).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    segment_pieces(config, &refs)
}

/// English defaults.
pub fn en() -> SegmenterConfig {
    SegmenterConfig::new(brisvox_text::Language::En)
}

/// Turkish defaults.
pub fn tr() -> SegmenterConfig {
    SegmenterConfig::new(brisvox_text::Language::Tr)
}

/// Segments `text` whole and char by char, checks both agree, returns them.
pub fn chunks(config: SegmenterConfig, text: &str) -> Vec<String> {
    let whole = segment(config, text);
    assert_eq!(
        whole,
        segment_by_char(config, text),
        "split-dependent output for {text:?}"
    );
    whole
}
