//! One-token lookahead: a terminator or clause mark is decided only when the
//! next non-space char has arrived.
use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};

fn en() -> Segmenter {
    Segmenter::new(SegmenterConfig::new(Language::En))
}

#[test]
fn a_sentence_end_waits_for_the_next_non_space_char() {
    let mut s = en();
    assert_eq!(s.push("Okay, "), Vec::<String>::new());
    assert_eq!(s.push("got"), ["Okay,"]);
    assert!(s.push(" it.").is_empty());
    assert!(s.push("   ").is_empty(), "whitespace is not the lookahead");
    assert_eq!(s.push("Next"), ["got it."]);
}

#[test]
fn a_clause_mark_is_decided_inside_one_token() {
    let mut s = en();
    assert_eq!(s.push("Okay, got it."), ["Okay,"]);
    assert_eq!(s.finish().as_deref(), Some("got it."));
}

#[test]
fn the_lookahead_decides_between_abbreviation_decimal_and_end() {
    let mut s = en();
    s.push("Ok. I met Dr.");
    assert!(s.push(" ").is_empty());
    assert!(s.push("Smith").is_empty(), "Dr. before a name is declined");
    let mut s = en();
    s.push("Ok. It is 3.");
    assert!(s.push("14 now").is_empty(), "3.14 is a decimal");
    let mut s = en();
    s.push("Ok. I am done.");
    assert_eq!(s.push(" Then"), ["I am done."]);
}
