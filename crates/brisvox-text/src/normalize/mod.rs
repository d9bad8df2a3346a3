//! The TTS text normaliser: written forms to the words a TTS should speak,
//! in English and Turkish.
//!
//! Call [`normalize`] on each segmenter chunk before it goes to the TTS. It
//! reads numbers in both conventions (`1.250.000`, `1,250,000`, `3,14`,
//! `3.14`), percentages, currencies, dates, times, ordinals, phone numbers
//! and common abbreviations, and attaches Turkish suffixes written after a
//! number (`3'te`) to the spoken number with the right vowel harmony. A chunk
//! with no digit, symbol or period comes back borrowed without being
//! scanned; one with nothing to rewrite comes back borrowed too.
//!
//! Cost is linear in the chunk. A chunk of at most [`INLINE_CHUNK_CHARS`]
//! chars may be normalised inline on an async worker; longer ones should be
//! moved off it ([`needs_offload`]). The rules and tables are in
//! `docs/TEXT.md`.

mod abbrev;
mod number;
mod phone;
mod rules;
mod speak;
mod words_en;
mod words_tr;

use std::borrow::Cow;

pub use crate::Language;

use abbrev::When;
use rules::{Currency, Prefix};

/// Longest chunk (in chars) that may be normalised inline on an async worker;
/// longer chunks go to the offload pool.
pub const INLINE_CHUNK_CHARS: usize = 256;

/// Whether `chunk` is too long to normalise inline (more than
/// [`INLINE_CHUNK_CHARS`] chars).
pub fn needs_offload(chunk: &str) -> bool {
    // A byte count within the limit bounds the char count too.
    chunk.len() > INLINE_CHUNK_CHARS && chunk.chars().count() > INLINE_CHUNK_CHARS
}

/// The words to speak for `text` in `language`: borrowed when nothing
/// changes.
pub fn normalize(text: &str, language: Language) -> Cow<'_, str> {
    if !text.bytes().any(may_need_rewrite) {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    if normalize_into(text, language, &mut out) {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// Writes the words to speak for `text` into `out` (cleared first) and
/// returns whether anything changed; when it returns `false`, `out` holds
/// nothing useful and `text` is the answer. For callers that reuse a buffer.
pub fn normalize_into(text: &str, language: Language, out: &mut String) -> bool {
    out.clear();
    out.reserve(text.len() + text.len() / 2);
    let mut rewriter = Rewriter {
        text,
        language,
        out,
        copied: 0,
    };
    rewriter.run()
}

/// Bytes that can start something the rules rewrite: digits, `.` (an
/// abbreviation), `%`, `$`, `+` and the lead bytes of `€ £ ₺`.
fn may_need_rewrite(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'.' | b'%' | b'$' | b'+' | 0xC2 | 0xE2)
}

struct Rewriter<'t, 'o> {
    text: &'t str,
    language: Language,
    out: &'o mut String,
    /// Bytes of `text` already copied or rewritten.
    copied: usize,
}

impl Rewriter<'_, '_> {
    fn run(&mut self) -> bool {
        let bytes = self.text.as_bytes();
        let mut i = 0;
        let mut changed = false;
        while i < bytes.len() {
            let b = bytes[i];
            if !is_rule_start(b) {
                i += 1;
                continue;
            }
            let end = if b == b'.' {
                self.abbreviation_before(i)
            } else {
                self.rule_at(i)
            };
            match end {
                Some(end) => {
                    changed = true;
                    i = end;
                }
                None => i += 1,
            }
        }
        if changed {
            self.out.push_str(&self.text[self.copied..]);
        }
        changed
    }

    /// A rule at `i` (an ASCII trigger or the lead byte of a symbol, so a
    /// char boundary), when the char before is not a letter or digit.
    fn rule_at(&mut self, i: usize) -> Option<usize> {
        let mut before = self.text[..i].chars().rev();
        let inside_token = match before.next() {
            Some('.' | ',') => before.next().is_some_and(char::is_alphanumeric),
            Some(prev) => prev.is_alphanumeric(),
            None => false,
        };
        let c = self.text[i..].chars().next()?;
        if inside_token {
            None
        } else {
            self.try_at(i, c)
        }
    }

    /// An abbreviation whose (first) period is at `dot`.
    fn abbreviation_before(&mut self, dot: usize) -> Option<usize> {
        let before = &self.text[self.copied..dot];
        let word_len: usize = before
            .chars()
            .rev()
            .take_while(|&c| c.is_alphabetic() || c == '.')
            .map(char::len_utf8)
            .sum();
        let word = before[before.len() - word_len..].trim_start_matches('.');
        let start = dot - word.len();
        let prev_alnum = self.text[..start]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        if word.is_empty() || prev_alnum || word.len() > 12 {
            return None;
        }
        self.abbreviation(start)
    }

    /// Rewrites whatever starts at `i` (with `c` there); returns its end.
    fn try_at(&mut self, i: usize, c: char) -> Option<usize> {
        let after = i + c.len_utf8();
        let digit_after = |at: usize| self.text.as_bytes().get(at).is_some_and(u8::is_ascii_digit);
        if c.is_ascii_digit() {
            let phone = rules::iso_date(self.text, i)
                .is_none()
                .then(|| phone::phone_end(self.text, i))
                .flatten();
            if let Some(end) = phone {
                return Some(self.phone(i, end));
            }
            return Some(self.number(i, i, Prefix::None));
        }
        match c {
            '+' | '(' => phone::phone_end(self.text, i).map(|end| self.phone(i, end)),
            '%' if digit_after(after) => Some(self.number(i, after, Prefix::Percent)),
            '-' | '−' if digit_after(after) && self.after_space(i) => {
                Some(self.number(i, after, Prefix::Minus))
            }
            _ => {
                let currency = Currency::from_symbol(c)?;
                let start = if digit_after(after) {
                    after
                } else if self.text[after..].starts_with(' ') && digit_after(after + 1) {
                    after + 1
                } else {
                    return None;
                };
                Some(self.number(i, start, Prefix::Currency(currency)))
            }
        }
    }

    fn after_space(&self, i: usize) -> bool {
        self.text[..i]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
    }

    /// Copies the text before `at` that no rule touched.
    fn flush(&mut self, at: usize) {
        self.out.push_str(&self.text[self.copied..at]);
    }

    fn phone(&mut self, at: usize, end: usize) -> usize {
        self.flush(at);
        phone::say(&self.text[at..end], self.language, self.out);
        self.copied = end;
        end
    }

    fn number(&mut self, at: usize, digits_at: usize, prefix: Prefix) -> usize {
        let m = rules::match_number(self.text, digits_at, prefix, self.language);
        self.flush(at);
        speak::say_number(&m, self.language, self.out);
        self.copied = m.end;
        m.end
    }

    /// A known abbreviation starting at `i` (a letter at a word start).
    fn abbreviation(&mut self, i: usize) -> Option<usize> {
        let text = self.text;
        let end = abbrev_end(text, i)?;
        let written = &text[i..end];
        let after = &text[end + 1..];
        let next = after.trim_start().chars().next();
        let (words, when) = if self.language == Language::En && written.eq_ignore_ascii_case("st") {
            (abbrev::saint_or_street(next), When::Always)
        } else {
            abbrev::lookup(written, self.language)?
        };
        if when == When::BeforeNumber && !next.is_some_and(|c| c.is_ascii_digit()) {
            return None;
        }
        let capital = written.starts_with(char::is_uppercase);
        let keep_period = when == When::MayEndSentence && next.is_none_or(char::is_uppercase);
        self.flush(i);
        abbrev::write_cased(words, capital, self.out);
        if keep_period {
            self.out.push('.');
        }
        self.copied = end + 1;
        Some(end + 1)
    }
}

/// Bytes where a rule may start: digits, `%`, `$`, `+`, `(`, `-`, the lead
/// bytes of `€ ₺ − £`, and `.` (the end of an abbreviation).
fn is_rule_start(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'.' | b'%' | b'$' | b'+' | b'(' | b'-' | 0xC2 | 0xE2)
}

/// End of the word starting at `i` (letters and digits).
fn word_end(text: &str, i: usize) -> usize {
    text[i..]
        .char_indices()
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(text.len(), |(j, _)| i + j)
}

/// End (the offset of the final period) of a possible abbreviation at `i`:
/// letters, optionally with inner single periods (`e.g`), then a period.
fn abbrev_end(text: &str, i: usize) -> Option<usize> {
    let mut end = word_end(text, i);
    while text[end..].starts_with('.') {
        let next_word = word_end(text, end + 1);
        let inner = next_word > end + 1 && text[next_word..].starts_with('.');
        if !inner {
            break;
        }
        end = next_word;
    }
    let ends_with_period = text[end..].starts_with('.');
    let short = end - i <= 12;
    (ends_with_period && short).then_some(end)
}
