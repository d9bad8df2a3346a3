//! English number words: cardinals, ordinals, years, digits.

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const SCALES: [(u64, &str); 5] = [
    (1_000_000_000_000_000, "quadrillion"),
    (1_000_000_000_000, "trillion"),
    (1_000_000_000, "billion"),
    (1_000_000, "million"),
    (1_000, "thousand"),
];

/// The word for one digit.
pub(crate) fn digit(d: u8) -> &'static str {
    ONES[usize::from(d % 10)]
}

pub(crate) fn push_word(out: &mut String, word: &str) {
    if out.ends_with(char::is_alphanumeric) {
        out.push(' ');
    }
    out.push_str(word);
}

/// Writes 1..=999 (nothing for 0).
fn below_thousand(n: u64, out: &mut String) {
    let (hundreds, rest) = (n / 100, n % 100);
    if hundreds > 0 {
        push_word(out, ONES[hundreds as usize]);
        push_word(out, "hundred");
    }
    if rest >= 20 {
        push_word(out, TENS[(rest / 10) as usize]);
        if rest % 10 > 0 {
            out.push('-');
            out.push_str(ONES[(rest % 10) as usize]);
        }
    } else if rest > 0 {
        push_word(out, ONES[rest as usize]);
    }
}

/// Writes `n` as an English cardinal (`1250` -> `one thousand two hundred fifty`).
pub(crate) fn cardinal(n: u64, out: &mut String) {
    if n == 0 {
        push_word(out, "zero");
        return;
    }
    let mut rest = n;
    for (scale, name) in SCALES {
        if rest >= scale {
            cardinal(rest / scale, out);
            push_word(out, name);
            rest %= scale;
        }
    }
    below_thousand(rest, out);
}

/// Rewrites the last word written (a cardinal) as an ordinal.
pub(crate) fn make_ordinal(out: &mut String) {
    let start = out.rfind([' ', '-']).map_or(0, |i| i + 1);
    let word = &out[start..];
    let ordinal = match word {
        "one" => "first",
        "two" => "second",
        "three" => "third",
        "five" => "fifth",
        "eight" => "eighth",
        "nine" => "ninth",
        "twelve" => "twelfth",
        _ => "",
    };
    if !ordinal.is_empty() {
        out.truncate(start);
        out.push_str(ordinal);
    } else if let Some(stem) = word.strip_suffix('y') {
        let len = start + stem.len();
        out.truncate(len);
        out.push_str("ieth");
    } else {
        out.push_str("th");
    }
}

/// Writes `n` as an ordinal (`3` -> `third`, `21` -> `twenty-first`).
pub(crate) fn ordinal(n: u64, out: &mut String) {
    cardinal(n, out);
    make_ordinal(out);
}

/// Rewrites the last word written as a plural (`ninety` -> `nineties`).
pub(crate) fn make_plural(out: &mut String) {
    if out.ends_with('y') {
        out.pop();
        out.push_str("ies");
    } else if out.ends_with('x') {
        out.push_str("es");
    } else {
        out.push('s');
    }
}

/// Writes a year the way it is said: `1990` -> `nineteen ninety`,
/// `1905` -> `nineteen oh five`, `2005` -> `two thousand five`,
/// `2026` -> `twenty twenty-six`.
pub(crate) fn year(n: u64, out: &mut String) {
    let (high, low) = (n / 100, n % 100);
    if !(11..=99).contains(&high) || (high % 10 == 0 && low < 10) {
        cardinal(n, out);
        return;
    }
    cardinal(high, out);
    match low {
        0 => push_word(out, "hundred"),
        1..=9 => {
            push_word(out, "oh");
            push_word(out, ONES[low as usize]);
        }
        _ => cardinal(low, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn say(f: fn(u64, &mut String), n: u64) -> String {
        let mut out = String::new();
        f(n, &mut out);
        out
    }

    #[test]
    fn cardinals() {
        for (n, words) in [
            (0, "zero"),
            (7, "seven"),
            (21, "twenty-one"),
            (100, "one hundred"),
            (1_250_000, "one million two hundred fifty thousand"),
            (1_000_001, "one million one"),
        ] {
            assert_eq!(say(cardinal, n), words);
        }
    }

    #[test]
    fn ordinals() {
        for (n, words) in [
            (1, "first"),
            (3, "third"),
            (12, "twelfth"),
            (20, "twentieth"),
            (21, "twenty-first"),
            (100, "one hundredth"),
        ] {
            assert_eq!(say(ordinal, n), words);
        }
    }

    #[test]
    fn years() {
        for (n, words) in [
            (1990, "nineteen ninety"),
            (1905, "nineteen oh five"),
            (1900, "nineteen hundred"),
            (2005, "two thousand five"),
            (2000, "two thousand"),
            (2026, "twenty twenty-six"),
        ] {
            assert_eq!(say(year, n), words);
        }
    }
}
