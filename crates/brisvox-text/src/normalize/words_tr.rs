//! Turkish number words and the suffix rules (vowel harmony, consonant
//! assimilation) for suffixes written after a number (`3'te`, `5'i`).

const ONES: [&str; 10] = [
    "sıfır", "bir", "iki", "üç", "dört", "beş", "altı", "yedi", "sekiz", "dokuz",
];
const TENS: [&str; 10] = [
    "", "on", "yirmi", "otuz", "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan",
];
const SCALES: [(u64, &str); 5] = [
    (1_000_000_000_000_000, "katrilyon"),
    (1_000_000_000_000, "trilyon"),
    (1_000_000_000, "milyar"),
    (1_000_000, "milyon"),
    (1_000, "bin"),
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

fn below_thousand(n: u64, out: &mut String) {
    let (hundreds, tens, ones) = (n / 100, (n / 10) % 10, n % 10);
    if hundreds > 1 {
        push_word(out, ONES[hundreds as usize]);
    }
    if hundreds > 0 {
        push_word(out, "yüz");
    }
    if tens > 0 {
        push_word(out, TENS[tens as usize]);
    }
    if ones > 0 {
        push_word(out, ONES[ones as usize]);
    }
}

/// Writes `n` as a Turkish cardinal (`1990` -> `bin dokuz yüz doksan`).
pub(crate) fn cardinal(n: u64, out: &mut String) {
    if n == 0 {
        push_word(out, "sıfır");
        return;
    }
    let mut rest = n;
    for (scale, name) in SCALES {
        if rest >= scale {
            let count = rest / scale;
            // "bin", not "bir bin"; but "bir milyon".
            if !(scale == 1_000 && count == 1) {
                cardinal(count, out);
            }
            push_word(out, name);
            rest %= scale;
        }
    }
    below_thousand(rest, out);
}

/// Writes `n` as an ordinal (`3` -> `üçüncü`, `2` -> `ikinci`).
pub(crate) fn ordinal(n: u64, out: &mut String) {
    cardinal(n, out);
    if out.ends_with(is_vowel) {
        attach_suffix(out, "nci");
    } else {
        attach_suffix(out, "inci");
    }
}

fn is_vowel(c: char) -> bool {
    matches!(
        c,
        'a' | 'ı'
            | 'o'
            | 'u'
            | 'e'
            | 'i'
            | 'ö'
            | 'ü'
            | 'A'
            | 'I'
            | 'O'
            | 'U'
            | 'E'
            | 'İ'
            | 'Ö'
            | 'Ü'
    )
}

fn is_front(c: char) -> bool {
    matches!(c, 'e' | 'i' | 'ö' | 'ü' | 'E' | 'İ' | 'Ö' | 'Ü')
}

fn is_rounded(c: char) -> bool {
    matches!(c, 'o' | 'u' | 'ö' | 'ü' | 'O' | 'U' | 'Ö' | 'Ü')
}

/// Voiceless consonants (`fıstıkçı şahap`): a suffix `d` becomes `t` after them.
fn is_voiceless(c: char) -> bool {
    matches!(c, 'f' | 's' | 't' | 'k' | 'ç' | 'ş' | 'h' | 'p')
}

/// The vowel that a suffix vowel becomes after `last` (the previous vowel).
fn harmonize(vowel: char, last: char) -> char {
    let two_way = matches!(vowel, 'a' | 'e');
    match (two_way, is_front(last), is_rounded(last)) {
        (true, true, _) => 'e',
        (true, false, _) => 'a',
        (false, true, true) => 'ü',
        (false, true, false) => 'i',
        (false, false, true) => 'u',
        (false, false, false) => 'ı',
    }
}

/// Appends a suffix written after an apostrophe to the spoken word at the end
/// of `out`, re-harmonised to that word: vowels follow the word's last vowel,
/// a leading `d`/`t` or `c`/`ç` follows its last sound, `dört` softens before
/// a vowel, and a stray `y` buffer after a consonant is dropped.
pub(crate) fn attach_suffix(out: &mut String, suffix: &str) {
    let Some(last_char) = out.chars().next_back() else {
        out.push_str(suffix);
        return;
    };
    let mut last_vowel = out.chars().rev().find(|&c| is_vowel(c)).unwrap_or('e');
    let mut suffix_chars = suffix.chars().peekable();
    let ends_in_consonant = !is_vowel(last_char);
    if ends_in_consonant
        && suffix_chars.peek() == Some(&'y')
        && suffix.chars().nth(1).is_some_and(is_vowel)
    {
        suffix_chars.next();
    }
    let starts_with_vowel = suffix_chars.peek().is_some_and(|&c| is_vowel(c));
    if starts_with_vowel && out.ends_with("dört") {
        out.pop();
        out.push('d');
    }
    let mut first = true;
    for c in suffix_chars {
        let lower = c.to_lowercase().next().unwrap_or(c);
        let spoken = if is_vowel(lower) {
            let v = harmonize(lower, last_vowel);
            last_vowel = v;
            v
        } else if first && matches!(lower, 'd' | 't') {
            if is_voiceless(last_char) { 't' } else { 'd' }
        } else if first && matches!(lower, 'c' | 'ç') {
            if is_voiceless(last_char) { 'ç' } else { 'c' }
        } else {
            lower
        };
        out.push(spoken);
        first = false;
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
            (0, "sıfır"),
            (10, "on"),
            (100, "yüz"),
            (1000, "bin"),
            (1990, "bin dokuz yüz doksan"),
            (1_250_000, "bir milyon iki yüz elli bin"),
            (201_000, "iki yüz bir bin"),
        ] {
            assert_eq!(say(cardinal, n), words);
        }
    }

    #[test]
    fn ordinals() {
        for (n, words) in [
            (1, "birinci"),
            (2, "ikinci"),
            (3, "üçüncü"),
            (4, "dördüncü"),
            (6, "altıncı"),
            (10, "onuncu"),
            (40, "kırkıncı"),
            (100, "yüzüncü"),
        ] {
            assert_eq!(say(ordinal, n), words);
        }
    }

    #[test]
    fn suffixes_follow_harmony_and_assimilation() {
        for (stem, suffix, spoken) in [
            ("üç", "te", "üçte"),
            ("üç", "de", "üçte"),
            ("beş", "i", "beşi"),
            ("doksan", "da", "doksanda"),
            ("iki", "de", "ikide"),
            ("dört", "ü", "dördü"),
            ("dört", "te", "dörtte"),
            ("altı", "ya", "altıya"),
            ("elli", "si", "ellisi"),
            ("on", "da", "onda"),
            ("beş", "yi", "beşi"),
            ("lira", "ye", "liraya"),
            ("otuz", "da", "otuzda"),
        ] {
            let mut out = stem.to_owned();
            attach_suffix(&mut out, suffix);
            assert_eq!(out, spoken, "{stem}'{suffix}");
        }
    }
}
