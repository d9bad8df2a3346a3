//! A newline after text ends a chunk, with the list rules.
mod common;
use common::*;

#[test]
fn numbered_items_are_separate_chunks() {
    assert_eq!(
        chunks(en(), "1. Buy milk\n2. Call mom"),
        ["1. Buy milk", "2. Call mom"]
    );
    assert_eq!(
        chunks(tr(), "1. Süt al\n2. Annemi ara\n"),
        ["1. Süt al", "2. Annemi ara"]
    );
}

#[test]
fn a_line_ending_in_a_clause_mark_or_dash_ends_at_the_newline() {
    assert_eq!(
        chunks(en(), "Ok. - eggs,\n- milk,\n"),
        ["Ok.", "- eggs,", "- milk,"]
    );
    assert_eq!(
        chunks(en(), "Here is the list:\n1. Buy milk"),
        ["Here is the list:", "1. Buy milk"]
    );
    assert_eq!(chunks(en(), "Ok. Wait -\nnow"), ["Ok.", "Wait -", "now"]);
}

#[test]
fn a_bare_bullet_line_is_not_a_chunk() {
    assert_eq!(
        chunks(en(), "Ok. Items\n-\nmilk\n"),
        ["Ok.", "Items", "-\nmilk"]
    );
}

#[test]
fn a_list_marker_on_its_own_line_stays_with_its_item() {
    assert_eq!(
        chunks(en(), "Ok. Steps\n1.\nBuy milk\n"),
        ["Ok.", "Steps", "1.\nBuy milk"]
    );
}

#[test]
fn a_newline_is_decided_at_once() {
    let mut segmenter = brisvox_text::segment::Segmenter::new(en());
    assert!(segmenter.push("1. Buy milk").is_empty());
    assert_eq!(segmenter.push("\n"), ["1. Buy milk"]);
}

#[test]
fn blank_lines_do_not_make_empty_chunks() {
    assert_eq!(
        chunks(en(), "Ok. First\n\n\nSecond\n\n"),
        ["Ok.", "First", "Second"]
    );
}
