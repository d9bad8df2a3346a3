//! Character classes and the rules that decide whether a run of sentence
//! terminators ends a sentence.

use super::abbrev::{self, AbbrevKind};
use crate::Language;

/// Sentence terminators: `. ! ? …`.
pub(crate) fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…')
}

/// Clause marks: `, ; :` (a boundary only when whitespace follows).
pub(crate) fn is_clause_mark(c: char) -> bool {
    matches!(c, ',' | ';' | ':' | '،' | '؛')
}

/// Dashes that make a clause boundary when spaced (`a - b`, `a — b`).
pub(crate) fn is_dash(c: char) -> bool {
    matches!(c, '-' | '–' | '—')
}

/// Characters that close a sentence after its terminator: quotes, brackets
/// and markdown emphasis (`**Done.**`, `"Yes!"`, `(see above.)`).
pub(crate) fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '”' | '’' | '»' | ')' | ']' | '}' | '*' | '_' | '`'
    )
}

/// Bullet markers: a line holding only one of them is not a chunk.
pub(crate) fn is_bullet(line: &str) -> bool {
    matches!(line, "-" | "*" | "•" | "+" | "–" | "—" | "·")
}

/// A run of terminators followed by closers, starting at a terminator.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    /// Byte offset just after the run (terminators and closers).
    pub(crate) end: usize,
    /// Chars in the run.
    pub(crate) chars: usize,
    /// The run reaches the end of the text, so more of it may still come.
    pub(crate) open: bool,
    /// The run holds a `!` or `?`.
    pub(crate) strong: bool,
    /// Periods in the run, `…` counted as three.
    pub(crate) periods: usize,
}

/// Scans the run that starts at byte `start` of `text`.
pub(crate) fn scan_run(text: &str, start: usize) -> Run {
    let mut run = Run {
        end: start,
        chars: 0,
        open: true,
        strong: false,
        periods: 0,
    };
    let mut closing = false;
    for (i, c) in text[start..].char_indices() {
        let take = if !closing && is_terminator(c) {
            run.strong |= matches!(c, '!' | '?');
            run.periods += match c {
                '.' => 1,
                '…' => 3,
                _ => 0,
            };
            true
        } else if is_closer(c) {
            closing = true;
            true
        } else {
            false
        };
        if !take {
            run.end = start + i;
            run.open = false;
            return run;
        }
        run.chars += 1;
    }
    run.end = text.len();
    run
}

/// What the token before a period run is, as far as the sentence rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeriodKind {
    /// An ordinary word, or a run with `!`/`?`: always a sentence end.
    Plain,
    /// `...` or `…`: not a sentence end before a lowercase word.
    Ellipsis,
    /// A title abbreviation (`Dr.`): never a sentence end.
    Title,
    /// A general abbreviation (`etc.`): a sentence end only before a capital.
    General,
    /// A dotted acronym (`E.U.`, `N.Y.C.`, `e.g.`): never a sentence end.
    Acronym,
    /// A URL or e-mail address: a sentence end only before a capital or digit.
    Address,
    /// A number at the start of a line (`1. Buy`): a list marker, never an end.
    ListMarker,
    /// A number mid-line: a sentence end only before a capital (`3. sınıf`
    /// is an ordinal, `done now. 2. We left` ends at `2.`).
    Number,
}

impl PeriodKind {
    /// The decision when it does not depend on the next char.
    pub(crate) fn fixed(self) -> Option<bool> {
        match self {
            PeriodKind::Plain => Some(true),
            PeriodKind::Title | PeriodKind::Acronym | PeriodKind::ListMarker => Some(false),
            _ => None,
        }
    }

    /// Whether the run ends a sentence when `next` is the next non-space char.
    pub(crate) fn ends_before(self, next: char) -> bool {
        match self {
            PeriodKind::Ellipsis => !next.is_lowercase(),
            PeriodKind::General | PeriodKind::Number => next.is_uppercase(),
            PeriodKind::Address => next.is_uppercase() || next.is_ascii_digit(),
            other => other.fixed().unwrap_or(true),
        }
    }
}

/// Classifies the run given the token before it (`word`, leading brackets and
/// quotes already stripped) and whether that token starts a line.
pub(crate) fn classify(word: &str, run: &Run, line_start: bool, language: Language) -> PeriodKind {
    if run.strong {
        return PeriodKind::Plain;
    }
    if run.periods >= 2 {
        return PeriodKind::Ellipsis;
    }
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()) {
        return if line_start {
            PeriodKind::ListMarker
        } else {
            PeriodKind::Number
        };
    }
    if is_acronym(word) {
        return PeriodKind::Acronym;
    }
    if is_address(word) {
        return PeriodKind::Address;
    }
    match abbrev::lookup(word, language) {
        Some(AbbrevKind::Title) => PeriodKind::Title,
        Some(AbbrevKind::General) => PeriodKind::General,
        None => PeriodKind::Plain,
    }
}

/// `E.U`, `N.Y.C`, `e.g`: single letters joined by periods.
fn is_acronym(word: &str) -> bool {
    let mut parts = 0;
    for part in word.split('.') {
        let mut chars = part.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_alphabetic() => parts += 1,
            _ => return false,
        }
    }
    parts >= 2
}

/// A URL (`https://x.y`, `www.x.y`), an e-mail address or a bare domain
/// (`example.com`).
fn is_address(word: &str) -> bool {
    if word.contains("://") || word.starts_with("www.") || word.starts_with("WWW.") {
        return true;
    }
    if let Some(at) = word.find('@') {
        return at > 0 && word[at + 1..].contains('.');
    }
    match word.rsplit_once('.') {
        Some((host, tld)) => {
            !host.is_empty()
                && host
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric())
                && (2..=6).contains(&tld.len())
                && tld.bytes().all(|b| b.is_ascii_lowercase())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(word: &str, text: &str, line_start: bool) -> PeriodKind {
        classify(word, &scan_run(text, 0), line_start, Language::En)
    }

    #[test]
    fn runs_take_terminators_then_closers() {
        let run = scan_run("?!\"* x", 0);
        assert_eq!(
            (run.end, run.chars, run.open, run.strong),
            (4, 4, false, true)
        );
        assert!(scan_run("..", 0).open);
        assert_eq!(scan_run("…", 0).periods, 3);
    }

    #[test]
    fn tokens_are_classified() {
        assert_eq!(kind("E.U", ". ", false), PeriodKind::Acronym);
        assert_eq!(kind("e.g", ". ", false), PeriodKind::Acronym);
        assert_eq!(kind("example.com", ". ", false), PeriodKind::Address);
        assert_eq!(kind("a@b.io", ". ", false), PeriodKind::Address);
        assert_eq!(kind("3", ". ", true), PeriodKind::ListMarker);
        assert_eq!(kind("3", ". ", false), PeriodKind::Number);
        assert_eq!(kind("Dr", ". ", false), PeriodKind::Title);
        assert_eq!(kind("etc", ". ", false), PeriodKind::General);
        assert_eq!(kind("wait", "... ", false), PeriodKind::Ellipsis);
        assert_eq!(kind("Dr", "?", false), PeriodKind::Plain);
        assert_eq!(kind("done", ". ", false), PeriodKind::Plain);
    }

    #[test]
    fn decisions_follow_the_next_char() {
        assert!(!PeriodKind::Ellipsis.ends_before('w'));
        assert!(PeriodKind::Ellipsis.ends_before('W'));
        assert!(PeriodKind::Address.ends_before('2'));
        assert!(!PeriodKind::Address.ends_before('t'));
        assert!(!PeriodKind::Number.ends_before('s'));
        assert!(PeriodKind::Number.ends_before('Ş'));
        assert!(PeriodKind::Plain.ends_before('x'));
    }
}
