//! finish() emits the rest and starts a new stream; reset() drops the rest.
use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};

#[test]
fn finish_emits_the_rest_and_the_next_chunk_is_a_first_chunk() {
    let mut s = Segmenter::new(SegmenterConfig::new(Language::En));
    assert_eq!(s.push("Sure, it is done"), ["Sure,"]);
    assert_eq!(s.finish().as_deref(), Some("it is done"));
    assert_eq!(s.finish(), None);
    assert_eq!(s.push("Okay, next"), ["Okay,"], "first-chunk rules again");
}

#[test]
fn reset_drops_unspoken_text() {
    let mut s = Segmenter::new(SegmenterConfig::new(Language::En));
    assert_eq!(s.push("Sure, this was never"), ["Sure,"]);
    s.reset();
    assert_eq!(s.pending_chars(), 0);
    assert_eq!(s.push("Fine, new answer"), ["Fine,"]);
    assert_eq!(s.finish().as_deref(), Some("new answer"));
}

#[test]
fn a_list_marker_after_reset_starts_a_line() {
    let mut s = Segmenter::new(SegmenterConfig::new(Language::En).with_first_min_words(3));
    s.push("Some words here and there");
    s.reset();
    s.push("1. Buy milk now. ");
    assert_eq!(s.push("Then"), ["1. Buy milk now."]);
}
