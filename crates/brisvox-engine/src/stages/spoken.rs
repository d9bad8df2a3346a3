//! What the LLM stage's recent answers said, and what of each the caller heard.
//!
//! Plain bookkeeping for the LLM stage: each answer's text as sent to the
//! segmenter, per epoch; when an answer is interrupted the playout book's cut
//! ([`crate::playout::Heard`]) says how many of its words were heard, and the
//! conversation then remembers only those ([`Spoken::truncate`]); a resumed
//! false interruption speaks the rest ([`Spoken::rest`]) and restores the
//! whole answer in the conversation.

use std::collections::VecDeque;
use std::sync::Arc;

use brisvox_core::Epoch;
use brisvox_providers::{Message, Role};

/// Answers remembered.
const ANSWERS: usize = 4;

#[derive(Debug)]
struct Answer {
    epoch: Epoch,
    text: String,
    /// Words the caller heard, when the answer was cut.
    heard_words: Option<usize>,
}

/// Recent answers and what was heard of them.
#[derive(Debug, Default)]
pub(crate) struct Spoken {
    answers: VecDeque<Answer>,
}

impl Spoken {
    /// `text` was said (sent to the segmenter) as part of `epoch`'s answer.
    pub(crate) fn said(&mut self, epoch: Epoch, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        match self.answers.back_mut() {
            Some(a) if a.epoch == epoch => {
                if !a.text.is_empty() {
                    a.text.push(' ');
                }
                a.text.push_str(text.trim());
            }
            _ => {
                if self.answers.len() == ANSWERS {
                    self.answers.pop_front();
                }
                self.answers.push_back(Answer {
                    epoch,
                    text: text.trim().to_owned(),
                    heard_words: None,
                });
            }
        }
    }

    fn answer(&self, epoch: Epoch) -> Option<&Answer> {
        self.answers.iter().find(|a| a.epoch == epoch)
    }

    /// The caller heard the first `words` words of `epoch`'s answer: the
    /// conversation keeps only those (an answer nothing of which was heard
    /// leaves the conversation). Returns false when the answer is unknown.
    pub(crate) fn truncate(
        &mut self,
        history: &mut Vec<Message>,
        epoch: Epoch,
        words: usize,
    ) -> bool {
        let Some(a) = self.answers.iter_mut().find(|a| a.epoch == epoch) else {
            return false;
        };
        a.heard_words = Some(words);
        let heard = first_words(&a.text, words);
        replace_answer(history, &a.text, &heard);
        true
    }

    /// The words of `epoch`'s answer the caller did not hear (all of it when
    /// no cut is known), and the conversation restored to the whole answer.
    pub(crate) fn rest(&mut self, history: &mut Vec<Message>, epoch: Epoch) -> Option<String> {
        let a = self.answer(epoch)?;
        let heard = a.heard_words.unwrap_or(0);
        let rest: Vec<&str> = a.text.split_whitespace().skip(heard).collect();
        let shown = first_words(&a.text, heard);
        let whole = a.text.clone();
        replace_answer(history, &shown, &whole);
        Some(rest.join(" "))
    }
}

fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Replaces the newest assistant message whose text is `from` (spacing aside)
/// with `to`, or removes it when `to` is empty. An empty `from` (an answer
/// nothing of which was heard, removed before) adds `to` as a new message.
fn replace_answer(history: &mut Vec<Message>, from: &str, to: &str) {
    if from.trim().is_empty() {
        if !to.trim().is_empty() {
            history.push(Message::assistant(to));
        }
        return;
    }
    let same = |m: &Message| {
        m.role == Role::Assistant
            && m.tool_calls.is_empty()
            && m.text.split_whitespace().eq(from.split_whitespace())
    };
    match history.iter().rposition(same) {
        Some(i) if to.trim().is_empty() => {
            history.remove(i);
        }
        Some(i) => history[i].text = Arc::from(to),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_answer_is_remembered_as_heard_and_restored_by_a_resume() {
        let mut s = Spoken::default();
        let mut history = vec![
            Message::user("book a table"),
            Message::assistant("Sure, for how many people tonight?"),
        ];
        s.said(Epoch(1), "Sure, for how many people tonight?");
        assert!(s.truncate(&mut history, Epoch(1), 3));
        assert_eq!(&*history[1].text, "Sure, for how");
        let rest = s.rest(&mut history, Epoch(1)).unwrap();
        assert_eq!(rest, "many people tonight?");
        assert_eq!(&*history[1].text, "Sure, for how many people tonight?");
    }

    #[test]
    fn an_answer_nothing_of_which_was_heard_leaves_the_conversation() {
        let mut s = Spoken::default();
        let mut history = vec![Message::user("hi"), Message::assistant("Hello there.")];
        s.said(Epoch(2), "Hello");
        s.said(Epoch(2), "there.");
        s.truncate(&mut history, Epoch(2), 0);
        assert_eq!(history.len(), 1);
        assert!(!s.truncate(&mut history, Epoch(9), 1), "unknown epoch");
        assert_eq!(
            s.rest(&mut history, Epoch(2)).as_deref(),
            Some("Hello there.")
        );
        assert_eq!(&*history[1].text, "Hello there.", "restored for the resume");
    }
}
