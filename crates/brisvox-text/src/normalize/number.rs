//! Parsing the written number at a position: digit groups joined by
//! `. , : /`, then what it is (time, date, plain value).
//!
//! Separator resolution (both languages read both conventions):
//!
//! * both `.` and `,` present: the last one is the decimal mark
//!   (`1.250.000,50`, `1,250,000.50`);
//! * one kind repeated (`1.250.000`, `1,250,000`): thousands, when every
//!   group after the first has three digits;
//! * one separator once with exactly three digits after it and a non-zero
//!   integer part (`1.000`, `1,000`): the language decides, Turkish reads `.`
//!   as thousands and `,` as decimal, English the reverse;
//! * otherwise a single separator is the decimal mark (`3.14` and `3,14` are
//!   both pi).

use crate::Language;

/// Longest digit string read as a number; longer ones are read digit by digit.
pub(crate) const MAX_VALUE_DIGITS: usize = 18;

/// A written number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Numeral<'a> {
    /// `14:30`.
    Time { hour: u64, minute: u64 },
    /// `12.03.2026`, `12/03/2026` (day, month, year digits).
    Date { day: u64, month: u64, year: &'a str },
    /// An integer with an optional decimal part (the digits after the mark).
    Value { int: u64, frac: Option<&'a str> },
    /// Too long for a value, or groups that fit no rule: read digit by digit
    /// (`text` is the whole written form).
    Digits(&'a str),
}

/// A parsed number: what it is and where its text ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parsed<'a> {
    /// The number.
    pub(crate) numeral: Numeral<'a>,
    /// Byte offset just after it.
    pub(crate) end: usize,
    /// Digit groups written (1 for `150`, 3 for `1.250.000`).
    pub(crate) groups: usize,
}

const MAX_GROUPS: usize = 8;

/// Digit groups and the separators between them.
struct Groups<'a> {
    parts: [&'a str; MAX_GROUPS],
    seps: [u8; MAX_GROUPS],
    len: usize,
}

fn scan_groups(text: &str, start: usize) -> (Groups<'_>, usize) {
    let bytes = text.as_bytes();
    let mut groups = Groups {
        parts: [""; MAX_GROUPS],
        seps: [0; MAX_GROUPS],
        len: 0,
    };
    let mut i = start;
    loop {
        let from = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        groups.parts[groups.len] = &text[from..i];
        groups.len += 1;
        let more = i + 1 < bytes.len()
            && matches!(bytes[i], b'.' | b',' | b':' | b'/')
            && bytes[i + 1].is_ascii_digit()
            && groups.len < MAX_GROUPS;
        if !more {
            return (groups, i);
        }
        groups.seps[groups.len - 1] = bytes[i];
        i += 1;
    }
}

fn value(digits: &str) -> Option<u64> {
    if digits.len() > MAX_VALUE_DIGITS {
        return None;
    }
    digits.parse().ok()
}

/// Parses the number whose first digit is at byte `start`.
pub(crate) fn parse(text: &str, start: usize, language: Language) -> Parsed<'_> {
    let (g, end) = scan_groups(text, start);
    let whole = &text[start..end];
    let numeral = classify(&g, whole, language);
    Parsed {
        numeral,
        end,
        groups: g.len,
    }
}

fn classify<'a>(g: &Groups<'a>, whole: &'a str, language: Language) -> Numeral<'a> {
    let parts = &g.parts[..g.len];
    let seps = &g.seps[..g.len.saturating_sub(1)];
    match (parts, seps) {
        ([single], []) => value(single).map_or(Numeral::Digits(whole), |int| Numeral::Value {
            int,
            frac: None,
        }),
        ([h, m], [b':']) => time(h, m).unwrap_or(Numeral::Digits(whole)),
        ([d, m, y], [s1, s2]) if s1 == s2 && matches!(s1, b'.' | b'/') => {
            // Slashed dates are month first in English (US), day first otherwise.
            let month_first =
                *s1 == b'/' && language == Language::En && value(m).is_some_and(|m| m > 12);
            let (d, m) = if month_first
                || (*s1 == b'/' && language == Language::En && value(d).is_some_and(|d| d <= 12))
            {
                (m, d)
            } else {
                (d, m)
            };
            date(d, m, y)
                .or_else(|| grouped(parts, seps, whole, language))
                .unwrap_or(Numeral::Digits(whole))
        }
        _ => grouped(parts, seps, whole, language).unwrap_or(Numeral::Digits(whole)),
    }
}

fn time(h: &str, m: &str) -> Option<Numeral<'static>> {
    let (hour, minute) = (value(h)?, value(m)?);
    (h.len() <= 2 && m.len() == 2 && hour <= 24 && minute <= 59)
        .then_some(Numeral::Time { hour, minute })
}

fn date<'a>(d: &str, m: &str, y: &'a str) -> Option<Numeral<'a>> {
    let (day, month) = (value(d)?, value(m)?);
    let ok = d.len() <= 2
        && m.len() <= 2
        && matches!(y.len(), 2 | 4)
        && (1..=31).contains(&day)
        && (1..=12).contains(&month);
    ok.then_some(Numeral::Date {
        day,
        month,
        year: y,
    })
}

/// Groups joined by `.` and `,` only: thousands and a decimal mark.
fn grouped<'a>(
    parts: &[&'a str],
    seps: &[u8],
    whole: &'a str,
    language: Language,
) -> Option<Numeral<'a>> {
    if seps.iter().any(|s| !matches!(s, b'.' | b',')) {
        return None;
    }
    let decimal = decimal_mark(parts, seps, language);
    let int_groups = if decimal.is_some() {
        &parts[..parts.len() - 1]
    } else {
        parts
    };
    let thousands_ok = int_groups.len() == 1
        || (int_groups[0].len() <= 3
            && !int_groups[0].starts_with('0')
            && int_groups[1..].iter().all(|p| p.len() == 3));
    let int_seps = &seps[..int_groups.len() - 1];
    let one_kind =
        int_seps.windows(2).all(|w| w[0] == w[1]) && decimal.is_none_or(|d| !int_seps.contains(&d));
    if !thousands_ok || !one_kind {
        return None;
    }
    let digits: usize = int_groups.iter().map(|p| p.len()).sum();
    if digits > MAX_VALUE_DIGITS {
        return Some(Numeral::Digits(whole));
    }
    let int = int_groups.iter().fold(0u64, |acc, p| {
        acc * 10u64.pow(p.len() as u32) + p.parse::<u64>().unwrap_or(0)
    });
    let frac = decimal.map(|_| parts[parts.len() - 1]);
    Some(Numeral::Value { int, frac })
}

/// Which separator (if any) is the decimal mark.
fn decimal_mark(parts: &[&str], seps: &[u8], language: Language) -> Option<u8> {
    let last = *seps.last()?;
    let mixed = seps.iter().any(|&s| s != last);
    if mixed {
        return Some(last);
    }
    if seps.len() > 1 {
        return None;
    }
    let ambiguous = parts[1].len() == 3 && parts[0] != "0";
    if !ambiguous {
        return Some(last);
    }
    let thousands = match language {
        Language::Tr => b'.',
        Language::En => b',',
    };
    (last != thousands).then_some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(text: &str, language: Language) -> Numeral<'_> {
        parse(text, 0, language).numeral
    }

    #[test]
    fn separators_resolve_per_convention() {
        use Numeral::Value;
        for language in [Language::En, Language::Tr] {
            assert_eq!(
                num("1.250.000", language),
                Value {
                    int: 1_250_000,
                    frac: None
                }
            );
            assert_eq!(
                num("1,250,000", language),
                Value {
                    int: 1_250_000,
                    frac: None
                }
            );
            assert_eq!(
                num("3,14", language),
                Value {
                    int: 3,
                    frac: Some("14")
                }
            );
            assert_eq!(
                num("3.14", language),
                Value {
                    int: 3,
                    frac: Some("14")
                }
            );
            assert_eq!(
                num("1.250,50", language),
                Value {
                    int: 1250,
                    frac: Some("50")
                }
            );
            assert_eq!(
                num("1,250.50", language),
                Value {
                    int: 1250,
                    frac: Some("50")
                }
            );
            assert_eq!(
                num("0.125", language),
                Value {
                    int: 0,
                    frac: Some("125")
                }
            );
        }
        assert_eq!(
            num("1.000", Language::Tr),
            Value {
                int: 1000,
                frac: None
            }
        );
        assert_eq!(
            num("1,000", Language::Tr),
            Value {
                int: 1,
                frac: Some("000")
            }
        );
        assert_eq!(
            num("1,000", Language::En),
            Value {
                int: 1000,
                frac: None
            }
        );
        assert_eq!(
            num("1.000", Language::En),
            Value {
                int: 1,
                frac: Some("000")
            }
        );
    }

    #[test]
    fn times_dates_and_odd_groups() {
        assert_eq!(
            num("14:30", Language::Tr),
            Numeral::Time {
                hour: 14,
                minute: 30
            }
        );
        assert_eq!(
            num("12.03.2026", Language::Tr),
            Numeral::Date {
                day: 12,
                month: 3,
                year: "2026"
            }
        );
        assert_eq!(
            num("03/12/2026", Language::En),
            Numeral::Date {
                day: 12,
                month: 3,
                year: "2026"
            }
        );
        assert_eq!(
            num("25/12/2026", Language::En),
            Numeral::Date {
                day: 25,
                month: 12,
                year: "2026"
            }
        );
        assert_eq!(
            num("03/12/2026", Language::Tr),
            Numeral::Date {
                day: 3,
                month: 12,
                year: "2026"
            }
        );
        assert_eq!(num("1.2.3", Language::En), Numeral::Digits("1.2.3"));
        assert_eq!(num("99:99", Language::En), Numeral::Digits("99:99"));
        assert_eq!(
            num("1234567890123456789012", Language::En),
            Numeral::Digits("1234567890123456789012")
        );
        assert_eq!(parse("12.5 TL", 0, Language::Tr).end, 4);
    }
}
