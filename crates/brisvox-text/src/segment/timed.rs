//! Replaying a timed token stream through a [`Segmenter`], for tests and
//! latency studies: which token released each chunk, and when.

use super::{Segmenter, SegmenterConfig};

/// A chunk and the token that released it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedChunk {
    /// The chunk text.
    pub text: String,
    /// Index of the token whose push released the chunk; `None` for the
    /// chunk left for [`Segmenter::finish`].
    pub token: Option<usize>,
    /// Time of that token (ms, as given); for the finish chunk the time of
    /// the last token.
    pub at_ms: u64,
}

/// Feeds `tokens` (`(time_ms, text)`, in order) to a new segmenter with
/// `config`, finishes the stream and reports every chunk with the token that
/// released it.
pub fn timed_chunks(config: SegmenterConfig, tokens: &[(u64, &str)]) -> Vec<TimedChunk> {
    let mut segmenter = Segmenter::new(config);
    let mut chunks = Vec::new();
    let mut out = Vec::new();
    for (index, &(at_ms, text)) in tokens.iter().enumerate() {
        segmenter.push_into(text, &mut out);
        chunks.extend(out.drain(..).map(|text| TimedChunk {
            text,
            token: Some(index),
            at_ms,
        }));
    }
    let last_ms = tokens.last().map_or(0, |&(at_ms, _)| at_ms);
    if let Some(text) = segmenter.finish() {
        chunks.push(TimedChunk {
            text,
            token: None,
            at_ms: last_ms,
        });
    }
    chunks
}
