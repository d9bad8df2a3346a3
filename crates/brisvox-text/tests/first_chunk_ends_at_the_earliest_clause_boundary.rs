//! The first chunk of a stream ends at the earliest clause boundary or
//! sentence end that holds `first_min_words` words.
mod common;
use common::*;

#[test]
fn one_word_clause_is_the_first_chunk_by_default() {
    assert_eq!(
        chunks(
            en(),
            "Sure, here is a fairly long answer to your question. Next one."
        ),
        [
            "Sure,",
            "here is a fairly long answer to your question.",
            "Next one."
        ]
    );
    assert_eq!(
        chunks(tr(), "Peki, hemen bakıyorum. Tamam."),
        ["Peki,", "hemen bakıyorum.", "Tamam."]
    );
}

#[test]
fn semicolon_colon_and_spaced_dash_are_clause_boundaries() {
    assert_eq!(
        chunks(en(), "Well; that is it. Ok."),
        ["Well;", "that is it.", "Ok."]
    );
    assert_eq!(chunks(en(), "Note: this. Ok."), ["Note:", "this.", "Ok."]);
    assert_eq!(
        chunks(en(), "Right - so it goes. Ok."),
        ["Right -", "so it goes.", "Ok."]
    );
}

#[test]
fn later_clause_marks_do_not_end_chunks() {
    assert_eq!(
        chunks(en(), "Yes, a, b; c: d - e. F."),
        ["Yes,", "a, b; c: d - e.", "F."]
    );
}

#[test]
fn marks_inside_tokens_are_not_clause_boundaries() {
    assert_eq!(
        chunks(en(), "It costs 1,000 at 10:30 today, ok"),
        ["It costs 1,000 at 10:30 today,", "ok"]
    );
    assert_eq!(chunks(en(), "well-known thing"), ["well-known thing"]);
}

#[test]
fn min_words_is_configurable() {
    let three = en().with_first_min_words(3);
    assert_eq!(
        chunks(three, "Sure, here it is, all of it. Done."),
        ["Sure, here it is,", "all of it.", "Done."]
    );
    assert_eq!(
        chunks(three, "Hi. How are you doing? Good."),
        ["Hi. How are you doing?", "Good."]
    );
}

#[test]
fn per_language_defaults_are_one_word() {
    use brisvox_text::segment::{FIRST_MIN_WORDS_EN, FIRST_MIN_WORDS_TR};
    assert_eq!(en().first_min_words, FIRST_MIN_WORDS_EN);
    assert_eq!(tr().first_min_words, FIRST_MIN_WORDS_TR);
    assert_eq!((FIRST_MIN_WORDS_EN, FIRST_MIN_WORDS_TR), (1, 1));
}
