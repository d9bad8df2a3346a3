//! Abbreviation tables for the period rules, per language.
//!
//! Two kinds: a *title* (`Dr.`, `Prof.`, `Sn.`) is never followed by a
//! sentence end, so its period is always declined; a *general* abbreviation
//! (`etc.`, `vb.`, `No.`) often ends a sentence, so its period is a sentence
//! end only before an uppercase letter. Matching is case-insensitive with
//! the Turkish dotted and dotless i folded together (`DR`, `Dr`, `dr` and
//! `Doç`, `DOÇ`; `İng`, `ing`).

use crate::Language;

/// Titles and address words: the period after them is never a sentence end.
const TITLES_EN: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "st", "sr", "jr", "vs", "rev", "hon", "gen", "col", "capt",
    "lt", "sgt", "gov", "sen", "rep", "mt", "ave", "blvd", "fig", "vol", "ch", "pp", "dept",
];

/// Abbreviations that may end a sentence (sentence end only before a capital).
const GENERAL_EN: &[&str] = &[
    "etc", "approx", "inc", "ltd", "co", "corp", "no", "est", "min", "max", "jan", "feb", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tue", "wed", "thu", "fri",
];

const TITLES_TR: &[&str] = &[
    "dr", "prof", "doç", "yrd", "sn", "av", "müh", "mah", "cad", "sok", "bkz", "örn", "bl", "apt",
    "gn", "org", "alb", "yzb", "ecz", "hz", "st", "ing",
];

const GENERAL_TR: &[&str] = &[
    "vb", "vs", "vd", "yy", "no", "tel", "ltd", "şti", "sy", "s", "min", "maks", "yak", "ck",
];

/// How the period after a token is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AbbrevKind {
    /// Never a sentence end.
    Title,
    /// A sentence end only before an uppercase letter.
    General,
}

/// Folds a char for comparison: lowercase, with `I`, `İ` and `ı` all `i`.
fn fold(c: char) -> char {
    match c {
        'I' | 'İ' | 'ı' => 'i',
        _ => c.to_lowercase().next().unwrap_or(c),
    }
}

fn folded_eq(word: &str, entry: &str) -> bool {
    let mut a = word.chars().map(fold);
    let mut b = entry.chars().map(fold);
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x == y => {}
            _ => return false,
        }
    }
}

/// Looks `word` (the token before the period, without the period) up in the
/// tables of `language`.
pub(crate) fn lookup(word: &str, language: Language) -> Option<AbbrevKind> {
    if word.is_empty() || word.chars().count() > 6 {
        return None;
    }
    let (titles, general) = match language {
        Language::En => (TITLES_EN, GENERAL_EN),
        Language::Tr => (TITLES_TR, GENERAL_TR),
    };
    if titles.iter().any(|e| folded_eq(word, e)) {
        Some(AbbrevKind::Title)
    } else if general.iter().any(|e| folded_eq(word, e)) {
        Some(AbbrevKind::General)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_is_case_insensitive_and_folds_the_turkish_i() {
        assert_eq!(lookup("DR", Language::En), Some(AbbrevKind::Title));
        assert_eq!(lookup("DOÇ", Language::Tr), Some(AbbrevKind::Title));
        assert_eq!(lookup("İNG", Language::Tr), Some(AbbrevKind::Title));
        assert_eq!(lookup("ıng", Language::Tr), Some(AbbrevKind::Title));
        assert_eq!(lookup("Vb", Language::Tr), Some(AbbrevKind::General));
        assert_eq!(lookup("vb", Language::En), None);
        assert_eq!(lookup("Doctor", Language::En), None);
    }
}
