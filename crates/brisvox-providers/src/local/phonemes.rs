//! Phonemes for Piper voices from the `espeak-ng` program, the way Piper
//! makes them.
//!
//! Piper (piper-phonemize) asks the espeak-ng library for one clause at a time
//! with the punctuation that ended it, writes that punctuation back (`.` `?`
//! `!` end a sentence; `,` `:` `;` are followed by a space) and synthesises
//! each sentence on its own. The `espeak-ng` program (a separate process, so
//! no GPL code is linked into brisvox) prints IPA (`-q --ipa`) one line per
//! clause but drops the punctuation, so here the text is first cut into
//! clauses by [`split_clauses`] (espeak-ng's rule: `.,?!:;` followed by a space
//! or the end; a period followed by a lowercase word or a digit does not end
//! anything), each clause is phonemised by its own process (all of a chunk's
//! clauses at once), and [`sentences`] puts the punctuation back.
//!
//! Checked against piper-phonemize goldens
//! (`tests/piper_phonemes_match_piper_phonemize.rs`). Known difference: where
//! espeak-ng cuts a clause that has no punctuation Piper maps (an ellipsis),
//! Piper joins the two parts with nothing and we join them with a space (a word
//! gap in the audio; harmless).

use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncWriteExt;

use super::tts::{ESPEAK_PACKAGE, LocalTtsError};

/// What ended a clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClauseEnd {
    /// `.`: ends the sentence.
    Period,
    /// `?`: ends the sentence.
    Question,
    /// `!`: ends the sentence.
    Exclamation,
    /// `,`.
    Comma,
    /// `:`.
    Colon,
    /// `;`.
    Semicolon,
    /// The end of the text, without punctuation: ends the sentence.
    None,
}

impl ClauseEnd {
    fn of(c: char) -> Option<ClauseEnd> {
        Some(match c {
            '.' => ClauseEnd::Period,
            '?' => ClauseEnd::Question,
            '!' => ClauseEnd::Exclamation,
            ',' => ClauseEnd::Comma,
            ':' => ClauseEnd::Colon,
            ';' => ClauseEnd::Semicolon,
            _ => return None,
        })
    }

    /// What Piper writes after the clause's phonemes.
    pub fn piper_text(self) -> &'static str {
        match self {
            ClauseEnd::Period => ".",
            ClauseEnd::Question => "?",
            ClauseEnd::Exclamation => "!",
            ClauseEnd::Comma => ", ",
            ClauseEnd::Colon => ": ",
            ClauseEnd::Semicolon => "; ",
            ClauseEnd::None => "",
        }
    }

    /// Whether the sentence ends here.
    pub fn ends_sentence(self) -> bool {
        matches!(
            self,
            ClauseEnd::Period | ClauseEnd::Question | ClauseEnd::Exclamation | ClauseEnd::None
        )
    }
}

/// One clause of the text: its words (with the punctuation) and its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// The clause's text, trimmed, punctuation included.
    pub text: String,
    /// What ended it.
    pub end: ClauseEnd,
}

/// Cuts `text` into clauses at `.,?!:;` followed by whitespace, a closing
/// quote or bracket, or the end. A period does not end a clause when it
/// follows another period (an ellipsis) or when the next word starts with a
/// lowercase letter or a digit (`e.g. this`, `3. 5`). Clauses with no letters
/// or digits are dropped.
pub fn split_clauses(text: &str) -> Vec<Clause> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0;
    for (k, &(_, c)) in chars.iter().enumerate() {
        let Some(end) = ClauseEnd::of(c) else {
            continue;
        };
        let mut next = k + 1;
        while chars
            .get(next)
            .is_some_and(|&(_, n)| matches!(n, '"' | '\'' | ')' | ']' | '”' | '’'))
        {
            next += 1;
        }
        let boundary = chars.get(next).is_none_or(|&(_, n)| n.is_whitespace());
        if !boundary {
            continue;
        }
        if c == '.' {
            let after_dot = k > 0 && chars[k - 1].1 == '.';
            let next_word = chars[next..]
                .iter()
                .map(|&(_, n)| n)
                .find(|n| !n.is_whitespace());
            if after_dot || next_word.is_some_and(|n| n.is_lowercase() || n.is_ascii_digit()) {
                continue;
            }
        }
        let stop = chars.get(next).map_or(text.len(), |&(j, _)| j);
        push_clause(&mut out, &text[start..stop], end);
        start = stop;
    }
    push_clause(&mut out, &text[start..], ClauseEnd::None);
    out
}

fn push_clause(out: &mut Vec<Clause>, text: &str, end: ClauseEnd) {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().any(char::is_alphanumeric) {
        out.push(Clause { text, end });
    }
}

/// Piper's sentences from clauses and their phonemes (one string per clause,
/// as [`phonemize_clause`] gives): each clause's phonemes followed by its
/// punctuation, a new sentence after `.`, `?`, `!`.
pub fn sentences(clauses: &[Clause], phonemes: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for (clause, ph) in clauses.iter().zip(phonemes) {
        current.push_str(ph);
        current.push_str(clause.end.piper_text());
        if clause.end.ends_sentence() {
            let done = std::mem::take(&mut current);
            if !done.trim().is_empty() {
                out.push(done);
            }
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim_end().to_owned());
    }
    out
}

/// The IPA of one clause from one `espeak-ng -q --ipa` process (the text on
/// stdin): espeak-ng's lines joined by a space, language-switch marks such as
/// `(fr)` removed.
///
/// # Cancel safety
///
/// Dropping the future kills the process.
pub async fn phonemize_clause(
    program: &Path,
    voice: &str,
    clause: &str,
) -> Result<String, LocalTtsError> {
    let name = program.display().to_string();
    let failed = |reason: String| LocalTtsError::ProgramFailed {
        program: name.clone(),
        reason,
    };
    let mut child = tokio::process::Command::new(program)
        .args(["-q", "--ipa", "-b", "1", "-v", voice])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => LocalTtsError::ProgramMissing {
                program: name.clone(),
                package: ESPEAK_PACKAGE,
            },
            _ => failed(e.to_string()),
        })?;
    let stdin = child.stdin.take();
    let input = clause.to_owned();
    let write = async move {
        if let Some(mut stdin) = stdin {
            // A failed write shows as the program's failure below.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
    };
    let (_, output) = tokio::join!(write, child.wait_with_output());
    let output = output.map_err(|e| failed(e.to_string()))?;
    if !output.status.success() {
        return Err(failed(format!("exited with {}", output.status)));
    }
    let text = String::from_utf8(output.stdout).map_err(|_| LocalTtsError::BadAudio {
        program: name.clone(),
        reason: "phonemes that are not UTF-8".to_owned(),
    })?;
    Ok(clean_ipa(&text))
}

/// espeak-ng's IPA lines as one clause: lines joined by a space, `(xx)`
/// language-switch marks removed, whitespace collapsed.
pub fn clean_ipa(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0u32;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            _ => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Piper's sentences for `text`: [`split_clauses`], every clause phonemised by
/// its own process (concurrently), then [`sentences`].
///
/// # Cancel safety
///
/// Dropping the future kills every process.
pub async fn phonemize(
    program: &Path,
    voice: &str,
    text: &str,
) -> Result<Vec<String>, LocalTtsError> {
    let clauses = split_clauses(text);
    let runs = clauses
        .iter()
        .map(|c| phonemize_clause(program, voice, &c.text));
    let phonemes = futures_util::future::try_join_all(runs).await?;
    Ok(sentences(&clauses, &phonemes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(text: &str) -> Vec<(String, ClauseEnd)> {
        split_clauses(text)
            .into_iter()
            .map(|c| (c.text, c.end))
            .collect()
    }

    #[test]
    fn clauses_end_at_punctuation_before_a_space_or_the_end() {
        use ClauseEnd::*;
        let got = ends("Hello, world! How are you today?");
        let want = [
            ("Hello,", Comma),
            ("world!", Exclamation),
            ("How are you today?", Question),
        ];
        assert_eq!(got, want.map(|(t, e)| (t.to_owned(), e)));
        assert_eq!(
            ends("first: a; b"),
            [
                ("first:".into(), Colon),
                ("a;".into(), Semicolon),
                ("b".into(), None)
            ]
        );
    }

    #[test]
    fn numbers_abbreviations_before_lowercase_and_ellipses_do_not_cut() {
        use ClauseEnd::*;
        assert_eq!(
            ends("It costs 3.50 dollars."),
            [("It costs 3.50 dollars.".into(), Period)]
        );
        assert_eq!(
            ends("Tea, e.g. green."),
            [("Tea,".into(), Comma), ("e.g. green.".into(), Period)]
        );
        assert_eq!(
            ends("Well... I'm not sure."),
            [("Well... I'm not sure.".into(), Period)]
        );
        assert_eq!(
            ends("Dr. Smith"),
            [("Dr.".into(), Period), ("Smith".into(), None)]
        );
        assert_eq!(
            ends("He said \"go.\" Then"),
            [("He said \"go.\"".into(), Period), ("Then".into(), None)]
        );
    }

    #[test]
    fn punctuation_only_and_empty_text_give_no_clause() {
        assert!(split_clauses("").is_empty());
        assert!(split_clauses(" ... !? ").is_empty());
    }

    #[test]
    fn sentences_put_piper_punctuation_back() {
        let clauses = split_clauses("Hello, world! How are you today? Fine");
        let ph = ["a", "b", "c d", "e"].map(String::from);
        assert_eq!(sentences(&clauses, &ph), ["a, b!", "c d?", "e"]);
        let clauses = split_clauses("first: a; b.");
        assert_eq!(
            sentences(&clauses, &["x", "y", "z"].map(String::from)),
            ["x: y; z."]
        );
    }

    #[test]
    fn ipa_lines_are_joined_and_language_marks_removed() {
        assert_eq!(clean_ipa(" həlˈoʊ\nwˈɜːld\n"), "həlˈoʊ wˈɜːld");
        assert_eq!(clean_ipa("kafˈeɪ (fr)kafe(en) ɪz\n"), "kafˈeɪ kafe ɪz");
    }
}
