//! A token without whitespace is kept whole up to 4 x max_chunk_chars, then
//! cut at a grapheme-safe position.
mod common;
use common::*;

#[test]
fn a_token_up_to_four_times_the_limit_stays_whole() {
    let config = en().with_max_chunk_chars(10);
    let token = "a".repeat(40);
    assert_eq!(
        chunks(config, &format!("Ok. {token} end")),
        ["Ok.".to_owned(), token, "end".into()]
    );
}

#[test]
fn a_longer_token_is_cut_at_four_times_the_limit() {
    let config = en().with_max_chunk_chars(10);
    let token = "b".repeat(95);
    let out = chunks(config, &format!("Ok. {token}"));
    let lens: Vec<usize> = out.iter().map(|c| c.chars().count()).collect();
    assert_eq!(lens, [3, 40, 40, 15]);
}

#[test]
fn the_cut_does_not_split_emoji_sequences() {
    let config = en().with_max_chunk_chars(10);
    let family = "👨\u{200d}👩\u{200d}👧";
    let token: String = std::iter::repeat_n(family, 20).collect();
    for chunk in chunks(config, &token) {
        assert!(
            chunk.starts_with('👨') && chunk.ends_with('👧'),
            "split sequence: {chunk:?}"
        );
        assert!(chunk.chars().count() <= 40);
    }
    let flags: String = std::iter::repeat_n("🇹🇷", 50).collect();
    for chunk in chunks(config, &flags) {
        assert_eq!(chunk.chars().count() % 2, 0, "split flag: {chunk:?}");
    }
    let tones: String = std::iter::repeat_n("👍🏽", 50).collect();
    for chunk in chunks(config, &tones) {
        assert!(chunk.starts_with('👍'), "skin tone split off: {chunk:?}");
    }
}

#[test]
fn combining_marks_stay_with_their_letter() {
    let config = en().with_max_chunk_chars(10);
    let token: String = std::iter::repeat_n("e\u{301}", 50).collect();
    for chunk in chunks(config, &token) {
        assert!(
            chunk.starts_with('e') && chunk.ends_with('\u{301}'),
            "{chunk:?}"
        );
    }
}

#[test]
fn a_single_grapheme_longer_than_the_cap_is_cut_at_the_cap() {
    let config = en().with_max_chunk_chars(10);
    let token = format!("x{}", "\u{301}".repeat(100));
    let lens: Vec<usize> = chunks(config, &token)
        .iter()
        .map(|c| c.chars().count())
        .collect();
    assert_eq!(lens, [40, 40, 21]);
}
