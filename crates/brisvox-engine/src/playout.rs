//! The playout book: per response, the text sent to the TTS and how much of its
//! audio the caller has heard, so that an interrupted answer is remembered as
//! what was said, not as what was written.
//!
//! A sans-IO core. The TTS stage tells it each chunk of text it sends
//! ([`PlayoutBook::chunk_sent`]), the audio the provider returned for the
//! response ([`PlayoutBook::audio_produced`]) and, from vendors that give them,
//! word timings ([`PlayoutBook::word_timings`]); the output side tells it the
//! audio the caller heard ([`PlayoutBook::played`]: released by the pacer, or
//! confirmed by a carrier's mark echoes). [`PlayoutBook::heard`] then cuts the
//! response's text at the last word the caller heard:
//!
//! 1. With word timings, a word is heard when its audio ended within what was
//!    played.
//! 2. Without them, within the chunk being played the words are aligned in
//!    proportion to their characters: the chunk's audio is spread over its
//!    text, and a word is heard when the played share of the chunk reaches the
//!    end of the word.
//! 3. A provider speaks a response as one stream, so the audio of each chunk
//!    is known only when the provider says the chunks so far are complete
//!    ([`PlayoutBook::chunk_done`]: the audio is then shared among them by
//!    characters). The audio of a chunk still being synthesised is estimated
//!    from its characters at the response's own rate so far (or the call's,
//!    or [`DEFAULT_MS_PER_CHAR`] before any chunk of the call is complete),
//!    never below the audio already produced; chunks still open share that
//!    estimate by characters.
//!
//! All times are milliseconds of the response's audio from its first sample.
//! The book keeps the last [`BOOK_RESPONSES`] responses.

use std::collections::VecDeque;

use brisvox_core::Epoch;
use brisvox_providers::WordTiming;

/// Responses the book keeps (older ones are forgotten).
pub const BOOK_RESPONSES: usize = 4;

/// Speech rate assumed for a chunk whose audio is not complete when nothing
/// of the response is complete yet, ms of audio per character (about 14
/// characters per second).
pub const DEFAULT_MS_PER_CHAR: f64 = 70.0;

/// What the caller heard of one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heard {
    /// The response.
    pub epoch: Epoch,
    /// Its text as sent to the TTS.
    pub sent: String,
    /// The part of it the caller heard, cut after the last heard word.
    pub heard: String,
    /// Whether the caller heard all of it.
    pub complete: bool,
    /// Audio the caller heard, ms.
    pub played_ms: u64,
}

#[derive(Debug, Clone)]
struct Chunk {
    text: String,
    /// Where its audio starts in the response, ms; known once the chunk before it is complete.
    start_ms: Option<f64>,
    /// Its audio, once complete, ms.
    audio_ms: Option<f64>,
}

impl Chunk {
    /// Where its audio ends, once known.
    fn end_ms(&self) -> Option<f64> {
        Some(self.start_ms? + self.audio_ms?)
    }
}

#[derive(Debug, Clone)]
struct Response {
    epoch: Epoch,
    chunks: Vec<Chunk>,
    /// Audio produced so far, ms.
    produced_ms: f64,
    /// Audio the caller heard, ms.
    played_ms: f64,
    /// Word timings of the whole response, when the vendor gives them.
    words: Vec<WordTiming>,
}

/// The playout book of one call.
#[derive(Debug, Default)]
pub struct PlayoutBook {
    responses: VecDeque<Response>,
}

impl PlayoutBook {
    /// An empty book.
    pub fn new() -> Self {
        PlayoutBook::default()
    }

    fn response(&mut self, epoch: Epoch) -> &mut Response {
        if self.responses.back().is_none_or(|r| r.epoch != epoch) {
            if self.responses.len() == BOOK_RESPONSES {
                self.responses.pop_front();
            }
            self.responses.push_back(Response {
                epoch,
                chunks: Vec::new(),
                produced_ms: 0.0,
                played_ms: 0.0,
                words: Vec::new(),
            });
        }
        // Cannot fail: pushed above when missing.
        self.responses.back_mut().expect("a response")
    }

    /// `text` (as written, before normalisation) was sent to the TTS for `epoch`.
    pub fn chunk_sent(&mut self, epoch: Epoch, text: &str) {
        let r = self.response(epoch);
        let start_ms = match r.chunks.last() {
            None => Some(0.0),
            Some(prev) => prev.end_ms(),
        };
        r.chunks.push(Chunk {
            text: text.to_owned(),
            start_ms,
            audio_ms: None,
        });
    }

    /// The provider produced `ms` more audio for `epoch`.
    pub fn audio_produced(&mut self, epoch: Epoch, ms: f64) {
        self.response(epoch).produced_ms += ms;
    }

    /// The audio of every chunk of `epoch` sent so far is complete (the
    /// provider's end of the response, or of a chunk when it says so). The
    /// audio produced since the last complete chunk is shared among the chunks
    /// still open in proportion to their characters.
    pub fn chunk_done(&mut self, epoch: Epoch) {
        let r = self.response(epoch);
        let produced = r.produced_ms;
        let Some(first) = r.chunks.iter().position(|c| c.audio_ms.is_none()) else {
            return;
        };
        let before = first.checked_sub(1).and_then(|p| r.chunks[p].end_ms());
        let mut start = r.chunks[first].start_ms.or(before).unwrap_or(0.0);
        let open = &mut r.chunks[first..];
        let chars: usize = open.iter().map(|c| c.text.chars().count().max(1)).sum();
        let audio = (produced - start).max(0.0);
        for c in open {
            let length = audio * c.text.chars().count().max(1) as f64 / chars as f64;
            c.start_ms = Some(start);
            c.audio_ms = Some(length);
            start += length;
        }
    }

    /// Word timings for `epoch`, ms from the response's first sample.
    pub fn word_timings(&mut self, epoch: Epoch, words: &[WordTiming]) {
        self.response(epoch).words.extend_from_slice(words);
    }

    /// The caller heard `ms` more of `epoch`'s audio.
    pub fn played(&mut self, epoch: Epoch, ms: f64) {
        self.response(epoch).played_ms += ms;
    }

    /// The far end confirmed only `ms` of `epoch`'s audio as played (a
    /// carrier's mark echoes): what the caller heard is at most that.
    pub fn confirmed(&mut self, epoch: Epoch, ms: f64) {
        if let Some(r) = self.responses.iter_mut().find(|r| r.epoch == epoch) {
            r.played_ms = r.played_ms.min(ms);
        }
    }

    /// The newest response in the book.
    pub fn last_epoch(&self) -> Option<Epoch> {
        self.responses.back().map(|r| r.epoch)
    }

    /// What the caller heard of `epoch` (`None` when the book has no such response).
    pub fn heard(&self, epoch: Epoch) -> Option<Heard> {
        let r = self.responses.iter().find(|r| r.epoch == epoch)?;
        let sent = join(r.chunks.iter().map(|c| c.text.as_str()));
        let heard = if r.words.is_empty() {
            // The response's own rate, else the call's so far, else the default.
            let own = ms_per_char(std::iter::once(r));
            let rate = if r.chunks.iter().any(|c| c.audio_ms.is_some()) {
                own
            } else {
                ms_per_char(self.responses.iter())
            };
            heard_by_proportion(r, rate)
        } else {
            heard_by_timings(r)
        };
        let complete = heard.split_whitespace().count() == sent.split_whitespace().count();
        Some(Heard {
            epoch,
            sent,
            heard,
            complete,
            played_ms: r.played_ms.max(0.0).round() as u64,
        })
    }
}

fn join<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    parts
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rule 1: the words whose audio ended within what was played, mapped back
/// onto the sent text word by word (the vendor's spelling may differ).
fn heard_by_timings(r: &Response) -> String {
    let n = r
        .words
        .iter()
        .filter(|w| f64::from(w.end_ms) <= r.played_ms)
        .count();
    let sent: Vec<&str> = r
        .chunks
        .iter()
        .flat_map(|c| c.text.split_whitespace())
        .collect();
    sent[..n.min(sent.len())].join(" ")
}

/// Rules 2 and 3: complete chunks at their known place; the open chunks after
/// them as one block of estimated length, shared by characters.
fn heard_by_proportion(r: &Response, rate: f64) -> String {
    let open_from = r
        .chunks
        .iter()
        .position(|c| c.audio_ms.is_none())
        .unwrap_or(r.chunks.len());
    let mut spans: Vec<(f64, f64)> = r.chunks[..open_from]
        .iter()
        .map(|c| (c.start_ms.unwrap_or(0.0), c.audio_ms.unwrap_or(0.0)))
        .collect();
    let open = &r.chunks[open_from..];
    if !open.is_empty() {
        let start = spans.last().map_or(0.0, |(s, l)| s + l);
        let chars = |c: &Chunk| c.text.chars().count().max(1) as f64;
        let total_chars: f64 = open.iter().map(chars).sum();
        let length = (total_chars * rate).max(r.produced_ms - start);
        let mut at = start;
        for c in open {
            let l = length * chars(c) / total_chars;
            spans.push((at, l));
            at += l;
        }
    }
    let mut out: Vec<&str> = Vec::new();
    for (c, (begin, length)) in r.chunks.iter().zip(spans) {
        let share = ((r.played_ms - begin) / length.max(1e-9)).clamp(0.0, 1.0);
        out.extend(words_within(&c.text, share));
        if share < 1.0 {
            break;
        }
    }
    out.join(" ")
}

/// Audio per character of the complete chunks of `responses`, or the default.
fn ms_per_char<'a>(responses: impl Iterator<Item = &'a Response>) -> f64 {
    let (ms, chars) = responses
        .flat_map(|r| r.chunks.iter())
        .filter_map(|c| Some((c.audio_ms?, c.text.chars().count())))
        .fold((0.0, 0usize), |(m, n), (a, c)| (m + a, n + c));
    if chars == 0 || ms <= 0.0 {
        DEFAULT_MS_PER_CHAR
    } else {
        ms / chars as f64
    }
}

/// The words of `text` whose last character lies within the first `share` of its characters.
fn words_within(text: &str, share: f64) -> Vec<&str> {
    let total = text.chars().count().max(1) as f64;
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut rest = text;
    while let Some(begin) = rest.find(|c: char| !c.is_whitespace()) {
        let word_and_more = &rest[begin..];
        let len = word_and_more
            .find(char::is_whitespace)
            .unwrap_or(word_and_more.len());
        let word = &word_and_more[..len];
        pos += rest[..begin].chars().count() + word.chars().count();
        if pos as f64 / total > share + 1e-9 {
            break;
        }
        out.push(word);
        rest = &word_and_more[len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_played_out_response_is_heard_whole() {
        let mut b = PlayoutBook::new();
        b.chunk_sent(Epoch(1), "Okay,");
        b.audio_produced(Epoch(1), 300.0);
        b.chunk_done(Epoch(1));
        b.chunk_sent(Epoch(1), "got it.");
        b.audio_produced(Epoch(1), 420.0);
        b.chunk_done(Epoch(1));
        b.played(Epoch(1), 720.0);
        let h = b.heard(Epoch(1)).unwrap();
        assert_eq!((h.heard.as_str(), h.complete), ("Okay, got it.", true));
        assert_eq!(h.sent, "Okay, got it.");
    }

    #[test]
    fn a_cut_inside_a_chunk_keeps_the_words_played_in_proportion() {
        let mut b = PlayoutBook::new();
        // 38 characters, 1.9 s of audio: 50 ms per character.
        b.chunk_sent(Epoch(2), "The table is booked for eight tonight.");
        b.audio_produced(Epoch(2), 1900.0);
        b.chunk_done(Epoch(2));
        b.chunk_sent(Epoch(2), "Anything else?");
        b.played(Epoch(2), 950.0); // half of the first chunk: "booked" ends at 19 of 38
        let h = b.heard(Epoch(2)).unwrap();
        assert_eq!(h.heard, "The table is booked");
        assert!(!h.complete);
        assert_eq!(h.played_ms, 950);
    }

    #[test]
    fn a_carriers_confirmation_caps_what_was_heard() {
        let mut b = PlayoutBook::new();
        // 38 characters, 1.9 s of audio: 50 ms per character.
        b.chunk_sent(Epoch(2), "The table is booked for eight tonight.");
        b.audio_produced(Epoch(2), 1900.0);
        b.chunk_done(Epoch(2));
        b.played(Epoch(2), 1900.0); // all of it handed to the carrier
        b.confirmed(Epoch(2), 950.0); // the marks confirm half
        assert_eq!(b.heard(Epoch(2)).unwrap().heard, "The table is booked");
        b.confirmed(Epoch(2), 0.0);
        assert_eq!(
            b.heard(Epoch(2)).unwrap().heard,
            "",
            "no echo: nothing heard"
        );
    }

    #[test]
    fn an_unfinished_chunk_is_estimated_from_the_response_rate() {
        let mut b = PlayoutBook::new();
        b.chunk_sent(Epoch(3), "Hello there."); // 12 chars, 600 ms: 50 ms per char
        b.audio_produced(Epoch(3), 600.0);
        b.chunk_done(Epoch(3));
        b.chunk_sent(Epoch(3), "I can help with that booking."); // ~29 chars, ~1450 ms
        b.audio_produced(Epoch(3), 400.0);
        b.played(Epoch(3), 600.0 + 500.0);
        assert_eq!(b.heard(Epoch(3)).unwrap().heard, "Hello there. I can help");
    }

    #[test]
    fn vendor_word_timings_decide_when_given() {
        let mut b = PlayoutBook::new();
        b.chunk_sent(Epoch(4), "Sure, one moment please.");
        let w = |word: &str, s: u32, e: u32| WordTiming {
            word: word.into(),
            start_ms: s,
            end_ms: e,
        };
        b.word_timings(
            Epoch(4),
            &[
                w("Sure", 0, 300),
                w("one", 400, 600),
                w("moment", 600, 1000),
                w("please", 1000, 1400),
            ],
        );
        b.played(Epoch(4), 950.0);
        assert_eq!(b.heard(Epoch(4)).unwrap().heard, "Sure, one");
    }

    #[test]
    fn nothing_played_is_nothing_heard_and_old_responses_are_forgotten() {
        let mut b = PlayoutBook::new();
        b.chunk_sent(Epoch(1), "Hi.");
        assert_eq!(b.heard(Epoch(1)).unwrap().heard, "");
        for e in 2..=5 {
            b.chunk_sent(Epoch(e), "x");
        }
        assert!(b.heard(Epoch(1)).is_none());
        assert!(b.heard(Epoch(5)).is_some());
    }
}
