//! Phone numbers, read digit by digit in their written groups.
//!
//! Recognised shapes: `+` and 8-15 digits (`+90 532 123 45 67`,
//! `+14155552671`); `(555) 123-4567`; a leading `0` with 10-11 digits
//! (`0532 123 45 67`, `05321234567`); three or more dash-joined groups with
//! 7-12 digits (`555-123-4567`).

use crate::Language;

/// End of the phone number starting at byte `start`, if one starts there.
pub(crate) fn phone_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let plus = bytes[start] == b'+';
    let paren = bytes[start] == b'(';
    let mut i = start + usize::from(plus || paren);
    let (mut digits, mut groups, mut dashes, mut spaces) = (0usize, 0usize, 0usize, 0usize);
    let mut first_group = 0usize;
    let mut best = None;
    loop {
        let from = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == from || digits + (i - from) > 15 {
            break;
        }
        digits += i - from;
        groups += 1;
        if groups == 1 {
            first_group = i - from;
            if paren {
                if first_group != 3 || bytes.get(i) != Some(&b')') {
                    return None;
                }
                i += 1;
            }
        }
        let leading_zero = bytes[start + usize::from(plus || paren)] == b'0';
        let accepted = if plus {
            (8..=15).contains(&digits)
        } else if paren {
            digits == 10
        } else if leading_zero && first_group >= 3 {
            (10..=11).contains(&digits) && (groups > 1 || digits == 11)
        } else {
            groups >= 3 && spaces == 0 && dashes == groups - 1 && (7..=12).contains(&digits)
        };
        if accepted {
            best = Some(i);
        }
        match (bytes.get(i), bytes.get(i + 1)) {
            (Some(b' '), Some(d)) if d.is_ascii_digit() => spaces += 1,
            (Some(b'-'), Some(d)) if d.is_ascii_digit() => dashes += 1,
            _ => break,
        }
        i += 1;
    }
    best
}

/// Writes the phone number `written` digit by digit, a pause (comma) between
/// its written groups.
pub(crate) fn say(written: &str, language: Language, out: &mut String) {
    let (plus, digit): (&str, fn(u8) -> &'static str) = match language {
        Language::En => ("plus", super::words_en::digit),
        Language::Tr => ("artı", super::words_tr::digit),
    };
    let (mut after_digit, mut new_group) = (false, false);
    for b in written.bytes() {
        if b.is_ascii_digit() {
            if after_digit {
                out.push_str(if new_group { ", " } else { " " });
            } else if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
            out.push_str(digit(b - b'0'));
            (after_digit, new_group) = (true, false);
        } else if b == b'+' {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
            out.push_str(plus);
        } else {
            new_group = after_digit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        for (text, end) in [
            ("+90 532 123 45 67 ara", Some(17)),
            ("0532 123 45 67", Some(14)),
            ("05321234567", Some(11)),
            ("555-123-4567", Some(12)),
            ("(555) 123-4567", Some(14)),
            ("1 2 3 4 5 6 7 8", None),
            ("2026", None),
            ("0 1 2 3 4 5 6 7 8 9", None),
        ] {
            assert_eq!(phone_end(text, 0), end, "{text}");
        }
    }

    #[test]
    fn digits_are_read_in_groups() {
        let mut out = String::new();
        say("+90 532", Language::Tr, &mut out);
        assert_eq!(out, "artı dokuz sıfır, beş üç iki");
        let mut out = String::new();
        say("555-12", Language::En, &mut out);
        assert_eq!(out, "five five five, one two");
    }
}
