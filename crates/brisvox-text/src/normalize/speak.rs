//! Writing a matched number as words, per language.

use super::number::Numeral;
use super::rules::{Currency, NumberMatch, Post, Prefix};
use super::{words_en as en, words_tr as tr};
use crate::Language;

const MONTHS_EN: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MONTHS_TR: [&str; 12] = [
    "Ocak", "Şubat", "Mart", "Nisan", "Mayıs", "Haziran", "Temmuz", "Ağustos", "Eylül", "Ekim",
    "Kasım", "Aralık",
];

/// Writes `m` as the words to speak.
pub(crate) fn say_number(m: &NumberMatch<'_>, language: Language, out: &mut String) {
    let percent = m.prefix == Prefix::Percent || m.post == Post::Percent;
    let currency = match (m.prefix, m.post) {
        (Prefix::Currency(c), _) | (_, Post::Currency(c)) => Some(c),
        _ => None,
    };
    if m.prefix == Prefix::Minus {
        word(
            out,
            if language == Language::En {
                "minus"
            } else {
                "eksi"
            },
        );
    }
    if percent && language == Language::Tr {
        word(out, "yüzde");
    }
    match (currency, m.post, m.parsed.numeral) {
        (Some(c), _, numeral) => amount(numeral, c, language, out),
        (None, Post::OrdinalDot | Post::OrdinalLetters, Numeral::Value { int, frac: None }) => {
            ordinal(int, language, out)
        }
        (None, _, numeral) => numeral_words(numeral, m.year_context, language, out),
    }
    if percent && language == Language::En {
        word(out, "percent");
    }
    match m.post {
        Post::Range(to) => {
            word(out, "to");
            if m.year_context && (1000..=2099).contains(&to) {
                en::year(to, out)
            } else {
                en::cardinal(to, out)
            }
        }
        Post::Plural => en::make_plural(out),
        Post::Letters => out.push(' '),
        _ => {}
    }
    if let Some(suffix) = m.suffix {
        tr::attach_suffix(out, suffix);
    }
}

fn word(out: &mut String, w: &str) {
    en::push_word(out, w);
}

fn cardinal(n: u64, language: Language, out: &mut String) {
    match language {
        Language::En => en::cardinal(n, out),
        Language::Tr => tr::cardinal(n, out),
    }
}

fn ordinal(n: u64, language: Language, out: &mut String) {
    match language {
        Language::En => en::ordinal(n, out),
        Language::Tr => tr::ordinal(n, out),
    }
}

fn digits(written: &str, language: Language, out: &mut String) {
    for c in written.chars() {
        let w = match (c.to_digit(10), language) {
            (Some(d), Language::En) => en::digit(d as u8),
            (Some(d), Language::Tr) => tr::digit(d as u8),
            (None, Language::En) => separator_en(c),
            (None, Language::Tr) => separator_tr(c),
        };
        word(out, w);
    }
}

/// Digit groups that fit no number rule (`1.2.3`, `24/7`): short groups as
/// numbers, long or zero-led ones digit by digit, separators as words.
fn groups(written: &str, language: Language, out: &mut String) {
    let mut rest = written;
    while !rest.is_empty() {
        let len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let group = &rest[..len];
        match group.parse::<u64>() {
            Ok(n) if len > 0 && len <= 4 && (len == 1 || !group.starts_with('0')) => {
                cardinal(n, language, out)
            }
            _ => digits(group, language, out),
        }
        let Some(sep) = rest[len..].chars().next() else {
            break;
        };
        digits(&rest[len..len + sep.len_utf8()], language, out);
        rest = &rest[len + sep.len_utf8()..];
    }
}

fn separator_en(c: char) -> &'static str {
    match c {
        '.' => "point",
        ',' => "comma",
        ':' => "colon",
        _ => "slash",
    }
}

fn separator_tr(c: char) -> &'static str {
    match c {
        '.' => "nokta",
        ',' => "virgül",
        ':' => "iki nokta",
        _ => "bölü",
    }
}

/// Plain numbers, decimals, times, dates and digit strings.
pub(crate) fn numeral_words(
    numeral: Numeral<'_>,
    year_context: bool,
    language: Language,
    out: &mut String,
) {
    match numeral {
        Numeral::Value { int, frac: None } => {
            if year_context && language == Language::En && (1000..=2099).contains(&int) {
                en::year(int, out);
            } else {
                cardinal(int, language, out);
            }
        }
        Numeral::Value {
            int,
            frac: Some(frac),
        } => decimal(int, frac, language, out),
        Numeral::Time { hour, minute } => time(hour, minute, language, out),
        Numeral::Date { day, month, year } => date(day, month, year, language, out),
        Numeral::Digits(written) => groups(written, language, out),
    }
}

fn decimal(int: u64, frac: &str, language: Language, out: &mut String) {
    cardinal(int, language, out);
    match language {
        Language::En => {
            word(out, "point");
            digits(frac, language, out);
        }
        Language::Tr => {
            word(out, "virgül");
            let significant = frac.trim_start_matches('0');
            for _ in 0..frac.len() - significant.len() {
                word(out, "sıfır");
            }
            match significant.parse::<u64>() {
                Ok(n) if significant.len() <= 18 => tr::cardinal(n, out),
                _ => digits(significant, language, out),
            }
        }
    }
}

fn time(hour: u64, minute: u64, language: Language, out: &mut String) {
    cardinal(hour, language, out);
    match (language, minute) {
        (Language::En, 0) if hour <= 12 => word(out, "o'clock"),
        (Language::En, 0) => word(out, "hundred"),
        (Language::En, 1..=9) => {
            word(out, "oh");
            en::cardinal(minute, out);
        }
        (Language::Tr, 0) => {}
        (Language::Tr, 1..=9) => {
            word(out, "sıfır");
            tr::cardinal(minute, out);
        }
        _ => cardinal(minute, language, out),
    }
}

fn date(day: u64, month: u64, year: &str, language: Language, out: &mut String) {
    let month_index = (month.clamp(1, 12) - 1) as usize;
    let year_value = year.parse::<u64>().unwrap_or(0);
    match language {
        Language::En => {
            word(out, MONTHS_EN[month_index]);
            en::ordinal(day, out);
            out.push_str(", ");
            if year.len() == 4 {
                en::year(year_value, out)
            } else {
                en::cardinal(year_value, out)
            }
        }
        Language::Tr => {
            tr::cardinal(day, out);
            word(out, MONTHS_TR[month_index]);
            tr::cardinal(year_value, out);
        }
    }
}

/// Unit names: (one, many, sub-unit one, sub-unit many).
fn units(currency: Currency, language: Language) -> [&'static str; 4] {
    match (language, currency) {
        (Language::En, Currency::Dollar) => ["dollar", "dollars", "cent", "cents"],
        (Language::En, Currency::Euro) => ["euro", "euros", "cent", "cents"],
        (Language::En, Currency::Pound) => ["pound", "pounds", "penny", "pence"],
        (Language::En, Currency::Lira) => ["lira", "lira", "kurus", "kurus"],
        (Language::Tr, Currency::Dollar) => ["dolar", "dolar", "sent", "sent"],
        (Language::Tr, Currency::Euro) => ["avro", "avro", "sent", "sent"],
        (Language::Tr, Currency::Pound) => ["sterlin", "sterlin", "peni", "peni"],
        (Language::Tr, Currency::Lira) => ["lira", "lira", "kuruş", "kuruş"],
    }
}

fn amount(numeral: Numeral<'_>, currency: Currency, language: Language, out: &mut String) {
    let [one, many, sub_one, sub_many] = units(currency, language);
    match numeral {
        Numeral::Value { int, frac } if frac.is_none_or(|f| f.len() == 2) => {
            cardinal(int, language, out);
            word(out, if int == 1 { one } else { many });
            let cents = frac.and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
            if cents > 0 {
                if language == Language::En {
                    word(out, "and");
                }
                cardinal(cents, language, out);
                word(out, if cents == 1 { sub_one } else { sub_many });
            }
        }
        other => {
            numeral_words(other, false, language, out);
            word(out, many);
        }
    }
}
