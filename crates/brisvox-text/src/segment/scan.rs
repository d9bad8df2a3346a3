//! The resumable scan that finds where the current chunk ends.
//!
//! The pending text always starts at the beginning of the chunk being built
//! (leading whitespace is dropped). The scan walks it once, char by char, and
//! remembers how far it got, so each push only looks at new text plus the
//! one candidate that waited for its lookahead. Everything before
//! [`Scan::pos`] is decided: it holds no cut. A candidate whose decision needs
//! text that has not arrived stops the scan ([`Flow::Wait`]) and is looked at
//! again on the next push; that is what makes the output independent of how
//! the deltas are split.

use super::boundary::{self, PeriodKind, Run};
use super::grapheme;
use crate::Language;

/// What the scan needs to know about the chunk being built.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// Over this many chars the chunk is cut by the fallback rules.
    pub(crate) max_chars: usize,
    /// `Some(min words)` while the first chunk of the stream is being built.
    pub(crate) first_min_words: Option<usize>,
    /// Whether the pending text starts at the beginning of a line.
    pub(crate) line_start: bool,
    /// Selects the abbreviation tables.
    pub(crate) language: Language,
}

impl Context {
    /// A token without whitespace is kept whole up to this many chars.
    fn hard_chars(&self) -> usize {
        4 * self.max_chars
    }
}

/// Scan progress over the pending text of one chunk.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scan {
    /// Byte offset of the first undecided char.
    pos: usize,
    /// Chars before `pos`.
    chars: usize,
    /// End of the last clause boundary whose chunk fits the limit.
    last_clause: Option<usize>,
    /// Offset of the last usable whitespace whose chunk fits the limit.
    last_space: Option<usize>,
    /// The chunk is over the limit with no cut inside it: the next usable
    /// whitespace cuts.
    over_limit: bool,
    /// The whitespace being scanned follows a declined period.
    after_declined: bool,
}

/// The outcome of looking at the char at the scan position.
enum Flow {
    /// The chunk ends at this byte offset.
    Cut(usize),
    /// The decision needs text that has not arrived.
    Wait,
    /// Nothing here: move on by this many bytes and chars.
    Skip(usize, usize),
}

impl Scan {
    /// Finds the end of the current chunk in `text`, or `None` when the text
    /// so far holds no decided cut.
    pub(crate) fn next_cut(&mut self, text: &str, ctx: &Context) -> Option<usize> {
        while self.pos < text.len() {
            if self.chars >= ctx.hard_chars() {
                return Some(grapheme::hard_cut(text, self.pos));
            }
            if self.chars > ctx.max_chars && !self.over_limit {
                if let Some(cut) = self.last_clause.or(self.last_space) {
                    return Some(cut);
                }
                self.over_limit = true;
            }
            match self.step(text, ctx) {
                Flow::Cut(at) => return Some(at),
                Flow::Wait => return None,
                Flow::Skip(bytes, chars) => {
                    self.pos += bytes;
                    self.chars += chars;
                }
            }
        }
        None
    }

    fn step(&mut self, text: &str, ctx: &Context) -> Flow {
        // The loop only calls this with `pos` on a char of `text`.
        let c = text[self.pos..].chars().next().unwrap_or(' ');
        if c.is_whitespace() {
            return self.on_space(text, c, ctx);
        }
        self.after_declined = false;
        if boundary::is_terminator(c) {
            self.on_terminator(text, ctx)
        } else if boundary::is_clause_mark(c) || (boundary::is_dash(c) && self.spaced_before(text))
        {
            self.on_clause_mark(text, ctx, c.len_utf8())
        } else {
            Flow::Skip(c.len_utf8(), 1)
        }
    }

    fn on_space(&mut self, text: &str, c: char, ctx: &Context) -> Flow {
        if c == '\n' && newline_ends_chunk(&text[..self.pos]) {
            return Flow::Cut(self.pos);
        }
        if !self.after_declined {
            if self.chars <= ctx.max_chars {
                self.last_space = Some(self.pos);
            } else if self.over_limit {
                return Flow::Cut(self.pos);
            }
        }
        Flow::Skip(c.len_utf8(), 1)
    }

    fn on_terminator(&mut self, text: &str, ctx: &Context) -> Flow {
        let run = boundary::scan_run(text, self.pos);
        let beyond_hard = self.chars + run.chars > ctx.hard_chars();
        if beyond_hard {
            // Its end would lie past the hard limit: not a candidate.
            return Flow::Skip(text[self.pos..].chars().next().map_or(1, char::len_utf8), 1);
        }
        if run.open {
            return Flow::Wait;
        }
        if !text[run.end..].starts_with(char::is_whitespace) {
            return Flow::Skip(run.end - self.pos, run.chars);
        }
        let kind = self.period_kind(text, &run, ctx);
        let decision = match next_non_space(&text[run.end..]) {
            Some(next) => Some(kind.ends_before(next)),
            None if self.over_limit => kind.fixed(),
            None => None,
        };
        match decision {
            None => Flow::Wait,
            Some(false) => {
                self.after_declined = true;
                Flow::Skip(run.end - self.pos, run.chars)
            }
            Some(true) => self.candidate(text, ctx, run.end, run.chars),
        }
    }

    fn on_clause_mark(&mut self, text: &str, ctx: &Context, mark_len: usize) -> Flow {
        let mut end = self.pos + mark_len;
        let mut chars = 1;
        for c in text[end..].chars().take_while(|&c| boundary::is_closer(c)) {
            end += c.len_utf8();
            chars += 1;
        }
        if self.chars + chars > ctx.hard_chars() {
            return Flow::Skip(mark_len, 1);
        }
        let after = &text[end..];
        match after.chars().next() {
            None => return Flow::Wait,
            Some(c) if !c.is_whitespace() => return Flow::Skip(end - self.pos, chars),
            Some(_) => {}
        }
        let space = after
            .find(|c: char| !c.is_whitespace())
            .map_or(after, |i| &after[..i]);
        if space.contains('\n') || self.over_limit {
            return Flow::Cut(end);
        }
        if space.len() == after.len() {
            return Flow::Wait;
        }
        self.candidate(text, ctx, end, chars)
    }

    /// A decided boundary ending at `end`: a cut when it may end this chunk,
    /// otherwise remembered as a fallback cut.
    fn candidate(&mut self, text: &str, ctx: &Context, end: usize, chars: usize) -> Flow {
        let sentence_end = boundary::is_terminator(text[self.pos..].chars().next().unwrap_or(' '));
        match ctx.first_min_words {
            Some(min) if count_words(&text[..end]) >= min => return Flow::Cut(end),
            None if sentence_end => return Flow::Cut(end),
            _ => {}
        }
        if self.chars + chars <= ctx.max_chars {
            self.last_clause = Some(end);
        }
        Flow::Skip(end - self.pos, chars)
    }

    /// Whether the dash at the scan position has a space before it and text
    /// before that on the same line.
    fn spaced_before(&self, text: &str) -> bool {
        let before = &text[..self.pos];
        if !before.ends_with([' ', '\t', '\u{a0}']) {
            return false;
        }
        before
            .trim_end_matches([' ', '\t', '\u{a0}'])
            .chars()
            .next_back()
            .is_some_and(|c| c != '\n')
    }

    fn period_kind(&self, text: &str, run: &Run, ctx: &Context) -> PeriodKind {
        let before = &text[..self.pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = before[start..].trim_start_matches(|c: char| !c.is_alphanumeric());
        boundary::classify(
            word,
            run,
            starts_line(text, start, ctx.line_start),
            ctx.language,
        )
    }
}

/// The first char after the leading whitespace of `text`.
fn next_non_space(text: &str) -> Option<char> {
    text.chars().find(|c| !c.is_whitespace())
}

/// Whether the token at byte `start` is the first one on its line.
fn starts_line(text: &str, start: usize, text_starts_line: bool) -> bool {
    match text[..start]
        .trim_end_matches(|c: char| c.is_whitespace() && c != '\n')
        .chars()
        .next_back()
    {
        None => text_starts_line,
        Some(c) => c == '\n',
    }
}

/// Whether a newline after `line_text` (the pending text before it) ends the
/// chunk: the line holds text, is not a bare bullet and does not end in a
/// terminator (those are left to the period rules).
fn newline_ends_chunk(before: &str) -> bool {
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before[line_start..].trim();
    if line.is_empty() || boundary::is_bullet(line) {
        return false;
    }
    let body = line.trim_end_matches(boundary::is_closer);
    !body.ends_with(boundary::is_terminator)
}

/// Words in `text`: whitespace-separated tokens with a letter or digit.
pub(crate) fn count_words(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_rule_skips_bullets_empty_lines_and_terminators() {
        assert!(newline_ends_chunk("1. Buy milk"));
        assert!(newline_ends_chunk("- eggs -"));
        assert!(!newline_ends_chunk("a\n- "));
        assert!(!newline_ends_chunk("a\n  "));
        assert!(!newline_ends_chunk("1."));
        assert!(!newline_ends_chunk("**Done.**"));
    }

    #[test]
    fn words_need_a_letter_or_digit() {
        assert_eq!(count_words("- Sure, here"), 2);
    }
}
