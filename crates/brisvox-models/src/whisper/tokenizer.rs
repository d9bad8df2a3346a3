//! Whisper's byte-level BPE vocabulary, read from the model's `tokenizer.json`
//! (Hugging Face format), for turning token ids back into text. Encoding text
//! is never needed: the recogniser only decodes.
//!
//! GPT-2's byte-level scheme maps every byte to a printable character (the
//! bytes `!`..`~`, `¡`..`¬` and `®`..`ÿ` to themselves, the other 68 to
//! U+0100 onwards, in byte order); a token's string is those characters, so
//! its bytes are recovered by the inverse map.

use std::collections::HashMap;

use serde_json::Value;

/// Why a `tokenizer.json` could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    /// Not JSON, or not the Hugging Face layout with `model.vocab`.
    #[error("not a Whisper tokenizer.json: {reason}")]
    Format {
        /// What was wrong.
        reason: String,
    },
    /// A special token the recogniser needs is absent.
    #[error("tokenizer.json has no {token} token")]
    MissingSpecial {
        /// The token's text.
        token: &'static str,
    },
}

/// The special tokens a transcription uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialTokens {
    /// `<|endoftext|>`.
    pub eot: u32,
    /// `<|startoftranscript|>`.
    pub sot: u32,
    /// `<|notimestamps|>`.
    pub no_timestamps: u32,
    /// The first timestamp token (the one after `<|notimestamps|>`).
    pub timestamp_begin: u32,
}

/// Token ids to text.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    /// Each id's bytes (empty for ids the vocabulary does not name).
    bytes: Vec<Vec<u8>>,
    special: SpecialTokens,
}

impl Tokenizer {
    /// Reads the JSON text of a `tokenizer.json`.
    pub fn from_json(json: &str) -> Result<Self, TokenizerError> {
        let format = |reason: &str| TokenizerError::Format {
            reason: reason.to_owned(),
        };
        let root: Value = serde_json::from_str(json).map_err(|e| format(&e.to_string()))?;
        let vocab = root
            .pointer("/model/vocab")
            .and_then(Value::as_object)
            .ok_or_else(|| format("no model.vocab object"))?;
        let unicode_to_byte = unicode_to_byte();
        let mut bytes: Vec<Vec<u8>> = Vec::new();
        let mut put = |id: u64, b: Vec<u8>| {
            let id = usize::try_from(id).unwrap_or(usize::MAX);
            if id < 1 << 20 {
                if bytes.len() <= id {
                    bytes.resize(id + 1, Vec::new());
                }
                bytes[id] = b;
            }
        };
        for (token, id) in vocab {
            let id = id
                .as_u64()
                .ok_or_else(|| format("a vocab id is not a number"))?;
            let b = token
                .chars()
                .map(|c| unicode_to_byte.get(&c).copied())
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| format("a vocab entry is not byte-level"))?;
            put(id, b);
        }
        let mut specials: HashMap<String, u32> = HashMap::new();
        for added in root
            .get("added_tokens")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(content), Some(id)) = (
                added.get("content").and_then(Value::as_str),
                added.get("id").and_then(Value::as_u64),
            ) {
                specials.insert(content.to_owned(), u32::try_from(id).unwrap_or(u32::MAX));
            }
        }
        let special = |token: &'static str| {
            specials
                .get(token)
                .copied()
                .ok_or(TokenizerError::MissingSpecial { token })
        };
        let no_timestamps = special("<|notimestamps|>")?;
        Ok(Tokenizer {
            bytes,
            special: SpecialTokens {
                eot: special("<|endoftext|>")?,
                sot: special("<|startoftranscript|>")?,
                no_timestamps,
                timestamp_begin: no_timestamps + 1,
            },
        })
    }

    /// The special tokens.
    pub fn special(&self) -> SpecialTokens {
        self.special
    }

    /// The text of `tokens` (special tokens and unknown ids are skipped; bytes
    /// that are not UTF-8 become U+FFFD), trimmed.
    pub fn decode(&self, tokens: &[u32]) -> String {
        let mut out = Vec::new();
        for &t in tokens {
            if t < self.special.eot
                && let Some(b) = self.bytes.get(t as usize)
            {
                out.extend_from_slice(b);
            }
        }
        String::from_utf8_lossy(&out).trim().to_owned()
    }
}

/// GPT-2's byte-to-character table, inverted.
fn unicode_to_byte() -> HashMap<char, u8> {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut next = 0u32;
    (0..=255u8)
        .map(|b| {
            let c = if printable(b) {
                char::from(b)
            } else {
                next += 1;
                char::from_u32(255 + next).unwrap_or(char::REPLACEMENT_CHARACTER)
            };
            (c, b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Tokenizer {
        let json = r#"{
            "model": {"type": "BPE", "vocab": {"He": 0, "\u0120was": 1, "\u0120ill": 2, "-": 3,
                "dis": 4, "\u00e2\u0122\u013b": 5, "<|endoftext|>": 6}},
            "added_tokens": [
                {"id": 6, "content": "<|endoftext|>"},
                {"id": 7, "content": "<|startoftranscript|>"},
                {"id": 8, "content": "<|notimestamps|>"}
            ]
        }"#;
        Tokenizer::from_json(json).unwrap()
    }

    #[test]
    fn ids_decode_to_text_with_byte_level_spaces_and_multibyte_characters() {
        let t = sample();
        assert_eq!(t.decode(&[0, 1, 2, 3, 4]), "He was ill-dis");
        // U+2019 (right single quote) is three bytes, each mapped to a character.
        assert_eq!(t.decode(&[5]), "\u{2019}");
        assert_eq!(t.decode(&[7, 0, 6, 8, 9, 1]), "He was", "specials skipped");
    }

    #[test]
    fn special_tokens_are_known() {
        let t = sample();
        assert_eq!(
            t.special(),
            SpecialTokens {
                eot: 6,
                sot: 7,
                no_timestamps: 8,
                timestamp_begin: 9
            }
        );
    }

    #[test]
    fn a_file_without_the_special_tokens_or_a_vocab_is_refused() {
        let no_sot = r#"{"model": {"vocab": {"a": 0}}, "added_tokens": []}"#;
        assert!(matches!(
            Tokenizer::from_json(no_sot),
            Err(TokenizerError::MissingSpecial { .. })
        ));
        assert!(matches!(
            Tokenizer::from_json("{}"),
            Err(TokenizerError::Format { .. })
        ));
        assert!(matches!(
            Tokenizer::from_json("not json"),
            Err(TokenizerError::Format { .. })
        ));
    }

    #[test]
    fn the_byte_table_is_a_bijection_over_all_bytes() {
        let table = unicode_to_byte();
        assert_eq!(table.len(), 256);
        assert_eq!(table[&'\u{0120}'], b' ');
        assert_eq!(table[&'A'], b'A');
    }
}
