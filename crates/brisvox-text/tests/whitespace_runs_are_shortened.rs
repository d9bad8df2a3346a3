//! Whitespace runs longer than max_chunk_chars + 1 are shortened; a newline in
//! the excess is kept.
use brisvox_text::Language;
use brisvox_text::segment::{Segmenter, SegmenterConfig};

fn config() -> SegmenterConfig {
    SegmenterConfig::new(Language::En).with_max_chunk_chars(10)
}

#[test]
fn a_long_space_run_is_held_to_the_limit_plus_one() {
    let mut s = Segmenter::new(config());
    s.push("Ok. https://x.io/wait.");
    s.push(&" ".repeat(1000));
    assert!(
        s.pending_chars() <= "https://x.io/wait.".len() + 11,
        "pending {}",
        s.pending_chars()
    );
}

#[test]
fn a_newline_inside_the_excess_is_kept() {
    let mut s = Segmenter::new(config());
    s.push("Ok. words");
    s.push(&" ".repeat(500));
    s.push("\n");
    let rest = s.finish();
    assert_eq!(rest, None, "only whitespace left");
    let text = format!("Ok. words{}\n{}more", " ".repeat(500), " ".repeat(500));
    let mut t = Segmenter::new(config());
    let mut all = t.push(&text);
    all.extend(t.finish());
    assert_eq!(all, ["Ok.", "words", "more"]);
}
