//! The local rules agent: an honest stand-in for a language model.
//!
//! It echoes the caller's last message ("You said: ..."), answers a few
//! intents (a greeting, the time, what it is, thanks, goodbye) and otherwise
//! says it is a local demo without a language model. The answer is decided at
//! once ([`reply`], a pure function) and streamed one word per
//! [`LlmEvent::TextDelta`]: the first after [`LocalLlmConfig::first_token_ms`],
//! then one every [`LocalLlmConfig::word_interval_ms`], on tokio time, so the
//! engine's segmenter and barge-in see a stream like a real model's. Dropping
//! or cancelling the stream stops it at once: the words are timers, nothing
//! runs in the background.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use crate::{LlmEvent, LlmProvider, LlmRequest, LlmStream};

/// Words of the caller's message echoed at most; longer messages are cut with "…".
pub const MAX_ECHO_WORDS: usize = 24;

/// Timing of the local agent's stream.
#[derive(Clone)]
pub struct LocalLlmConfig {
    /// From the request to the first word, in ms.
    pub first_token_ms: u64,
    /// Between words, in ms.
    pub word_interval_ms: u64,
    /// The wall clock, for "what time is it" (UTC).
    pub clock: Arc<dyn Fn() -> SystemTime + Send + Sync>,
}

impl std::fmt::Debug for LocalLlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLlmConfig")
            .field("first_token_ms", &self.first_token_ms)
            .field("word_interval_ms", &self.word_interval_ms)
            .finish_non_exhaustive()
    }
}

impl Default for LocalLlmConfig {
    /// First word at 150 ms, then a word every 25 ms; the system clock.
    fn default() -> Self {
        LocalLlmConfig {
            first_token_ms: 150,
            word_interval_ms: 25,
            clock: Arc::new(SystemTime::now),
        }
    }
}

/// The built-in rules agent. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct LocalRulesLlm {
    config: LocalLlmConfig,
}

impl LocalRulesLlm {
    /// An agent with `config`.
    pub fn new(config: LocalLlmConfig) -> Self {
        LocalRulesLlm { config }
    }
}

/// What the caller asked for, as far as the rules can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Intent {
    /// Hello, hi, good morning...
    Greeting,
    /// What time is it?
    Time,
    /// Who or what are you?
    Identity,
    /// Thank you.
    Thanks,
    /// Goodbye.
    Goodbye,
}

/// The intents in `text`, in a fixed order (greeting first, goodbye last).
pub fn detect_intents(text: &str) -> Vec<Intent> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    let phrase = |p: &str| format!(" {} ", words.join(" ")).contains(&format!(" {p} "));
    let mut intents = Vec::new();
    if ["hello", "hi", "hey", "hiya", "howdy"]
        .iter()
        .any(|w| has(w))
        || ["good morning", "good afternoon", "good evening"]
            .iter()
            .any(|p| phrase(p))
    {
        intents.push(Intent::Greeting);
    }
    if (has("time") && !phrase("thank you for your time")) || has("clock") {
        intents.push(Intent::Time);
    }
    if [
        "who are you",
        "what are you",
        "your name",
        "are you a",
        "are you real",
    ]
    .iter()
    .any(|p| phrase(p))
    {
        intents.push(Intent::Identity);
    }
    if has("thanks") || has("thank") || has("cheers") {
        intents.push(Intent::Thanks);
    }
    if ["bye", "goodbye", "farewell"].iter().any(|w| has(w))
        || ["see you", "good night"].iter().any(|p| phrase(p))
    {
        intents.push(Intent::Goodbye);
    }
    intents
}

/// The answer to the last user message of `request`, at wall-clock time `now`.
pub fn reply(request: &LlmRequest, now: SystemTime) -> String {
    let heard = request.last_user_text().map(str::trim).unwrap_or_default();
    if heard.is_empty() {
        return "I did not catch that. I am a local demo without a language model: \
                say hello, ask me the time, or ask what I am."
            .to_owned();
    }
    let mut out = format!("You said: {}.", echo(heard));
    let intents = detect_intents(heard);
    for intent in &intents {
        out.push(' ');
        out.push_str(&answer(*intent, now));
    }
    if intents.is_empty() {
        out.push_str(
            " I am a local demo without a language model, so I can only repeat it. \
             Ask me the time, or say goodbye.",
        );
    }
    out
}

/// The caller's words, cut to [`MAX_ECHO_WORDS`], without a final full stop.
fn echo(heard: &str) -> String {
    let words: Vec<&str> = heard.split_whitespace().collect();
    let mut text = words[..words.len().min(MAX_ECHO_WORDS)].join(" ");
    if words.len() > MAX_ECHO_WORDS {
        text.push('…');
    }
    text.trim_end_matches(['.', '!', '?']).to_owned()
}

fn answer(intent: Intent, now: SystemTime) -> String {
    match intent {
        Intent::Greeting => "Hello! I am a local demo agent without a language model.".to_owned(),
        Intent::Time => {
            let secs = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
            let (h, m) = ((secs / 3600) % 24, (secs / 60) % 60);
            format!("It is {h:02}:{m:02} UTC on this server.")
        }
        Intent::Identity => "I am the brisvox local demo agent: a few rules written in Rust, \
                             not a language model. I repeat what I hear and answer a greeting, \
                             the time, thanks and goodbye."
            .to_owned(),
        Intent::Thanks => "You are welcome.".to_owned(),
        Intent::Goodbye => "Goodbye, and thanks for trying brisvox.".to_owned(),
    }
}

/// Splits `text` into the stream's deltas: each word with its trailing space.
fn words(text: &str) -> Vec<String> {
    let mut parts: Vec<String> = text.split_whitespace().map(|w| format!("{w} ")).collect();
    if let Some(last) = parts.last_mut() {
        last.pop();
    }
    parts
}

/// A stream in progress: the words left and the time the next is due.
struct Run {
    words: std::vec::IntoIter<String>,
    next_at: Instant,
    interval: Duration,
    done: bool,
}

impl Run {
    async fn step(mut self) -> Option<(LlmEvent, Run)> {
        if self.done {
            return None;
        }
        crate::mock::wait_until(self.next_at).await;
        match self.words.next() {
            Some(word) => {
                self.next_at += self.interval;
                Some((LlmEvent::TextDelta(word), self))
            }
            None => {
                self.done = true;
                Some((LlmEvent::Done, self))
            }
        }
    }
}

impl LlmProvider for LocalRulesLlm {
    fn stream(&self, request: LlmRequest) -> LlmStream {
        let text = reply(&request, (self.config.clock)());
        let interval = Duration::from_millis(self.config.word_interval_ms);
        let run = Run {
            words: words(&text).into_iter(),
            next_at: Instant::now() + Duration::from_millis(self.config.first_token_ms),
            interval,
            done: false,
        };
        LlmStream::new(futures_util::stream::unfold(run, Run::step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_are_found_by_word_not_by_substring() {
        assert_eq!(detect_intents("Hi there"), vec![Intent::Greeting]);
        assert_eq!(detect_intents("this is a thing"), vec![]); // "this" holds "hi"
        assert_eq!(detect_intents("What time is it?"), vec![Intent::Time]);
        assert_eq!(detect_intents("who are you"), vec![Intent::Identity]);
        assert_eq!(
            detect_intents("thank you for your time"),
            vec![Intent::Thanks]
        );
        assert_eq!(
            detect_intents("Hello! OK, bye."),
            vec![Intent::Greeting, Intent::Goodbye]
        );
        assert_eq!(detect_intents("see you later"), vec![Intent::Goodbye]);
    }

    #[test]
    fn the_echo_is_cut_after_its_word_limit() {
        let long = "word ".repeat(MAX_ECHO_WORDS + 5);
        let cut = echo(&long);
        assert_eq!(cut.split_whitespace().count(), MAX_ECHO_WORDS);
        assert!(cut.ends_with('…'));
        assert_eq!(echo("Is it open?"), "Is it open");
    }

    #[test]
    fn deltas_concatenate_to_the_text() {
        let text = "You said: hi. Hello!";
        assert_eq!(words(text).concat(), text);
        assert!(words("").is_empty());
    }
}
