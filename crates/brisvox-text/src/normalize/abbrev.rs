//! Abbreviations spoken in full (`Dr.` -> `Doctor`, `vb.` -> `ve benzeri`).

use crate::Language;

/// When an abbreviation is expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// Always.
    Always,
    /// Only before a number (`No. 5`).
    BeforeNumber,
    /// Always; its period may also end the sentence (`etc.`), so it is kept
    /// when the text ends or a capital follows.
    MayEndSentence,
}

/// One table row: the written form (without its final period), the words and
/// when to expand it.
type Row = (&'static str, &'static str, When);

const EN: &[Row] = &[
    ("dr", "Doctor", When::Always),
    ("mr", "Mister", When::Always),
    ("mrs", "Missus", When::Always),
    ("ms", "Miz", When::Always),
    ("prof", "Professor", When::Always),
    ("jr", "Junior", When::Always),
    ("sr", "Senior", When::Always),
    ("mt", "Mount", When::Always),
    ("ave", "Avenue", When::Always),
    ("vs", "versus", When::Always),
    ("approx", "approximately", When::Always),
    ("dept", "department", When::Always),
    ("e.g", "for example", When::Always),
    ("i.e", "that is", When::Always),
    ("no", "number", When::BeforeNumber),
    ("etc", "et cetera", When::MayEndSentence),
    ("inc", "Incorporated", When::MayEndSentence),
    ("ltd", "Limited", When::MayEndSentence),
    ("jan", "January", When::Always),
    ("feb", "February", When::Always),
    ("aug", "August", When::Always),
    ("sept", "September", When::Always),
    ("oct", "October", When::Always),
    ("nov", "November", When::Always),
    ("dec", "December", When::Always),
];

const TR: &[Row] = &[
    ("dr", "Doktor", When::Always),
    ("prof", "Profesör", When::Always),
    ("doç", "Doçent", When::Always),
    ("yrd", "Yardımcı", When::Always),
    ("sn", "Sayın", When::Always),
    ("av", "Avukat", When::Always),
    ("müh", "Mühendis", When::Always),
    ("bkz", "bakınız", When::Always),
    ("örn", "örneğin", When::Always),
    ("cad", "Caddesi", When::Always),
    ("sok", "Sokağı", When::Always),
    ("mah", "Mahallesi", When::Always),
    ("apt", "Apartmanı", When::Always),
    ("tel", "telefon", When::Always),
    ("yy", "yüzyıl", When::Always),
    ("no", "numara", When::BeforeNumber),
    ("vb", "ve benzeri", When::MayEndSentence),
    ("vs", "vesaire", When::MayEndSentence),
    ("vd", "ve diğerleri", When::MayEndSentence),
    ("ltd", "Limited", When::MayEndSentence),
    ("şti", "Şirketi", When::MayEndSentence),
];

fn fold(c: char) -> char {
    match c {
        'I' | 'İ' | 'ı' => 'i',
        _ => c.to_lowercase().next().unwrap_or(c),
    }
}

fn folded_eq(word: &str, entry: &str) -> bool {
    word.chars().map(fold).eq(entry.chars().map(fold))
}

/// Looks up `word` (without its final period).
pub(crate) fn lookup(word: &str, language: Language) -> Option<(&'static str, When)> {
    if word.len() > 12 {
        return None;
    }
    let table = match language {
        Language::En => EN,
        Language::Tr => TR,
    };
    table
        .iter()
        .find(|row| folded_eq(word, row.0))
        .map(|&(_, words, when)| (words, when))
}

/// `St.` in English: `Saint` before a name, `Street` after one.
pub(crate) fn saint_or_street(next: Option<char>) -> &'static str {
    if next.is_some_and(char::is_uppercase) {
        "Saint"
    } else {
        "Street"
    }
}

/// Writes `words` with the case of the written form's first letter.
pub(crate) fn write_cased(words: &str, capital: bool, out: &mut String) {
    let mut chars = words.chars();
    let Some(first) = chars.next() else { return };
    if capital {
        out.extend(first.to_uppercase());
    } else {
        out.extend(first.to_lowercase());
    }
    out.push_str(chars.as_str());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_folds_case_and_the_turkish_i() {
        assert_eq!(lookup("DR", Language::En).map(|r| r.0), Some("Doctor"));
        assert_eq!(lookup("DOÇ", Language::Tr).map(|r| r.0), Some("Doçent"));
        assert_eq!(lookup("ŞTİ", Language::Tr).map(|r| r.0), Some("Şirketi"));
        assert_eq!(lookup("vb", Language::En), None);
    }
}
