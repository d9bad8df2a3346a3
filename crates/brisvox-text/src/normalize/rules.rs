//! What surrounds a number: a prefix (`%15`, `$20`, `-5`) and what follows
//! it (`15%`, `150 TL`, `3.` as a Turkish ordinal, `3rd`, `1990s`, `3'te`).

use super::number::{self, Numeral, Parsed};
use crate::Language;

/// Currencies that are spoken with their unit names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Currency {
    /// `$`, `USD`.
    Dollar,
    /// `€`, `EUR`.
    Euro,
    /// `£`, `GBP`.
    Pound,
    /// `₺`, `TL`, `TRY`.
    Lira,
}

impl Currency {
    /// The currency of a symbol written before or right after a number.
    pub(crate) fn from_symbol(c: char) -> Option<Self> {
        match c {
            '$' => Some(Self::Dollar),
            '€' => Some(Self::Euro),
            '£' => Some(Self::Pound),
            '₺' => Some(Self::Lira),
            _ => None,
        }
    }

    /// The currency of a code or symbol written after a number and a space.
    fn from_code(code: &str) -> Option<Self> {
        match code {
            "TL" | "TRY" | "₺" => Some(Self::Lira),
            "USD" | "$" => Some(Self::Dollar),
            "EUR" | "€" => Some(Self::Euro),
            "GBP" | "£" => Some(Self::Pound),
            _ => None,
        }
    }
}

/// Written before the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// Nothing.
    None,
    /// `%15`.
    Percent,
    /// `-5` after a space.
    Minus,
    /// `$20`, `€5`, `₺150`.
    Currency(Currency),
}

/// Written after the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Post {
    /// Nothing the rules read.
    None,
    /// `15%`.
    Percent,
    /// `150 TL`, `20$`.
    Currency(Currency),
    /// Turkish `3.` before a lowercase word: an ordinal.
    OrdinalDot,
    /// English `3rd`, `21st`.
    OrdinalLetters,
    /// English `1990s`, `80's`.
    Plural,
    /// Letters glued to the number (`4B`): a space goes between.
    Letters,
    /// English range `3-5`: the second number.
    Range(u64),
}

/// A number with everything the rules read around it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NumberMatch<'a> {
    /// The number.
    pub(crate) parsed: Parsed<'a>,
    /// What was written before it.
    pub(crate) prefix: Prefix,
    /// What was written after it.
    pub(crate) post: Post,
    /// A Turkish suffix after an apostrophe (`te` of `3'te`).
    pub(crate) suffix: Option<&'a str>,
    /// English: the word before makes a four-digit number a year (`in 1990`).
    pub(crate) year_context: bool,
    /// Byte offset just after everything matched.
    pub(crate) end: usize,
}

/// Matches the number whose first digit is at `start`, with `prefix`.
pub(crate) fn match_number(
    text: &str,
    start: usize,
    prefix: Prefix,
    language: Language,
) -> NumberMatch<'_> {
    let mut parsed = iso_date(text, start).unwrap_or_else(|| number::parse(text, start, language));
    if language == Language::Tr {
        dotted_time_after_saat(text, start, &mut parsed);
    }
    let (post, mut end) = match_post(text, &parsed, prefix, language);
    let mut suffix = None;
    if language == Language::Tr
        && post != Post::OrdinalDot
        && let Some((s, after)) = apostrophe_suffix(text, end)
    {
        suffix = Some(s);
        end = after;
    }
    let year_range = matches!(post, Post::Range(to) if (1000..=2099).contains(&to));
    let year_context = language == Language::En
        && (post == Post::Plural || year_range || year_word_before(text, start));
    NumberMatch {
        parsed,
        prefix,
        post,
        suffix,
        year_context,
        end,
    }
}

fn match_post(
    text: &str,
    parsed: &Parsed<'_>,
    prefix: Prefix,
    language: Language,
) -> (Post, usize) {
    let end = parsed.end;
    let rest = &text[end..];
    let plain_int =
        matches!(parsed.numeral, Numeral::Value { frac: None, .. }) && parsed.groups == 1;
    if prefix == Prefix::None {
        if rest.starts_with('%') || rest.starts_with(" %") {
            return (Post::Percent, end + rest.find('%').unwrap_or(0) + 1);
        }
        if let Some(found) = currency_after(rest) {
            return (Post::Currency(found.0), end + found.1);
        }
    }
    if let Some((to, to_end)) = range_to(text, parsed, language) {
        return (Post::Range(to), to_end);
    }
    if language == Language::Tr && plain_int && ordinal_dot(rest) {
        return (Post::OrdinalDot, end + 1);
    }
    let letters = rest
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(rest.len());
    if letters == 0 {
        return match plural_apostrophe(rest, language, plain_int) {
            Some(len) => (Post::Plural, end + len),
            None => (Post::None, end),
        };
    }
    let word = &rest[..letters];
    if language == Language::En && plain_int {
        if matches!(
            word.to_ascii_lowercase().as_str(),
            "st" | "nd" | "rd" | "th"
        ) {
            return (Post::OrdinalLetters, end + letters);
        }
        if word == "s" {
            return (Post::Plural, end + 1);
        }
    }
    (Post::Letters, end)
}

/// English `'s` (or `’s`) after a plain integer, as in `1990's`: its length.
fn plural_apostrophe(rest: &str, language: Language, plain_int: bool) -> Option<usize> {
    if language != Language::En || !plain_int {
        return None;
    }
    let mark = rest.chars().next().filter(|c| matches!(c, '\'' | '’'))?;
    let after = &rest[mark.len_utf8()..];
    let tail = after.strip_prefix('s')?;
    (!tail.starts_with(char::is_alphabetic)).then_some(mark.len_utf8() + 1)
}

/// English `3-5`, `2020-2024`: a plain integer, a dash and a larger plain
/// integer of at most four digits that does not look like a local phone
/// number (`555-1234`).
fn range_to(text: &str, parsed: &Parsed<'_>, language: Language) -> Option<(u64, usize)> {
    let Numeral::Value {
        int: from,
        frac: None,
    } = parsed.numeral
    else {
        return None;
    };
    if language != Language::En || parsed.groups != 1 {
        return None;
    }
    let after = text[parsed.end..].strip_prefix(['-', '–'])?;
    if !after.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let start = text.len() - after.len();
    let to = number::parse(text, start, language);
    let Numeral::Value {
        int: to_value,
        frac: None,
    } = to.numeral
    else {
        return None;
    };
    let to_digits = to.end - start;
    let phone_like = (100..1000).contains(&from) && to_digits == 4;
    (to.groups == 1 && from < to_value && to_digits <= 4 && !phone_like)
        .then_some((to_value, to.end))
}

/// `TL`, `₺`, `USD`, ... after one space, or a symbol right after the digits.
fn currency_after(rest: &str) -> Option<(Currency, usize)> {
    if let Some(c) = rest.chars().next().and_then(Currency::from_symbol) {
        return Some((c, rest.chars().next().map_or(1, char::len_utf8)));
    }
    let code_text = rest.strip_prefix(' ')?;
    let code_len = code_text
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_uppercase() || Currency::from_symbol(c).is_some()))
        .map_or(code_text.len(), |(i, _)| i);
    let code = &code_text[..code_len];
    let after = code_text[code_len..].chars().next();
    if after.is_some_and(|c| c.is_alphanumeric()) {
        return None;
    }
    Currency::from_code(code).map(|c| (c, 1 + code_len))
}

/// `. ` then a lowercase word (Turkish ordinal: `3. sınıf`).
fn ordinal_dot(rest: &str) -> bool {
    let Some(after) = rest.strip_prefix(". ") else {
        return false;
    };
    after.chars().next().is_some_and(char::is_lowercase)
}

/// A suffix written after an apostrophe: `'te` -> (`te`, end).
pub(crate) fn apostrophe_suffix(text: &str, at: usize) -> Option<(&str, usize)> {
    let rest = &text[at..];
    let mark = rest.chars().next().filter(|c| matches!(c, '\'' | '’'))?;
    let body = &rest[mark.len_utf8()..];
    let len = body
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(body.len());
    (len > 0).then(|| (&body[..len], at + mark.len_utf8() + len))
}

/// An ISO date `2026-03-12` (year, month, day).
pub(crate) fn iso_date(text: &str, start: usize) -> Option<Parsed<'_>> {
    let b = text.as_bytes().get(start..start + 10)?;
    let digits_at = |r: std::ops::Range<usize>| r.clone().all(|i| b[i].is_ascii_digit());
    let shape =
        digits_at(0..4) && b[4] == b'-' && digits_at(5..7) && b[7] == b'-' && digits_at(8..10);
    let after_digit = text
        .as_bytes()
        .get(start + 10)
        .is_some_and(u8::is_ascii_digit);
    if !shape || after_digit {
        return None;
    }
    let month: u64 = text[start + 5..start + 7].parse().ok()?;
    let day: u64 = text[start + 8..start + 10].parse().ok()?;
    let valid = (1..=12).contains(&month) && (1..=31).contains(&day);
    let numeral = Numeral::Date {
        day,
        month,
        year: &text[start..start + 4],
    };
    valid.then_some(Parsed {
        numeral,
        end: start + 10,
        groups: 3,
    })
}

/// Turkish `saat 14.30`: a dotted time after the word `saat`.
fn dotted_time_after_saat(text: &str, start: usize, parsed: &mut Parsed<'_>) {
    let Numeral::Value {
        int: hour,
        frac: Some(minutes),
    } = parsed.numeral
    else {
        return;
    };
    let dotted = text[start..parsed.end].contains('.') && parsed.groups == 2;
    let minute = minutes.parse::<u64>().unwrap_or(99);
    if dotted
        && minutes.len() == 2
        && hour <= 24
        && minute <= 59
        && last_word(&text[..start]) == Some("saat")
    {
        parsed.numeral = Numeral::Time { hour, minute };
    }
}

/// The word right before `before`'s trailing spaces, if there are spaces.
fn last_word(before: &str) -> Option<&str> {
    let trimmed = before.trim_end();
    if trimmed.len() == before.len() {
        return None;
    }
    let word_start = trimmed
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphabetic())
        .map_or(0, |(i, c)| i + c.len_utf8());
    Some(&trimmed[word_start..])
}

/// English words after which a four-digit number is a year.
fn year_word_before(text: &str, start: usize) -> bool {
    let Some(word) = last_word(&text[..start]) else {
        return false;
    };
    [
        "in", "since", "by", "until", "from", "of", "during", "before", "after", "year", "early",
        "late", "mid",
    ]
    .iter()
    .any(|w| w.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(text: &str, language: Language) -> (Post, Option<&str>, usize) {
        let m = match_number(text, 0, Prefix::None, language);
        (m.post, m.suffix, m.end)
    }

    #[test]
    fn posts() {
        assert_eq!(post("15% off", Language::En), (Post::Percent, None, 3));
        assert_eq!(
            post("150 TL'ye", Language::Tr),
            (Post::Currency(Currency::Lira), Some("ye"), 9)
        );
        assert_eq!(post("150 TLX", Language::Tr).0, Post::None);
        assert_eq!(
            post("20$", Language::En),
            (Post::Currency(Currency::Dollar), None, 3)
        );
        assert_eq!(post("3. sınıf", Language::Tr), (Post::OrdinalDot, None, 2));
        assert_eq!(post("3. Sınıf", Language::Tr).0, Post::None);
        assert_eq!(post("3rd", Language::En), (Post::OrdinalLetters, None, 3));
        assert_eq!(post("1990s", Language::En), (Post::Plural, None, 5));
        assert_eq!(post("1990's", Language::En), (Post::Plural, None, 6));
        assert_eq!(post("3'te", Language::Tr), (Post::None, Some("te"), 4));
        assert_eq!(post("4B", Language::En), (Post::Letters, None, 1));
    }

    #[test]
    fn year_words() {
        assert!(year_word_before("in 1990", 3));
        assert!(!year_word_before("win 1990", 4));
        assert!(!year_word_before("1990", 0));
    }
}
