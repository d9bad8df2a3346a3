//! Phone numbers, read digit by digit in their written groups.
//!
//! Recognised shapes: `+` and 8-15 digits (`+90 532 123 45 67`,
//! `+14155552671`); `(555) 123-4567`; a leading `0` with 10-11 digits
//! (`0532 123 45 67`, `05321234567`); three or more dash-joined groups with
//! 7-12 digits (`555-123-4567`), or the local `555-1234`.

use crate::Language;

/// What has been read of a possible phone number so far.
#[derive(Default)]
struct Shape {
    plus: bool,
    paren: bool,
    leading_zero: bool,
    digits: usize,
    groups: usize,
    first_group: usize,
    dashes: usize,
    spaces: usize,
}

impl Shape {
    /// Whether no continuation can make a phone number any more (spaced
    /// groups only count after `+`, `(...)` or a leading `0xx`).
    fn hopeless(&self) -> bool {
        let spaced_ok = self.plus || self.paren || (self.leading_zero && self.first_group >= 3);
        self.spaces > 0 && !spaced_ok
    }

    /// Whether the digits read so far make a whole phone number.
    fn accepted(&self) -> bool {
        if self.plus {
            (8..=15).contains(&self.digits)
        } else if self.paren {
            self.digits == 10
        } else if self.leading_zero && self.first_group >= 3 {
            (10..=11).contains(&self.digits) && (self.groups > 1 || self.digits == 11)
        } else {
            let local = self.groups == 2 && self.first_group == 3 && self.digits == 7;
            (self.groups >= 3 || local)
                && self.spaces == 0
                && self.dashes == self.groups - 1
                && (7..=12).contains(&self.digits)
        }
    }
}

/// End of the phone number starting at byte `start`, if one starts there:
/// the longest prefix of digit groups that makes one.
pub(crate) fn phone_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut shape = Shape {
        plus: bytes[start] == b'+',
        paren: bytes[start] == b'(',
        ..Shape::default()
    };
    let mut i = start + usize::from(shape.plus || shape.paren);
    shape.leading_zero = bytes.get(i) == Some(&b'0');
    let mut best = None;
    loop {
        let from = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == from || shape.digits + (i - from) > 15 {
            return best;
        }
        shape.digits += i - from;
        shape.groups += 1;
        if shape.groups == 1 {
            shape.first_group = i - from;
            if shape.paren {
                if shape.first_group != 3 || bytes.get(i) != Some(&b')') {
                    return None;
                }
                i += 1;
            }
        }
        if shape.accepted() {
            best = Some(i);
        }
        match (bytes.get(i), bytes.get(i + 1)) {
            (Some(b' '), Some(d)) if d.is_ascii_digit() => shape.spaces += 1,
            (Some(b'-'), Some(d)) if d.is_ascii_digit() => shape.dashes += 1,
            _ => return best,
        }
        if shape.hopeless() {
            return best;
        }
        i += 1;
    }
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
