//! Text shaping between the LLM and the TTS, as plain code (no I/O, no clock,
//! no runtime).
//!
//! Two components live here:
//!
//! * [`segment`]: the [`Segmenter`](segment::Segmenter) turns a stream of LLM
//!   text deltas into chunks that a TTS can speak. Feed it every delta with
//!   [`push`](segment::Segmenter::push) (or `push_into`), call
//!   [`finish`](segment::Segmenter::finish) at the end of the answer and
//!   [`reset`](segment::Segmenter::reset) on barge-in.
//! * [`normalize`]: [`normalize`](normalize::normalize) rewrites written forms
//!   (numbers, percentages, currencies, dates, times, ordinals, phone numbers,
//!   abbreviations) into the words a TTS should say, for English and Turkish.
//!
//! Both are deterministic functions of their input; the caller owns the time.
//! The rules, tables and limits are described in `docs/TEXT.md`.

pub mod normalize;
pub mod segment;

/// The language of a stream of text. It selects the abbreviation tables of the
/// segmenter and the number words, conventions and suffix rules of the
/// normaliser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Language {
    /// English.
    #[default]
    En,
    /// Turkish.
    Tr,
}
