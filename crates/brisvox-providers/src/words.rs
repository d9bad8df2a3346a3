//! Word timing: where each word lies in a stream's audio, for the vendors that
//! say so (Deepgram's `words[]` on STT results, Cartesia's `timestamps`,
//! ElevenLabs' `alignment`).
//!
//! It travels as its own optional event ([`crate::SttEvent::Words`],
//! [`crate::TtsEvent::Words`]) so a consumer that ignores it loses nothing and
//! pays nothing: it is built once per vendor message (a transcript or a
//! timestamps message, never per audio frame), and providers without timing
//! never send it. The engine can cut the LLM context at the last word the
//! caller heard by comparing these times with the audio it has played.

/// One word and the span of audio it occupies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordTiming {
    /// The word as the vendor spells it (with punctuation where given).
    pub word: String,
    /// Start, in ms from the stream's origin (see the event that carries it).
    pub start_ms: u32,
    /// End, in ms from the same origin.
    pub end_ms: u32,
}

impl WordTiming {
    /// A word from `start_s` to `end_s` seconds after `origin_ms`; negative or
    /// reversed times are clamped so `start_ms <= end_ms`.
    pub fn from_secs(word: impl Into<String>, origin_ms: u64, start_s: f64, end_s: f64) -> Self {
        let ms = |s: f64| {
            let v = origin_ms as f64 + (s.max(0.0) * 1000.0).round();
            v.min(f64::from(u32::MAX)) as u32
        };
        let start_ms = ms(start_s);
        WordTiming {
            word: word.into(),
            start_ms,
            end_ms: ms(end_s).max(start_ms),
        }
    }
}

/// Joins per-character timing (ElevenLabs' `alignment`: characters with their
/// start times and durations in ms) into words: runs of non-space characters.
/// `origin_ms` is added to every time.
pub fn words_from_chars(
    chars: &[String],
    starts_ms: &[u64],
    durations_ms: &[u64],
    origin_ms: u64,
) -> Vec<WordTiming> {
    let mut out: Vec<WordTiming> = Vec::new();
    let mut current: Option<WordTiming> = None;
    let n = chars.len().min(starts_ms.len()).min(durations_ms.len());
    let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    for i in 0..n {
        let c = &chars[i];
        let start = clamp(origin_ms + starts_ms[i]);
        let end = clamp(origin_ms + starts_ms[i] + durations_ms[i]);
        if c.trim().is_empty() {
            out.extend(current.take());
            continue;
        }
        match current.as_mut() {
            Some(w) => {
                w.word.push_str(c);
                w.end_ms = w.end_ms.max(end);
            }
            None => {
                current = Some(WordTiming {
                    word: c.clone(),
                    start_ms: start,
                    end_ms: end.max(start),
                })
            }
        }
    }
    out.extend(current);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_become_ms_from_the_origin() {
        let w = WordTiming::from_secs("Hello", 1_000, 0.5, 0.9);
        assert_eq!((w.start_ms, w.end_ms), (1_500, 1_900));
        let w = WordTiming::from_secs("x", 0, 2.0, 1.0);
        assert_eq!((w.start_ms, w.end_ms), (2_000, 2_000));
    }

    #[test]
    fn characters_join_into_words() {
        let chars: Vec<String> = "Hi, you".chars().map(String::from).collect();
        let starts = [0, 50, 100, 150, 200, 250, 300];
        let durations = [50; 7];
        let words = words_from_chars(&chars, &starts, &durations, 10);
        assert_eq!(
            words,
            vec![
                WordTiming {
                    word: "Hi,".into(),
                    start_ms: 10,
                    end_ms: 160
                },
                WordTiming {
                    word: "you".into(),
                    start_ms: 210,
                    end_ms: 360
                },
            ]
        );
    }
}
