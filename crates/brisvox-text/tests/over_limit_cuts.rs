//! Chunks that outgrow `max_chunk_chars` are cut by the fallback rules.
mod common;
use common::*;

#[test]
fn cut_at_the_last_clause_boundary_inside_the_limit() {
    let config = en().with_max_chunk_chars(30);
    assert_eq!(
        chunks(
            config,
            "Ok. one two, three four, five six seven eight nine ten."
        ),
        [
            "Ok.",
            "one two, three four,",
            "five six seven eight nine ten."
        ]
    );
}

#[test]
fn else_at_the_last_whitespace_inside_the_limit() {
    let config = en().with_max_chunk_chars(20);
    assert_eq!(
        chunks(config, "Ok. aaaa bbbb cccc dddd eeee ffff."),
        ["Ok.", "aaaa bbbb cccc dddd", "eeee ffff."]
    );
}

#[test]
fn else_at_the_first_whitespace_after_it() {
    let config = en().with_max_chunk_chars(10);
    let long = "x".repeat(25);
    let text = format!("Ok. {long} tail words here.");
    assert_eq!(
        chunks(config, &text),
        ["Ok.".to_owned(), long, "tail words".into(), "here.".into()]
    );
}

#[test]
fn never_cut_after_a_declined_period() {
    let config = tr().with_max_chunk_chars(10);
    assert_eq!(
        chunks(config, "Oğlum 3. sınıf öğrencisi"),
        ["Oğlum", "3. sınıf", "öğrencisi"]
    );
    let config = en().with_max_chunk_chars(10);
    assert_eq!(
        chunks(config, "Ok. See Dr. Smithsonian now"),
        ["Ok.", "See", "Dr. Smithsonian", "now"]
    );
}

#[test]
fn the_fallback_waits_for_the_lookahead_of_an_ambiguous_period() {
    use brisvox_text::segment::Segmenter;
    let mut s = Segmenter::new(en().with_max_chunk_chars(10));
    assert_eq!(s.push("Ok. https://example.com/a."), ["Ok."]);
    assert!(
        s.push(" ").is_empty(),
        "an address period depends on the next char"
    );
    assert!(
        s.push("and").is_empty(),
        "declined before lowercase: no cut after it"
    );
    assert_eq!(s.push(" more"), ["https://example.com/a. and"]);
    assert_eq!(s.finish().as_deref(), Some("more"));
}

#[test]
fn a_plain_word_period_does_not_wait_when_over_the_limit() {
    use brisvox_text::segment::Segmenter;
    let mut s = Segmenter::new(en().with_max_chunk_chars(10));
    s.push("Ok. ");
    let long = "y".repeat(12);
    assert_eq!(s.push(&format!("{long}.")), ["Ok.".to_owned()]);
    assert_eq!(
        s.push(" "),
        [format!("{long}.")],
        "Yes-like words never wait"
    );
}
