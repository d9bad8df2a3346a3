//! The TTS segmenter: LLM text deltas in, speakable chunks out.
//!
//! Driving rule: call [`Segmenter::push`] (or [`Segmenter::push_into`]) with
//! every delta as it arrives and send each returned chunk to the TTS at once;
//! call [`Segmenter::finish`] when the answer ends and [`Segmenter::reset`]
//! when it is interrupted. The segmenter holds no clock and does no I/O: a
//! chunk is released by the push that carries the text deciding it, so the
//! caller's timestamps of its pushes are the chunk times.
//!
//! Where chunks end (details and tables in `docs/TEXT.md`):
//!
//! * the first chunk of a stream ends at the earliest clause boundary
//!   (`, ; :` or a spaced dash, then whitespace) or sentence end once it holds
//!   [`SegmenterConfig::first_min_words`] words;
//! * later chunks end at sentence ends (`. ! ? …` and runs of them, with any
//!   closing quotes, brackets or emphasis) and at a newline after text;
//! * a chunk that grows past [`SegmenterConfig::max_chunk_chars`] is cut at
//!   its last clause boundary inside the limit, else its last whitespace
//!   inside it, else the first whitespace after it; a token without
//!   whitespace is cut grapheme-safely at four times the limit.
//!
//! A terminator or clause mark is decided only once the next non-space char
//! has arrived (`Dr.` + `Smith` and `3.` + `14` differ only there); a newline
//! is decided at once. Decisions depend only on the text, never on how it was
//! split into deltas.

mod abbrev;
mod boundary;
mod grapheme;
mod scan;
mod timed;

pub use crate::Language;
pub use timed::{TimedChunk, timed_chunks};

use scan::{Context, Scan};

/// Words the first chunk needs in English before a boundary may end it.
pub const FIRST_MIN_WORDS_EN: usize = 1;
/// Words the first chunk needs in Turkish before a boundary may end it.
pub const FIRST_MIN_WORDS_TR: usize = 1;
/// Default chunk length limit in chars.
pub const MAX_CHUNK_CHARS: usize = 250;
/// The smallest accepted `max_chunk_chars`; smaller values are raised to it.
pub const MIN_MAX_CHUNK_CHARS: usize = 2;

/// Settings of a [`Segmenter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmenterConfig {
    /// Selects the abbreviation tables.
    pub language: Language,
    /// Words the first chunk of a stream must hold before a clause boundary
    /// or sentence end may end it.
    pub first_min_words: usize,
    /// Chunk length (chars) past which the over-limit rules cut.
    pub max_chunk_chars: usize,
}

impl SegmenterConfig {
    /// The defaults for `language`: its first-chunk word count and a limit
    /// of [`MAX_CHUNK_CHARS`].
    pub fn new(language: Language) -> Self {
        let first_min_words = match language {
            Language::En => FIRST_MIN_WORDS_EN,
            Language::Tr => FIRST_MIN_WORDS_TR,
        };
        Self {
            language,
            first_min_words,
            max_chunk_chars: MAX_CHUNK_CHARS,
        }
    }

    /// Sets the words the first chunk needs.
    pub fn with_first_min_words(mut self, words: usize) -> Self {
        self.first_min_words = words;
        self
    }

    /// Sets the chunk length limit in chars (at least [`MIN_MAX_CHUNK_CHARS`]).
    pub fn with_max_chunk_chars(mut self, chars: usize) -> Self {
        self.max_chunk_chars = chars;
        self
    }
}

impl Default for SegmenterConfig {
    fn default() -> Self {
        Self::new(Language::En)
    }
}

/// Shortens whitespace runs of the incoming stream to `max_chunk_chars + 1`
/// chars, keeping one newline from the excess.
#[derive(Debug, Clone, Default)]
struct SpaceLimiter {
    /// Chars of the current run that were kept (the held one included).
    run: usize,
    /// The kept part of the run holds a newline.
    has_newline: bool,
    /// The last allowed char of the run, held back while a newline may still
    /// replace it.
    held: Option<char>,
}

impl SpaceLimiter {
    fn feed(&mut self, c: char, cap: usize, out: &mut String) {
        if !c.is_whitespace() {
            if let Some(h) = self.held.take() {
                out.push(h);
            }
            *self = Self::default();
            out.push(c);
            return;
        }
        if self.run < cap {
            self.run += 1;
            if self.run == cap && c != '\n' && !self.has_newline {
                self.held = Some(c);
                return;
            }
            self.has_newline |= c == '\n';
            out.push(c);
        } else if c == '\n' && self.held.take().is_some() {
            self.has_newline = true;
            out.push('\n');
        }
    }
}

/// Turns LLM text deltas into TTS chunks. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Segmenter {
    config: SegmenterConfig,
    /// Text of the chunk being built; never starts with whitespace.
    pending: String,
    scan: Scan,
    /// The first chunk of this stream has been emitted.
    first_done: bool,
    /// `pending` starts at the beginning of a line.
    line_start: bool,
    spaces: SpaceLimiter,
}

impl Segmenter {
    /// A segmenter for one stream at a time with `config`.
    pub fn new(config: SegmenterConfig) -> Self {
        let max = config.max_chunk_chars.max(MIN_MAX_CHUNK_CHARS);
        let config = SegmenterConfig {
            max_chunk_chars: max,
            ..config
        };
        Self {
            config,
            pending: String::with_capacity(max + 16),
            scan: Scan::default(),
            first_done: false,
            line_start: true,
            spaces: SpaceLimiter::default(),
        }
    }

    /// The settings in use (`max_chunk_chars` after clamping).
    pub fn config(&self) -> &SegmenterConfig {
        &self.config
    }

    /// Chars of text held back, waiting for a decision.
    pub fn pending_chars(&self) -> usize {
        self.pending.chars().count()
    }

    /// Feeds one delta and returns the chunks it completes, in order.
    pub fn push(&mut self, delta: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.push_into(delta, &mut out);
        out
    }

    /// Feeds one delta and appends the chunks it completes to `out`.
    pub fn push_into(&mut self, delta: &str, out: &mut Vec<String>) {
        let cap = self.config.max_chunk_chars + 1;
        let was_empty = self.pending.is_empty();
        for c in delta.chars() {
            self.spaces.feed(c, cap, &mut self.pending);
        }
        if was_empty {
            self.drop_leading_space();
        }
        self.drain_chunks(out);
    }

    /// Ends the stream: returns what is left as a last chunk (if any text is
    /// left) and gets ready for the next stream.
    pub fn finish(&mut self) -> Option<String> {
        let rest = self.pending.trim();
        let last = (!rest.is_empty()).then(|| rest.to_owned());
        self.reset();
        last
    }

    /// Drops the pending text (never spoken) and starts a new stream: the
    /// next chunk is a first chunk again.
    pub fn reset(&mut self) {
        self.pending.clear();
        self.scan = Scan::default();
        self.first_done = false;
        self.line_start = true;
        self.spaces = SpaceLimiter::default();
    }

    fn context(&self) -> Context {
        Context {
            max_chars: self.config.max_chunk_chars,
            first_min_words: (!self.first_done).then_some(self.config.first_min_words),
            line_start: self.line_start,
            language: self.config.language,
        }
    }

    fn drain_chunks(&mut self, out: &mut Vec<String>) {
        loop {
            let ctx = self.context();
            let Some(end) = self.scan.next_cut(&self.pending, &ctx) else {
                return;
            };
            let chunk = self.pending[..end].trim();
            if !chunk.is_empty() {
                out.push(chunk.to_owned());
            }
            self.pending.drain(..end);
            self.scan = Scan::default();
            self.first_done = true;
            self.line_start = false;
            self.drop_leading_space();
        }
    }

    /// Removes leading whitespace, noting whether it held a line break.
    fn drop_leading_space(&mut self) {
        let kept = self.pending.trim_start();
        let dropped = self.pending.len() - kept.len();
        if dropped > 0 {
            self.line_start |= self.pending[..dropped].contains('\n');
            self.pending.drain(..dropped);
        }
    }
}
