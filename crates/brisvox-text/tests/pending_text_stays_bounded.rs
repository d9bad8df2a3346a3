//! The pending text stays within 4 x max + 2 chars after every push, plus the
//! whitespace allowance (max + 1) while a fallback waits for its lookahead.
use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};
use proptest::prelude::*;

const MAX: usize = 20;

fn bound_holds(pieces: &[String]) -> Result<(), TestCaseError> {
    let mut s = Segmenter::new(SegmenterConfig::new(Language::En).with_max_chunk_chars(MAX));
    for piece in pieces {
        s.push(piece);
        prop_assert!(
            s.pending_chars() <= 5 * MAX + 1,
            "pending {} after {:?}",
            s.pending_chars(),
            piece
        );
    }
    Ok(())
}

#[test]
fn a_long_token_followed_by_an_ambiguous_period_and_spaces() {
    let mut s = Segmenter::new(SegmenterConfig::new(Language::En).with_max_chunk_chars(MAX));
    s.push(&format!("Ok. https://{}.com.", "a".repeat(200)));
    assert!(s.pending_chars() <= 4 * MAX + 2);
    s.push(&" ".repeat(500));
    assert!(s.pending_chars() <= 5 * MAX + 1, "{}", s.pending_chars());
}

#[test]
fn without_a_waiting_period_the_bound_is_four_times_plus_two() {
    let mut s = Segmenter::new(SegmenterConfig::new(Language::En).with_max_chunk_chars(MAX));
    for _ in 0..200 {
        s.push("abcdefg");
        assert!(s.pending_chars() <= 4 * MAX + 2);
    }
    for _ in 0..200 {
        s.push("!!!!");
        assert!(s.pending_chars() <= 4 * MAX + 2);
    }
}

proptest! {
    #[test]
    fn random_streams_stay_bounded(pieces in prop::collection::vec("[a-c .!?,:\\n-]{1,40}|[ ]{1,80}|[x]{1,200}", 1..40)) {
        bound_holds(&pieces)?;
    }
}
