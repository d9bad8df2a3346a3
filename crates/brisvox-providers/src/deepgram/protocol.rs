//! Deepgram's wire messages: what the server sends on `/v1/listen` and
//! `/v1/speak`, parsed into small enums, and the client's control messages.
//!
//! Plain functions over strings; no I/O. Unknown message types parse to
//! `Other` so a new server message never breaks a call.

use serde::Deserialize;

use crate::ProviderError;

/// `{"type":"Finalize"}`: transcribe the audio buffered so far now.
pub const FINALIZE: &str = r#"{"type":"Finalize"}"#;
/// `{"type":"KeepAlive"}`: keeps an idle listen socket open.
pub const KEEP_ALIVE: &str = r#"{"type":"KeepAlive"}"#;
/// `{"type":"CloseStream"}`: finish the listen stream and close.
pub const CLOSE_STREAM: &str = r#"{"type":"CloseStream"}"#;
/// `{"type":"Flush"}`: synthesise the text buffered so far (Aura).
pub const FLUSH: &str = r#"{"type":"Flush"}"#;
/// `{"type":"Clear"}`: drop the buffered text and audio (Aura barge-in).
pub const CLEAR: &str = r#"{"type":"Clear"}"#;
/// `{"type":"Close"}`: close the speak stream (Aura).
pub const CLOSE: &str = r#"{"type":"Close"}"#;

/// `{"type":"Speak","text":…}` for one text chunk (Aura).
pub fn speak(text: &str) -> String {
    serde_json::json!({ "type": "Speak", "text": text }).to_string()
}

/// A message from the listen (STT) socket.
#[derive(Debug, Clone, PartialEq)]
pub enum ListenMessage {
    /// A transcript of the first channel.
    Results(ListenResult),
    /// Deepgram's end of utterance (needs `utterance_end_ms`).
    UtteranceEnd,
    /// Deepgram heard speech begin (needs `vad_events`).
    SpeechStarted,
    /// Session metadata (request id); logged only.
    Metadata {
        /// Deepgram's request id, for support tickets.
        request_id: Option<String>,
    },
    /// A type this adapter does not use.
    Other,
}

/// The fields of a `Results` message the adapter uses.
#[derive(Debug, Clone, PartialEq)]
pub struct ListenResult {
    /// `channel.alternatives[0].transcript`.
    pub transcript: String,
    /// `channel.alternatives[0].confidence`.
    pub confidence: Option<f32>,
    /// Whether this segment's text will not change.
    pub is_final: bool,
    /// Whether Deepgram's endpointing ended the utterance here.
    pub speech_final: bool,
    /// Whether this result answers a `Finalize`.
    pub from_finalize: bool,
    /// Start of the segment in the stream, in seconds.
    pub start_s: f64,
    /// Length of the segment, in seconds.
    pub duration_s: f64,
    /// `channel.alternatives[0].words`: (word, start s, end s), times from the
    /// socket's first audio; `punctuated_word` when given.
    pub words: Vec<(String, f64, f64)>,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Present on `Results` (an object) and on `UtteranceEnd` /
    /// `SpeechStarted` (an array).
    #[serde(default)]
    channel: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawResults {
    channel: RawChannel,
    #[serde(default)]
    is_final: bool,
    #[serde(default)]
    speech_final: bool,
    #[serde(default)]
    from_finalize: bool,
    #[serde(default)]
    start: f64,
    #[serde(default)]
    duration: f64,
}

#[derive(Deserialize)]
struct RawChannel {
    alternatives: Vec<RawAlternative>,
}

#[derive(Deserialize)]
struct RawAlternative {
    transcript: String,
    #[serde(default)]
    confidence: Option<f32>,
    #[serde(default)]
    words: Vec<RawWord>,
}

#[derive(Deserialize)]
struct RawWord {
    word: String,
    #[serde(default)]
    punctuated_word: Option<String>,
    #[serde(default)]
    start: f64,
    #[serde(default)]
    end: f64,
}

#[derive(Deserialize)]
struct RawMetadata {
    #[serde(default)]
    request_id: Option<String>,
}

/// Parses one text message of the listen socket.
///
/// Errors ([`ProviderError::Protocol`], without the message's content): not
/// JSON, no `type`, or a `Results` without `channel.alternatives[0].transcript`.
pub fn parse_listen(text: &str) -> Result<ListenMessage, ProviderError> {
    let envelope: Envelope = serde_json::from_str(text)
        .map_err(|_| ProviderError::protocol("Deepgram sent a message that is not typed JSON"))?;
    // Deepgram's own Endpointing page shows a Results message without `type`
    // (<https://developers.deepgram.com/docs/endpointing>): a message whose
    // `channel` is an object is read as Results.
    let kind = match (envelope.kind.as_deref(), &envelope.channel) {
        (Some(kind), _) => kind,
        (None, Some(serde_json::Value::Object(_))) => "Results",
        (None, _) => {
            return Err(ProviderError::protocol(
                "Deepgram sent a message that is not typed JSON",
            ));
        }
    };
    Ok(match kind {
        "Results" => {
            let raw: RawResults = serde_json::from_str(text)
                .map_err(|_| ProviderError::protocol("malformed Deepgram Results message"))?;
            let alt =
                raw.channel.alternatives.into_iter().next().ok_or_else(|| {
                    ProviderError::protocol("Deepgram Results without alternatives")
                })?;
            let words = alt
                .words
                .into_iter()
                .map(|w| (w.punctuated_word.unwrap_or(w.word), w.start, w.end))
                .collect();
            ListenMessage::Results(ListenResult {
                transcript: alt.transcript,
                confidence: alt.confidence,
                words,
                is_final: raw.is_final,
                speech_final: raw.speech_final,
                from_finalize: raw.from_finalize,
                start_s: raw.start,
                duration_s: raw.duration,
            })
        }
        "UtteranceEnd" => ListenMessage::UtteranceEnd,
        "SpeechStarted" => ListenMessage::SpeechStarted,
        "Metadata" => {
            let raw: RawMetadata = serde_json::from_str(text)
                .map_err(|_| ProviderError::protocol("malformed Deepgram Metadata message"))?;
            ListenMessage::Metadata {
                request_id: raw.request_id,
            }
        }
        _ => ListenMessage::Other,
    })
}

/// A text message from the speak (Aura) socket.
#[derive(Debug, Clone, PartialEq)]
pub enum SpeakMessage {
    /// All audio for the text before a `Flush` has been sent.
    Flushed,
    /// A `Clear` took effect: later audio is for later text.
    Cleared,
    /// Session metadata; logged only.
    Metadata,
    /// A non-fatal warning (for instance the flush rate limit).
    Warning {
        /// Deepgram's description, truncated.
        description: String,
    },
    /// A type this adapter does not use.
    Other,
}

#[derive(Deserialize)]
struct RawWarning {
    #[serde(default)]
    description: String,
    #[serde(default)]
    code: String,
}

/// Parses one text message of the speak socket.
///
/// The Flush and Clear pages' examples name the replies `Flushed` and
/// `Cleared` (<https://developers.deepgram.com/docs/tts-ws-flush>,
/// <https://developers.deepgram.com/docs/tts-ws-clear>); the reference's
/// schema spells their `type` `flush` and `clear`. Both spellings are read
/// (types compare without case), so either way a flush ends its context.
///
/// Errors ([`ProviderError::Protocol`]): not JSON or no `type`.
pub fn parse_speak(text: &str) -> Result<SpeakMessage, ProviderError> {
    let envelope: Envelope = serde_json::from_str(text)
        .map_err(|_| ProviderError::protocol("Deepgram sent a message that is not typed JSON"))?;
    let Some(kind) = envelope.kind else {
        return Err(ProviderError::protocol(
            "Deepgram sent a message that is not typed JSON",
        ));
    };
    Ok(match kind.to_ascii_lowercase().as_str() {
        "flushed" | "flush" => SpeakMessage::Flushed,
        "cleared" | "clear" => SpeakMessage::Cleared,
        "metadata" => SpeakMessage::Metadata,
        "warning" => {
            let raw: RawWarning = serde_json::from_str(text)
                .map_err(|_| ProviderError::protocol("malformed Deepgram Warning message"))?;
            let mut description: String = raw.description.chars().take(200).collect();
            if !raw.code.is_empty() {
                description = format!("{}: {description}", raw.code);
            }
            SpeakMessage::Warning { description }
        }
        _ => SpeakMessage::Other,
    })
}

/// Little-endian PCM16 bytes to samples; a trailing odd byte is returned
/// separately so it can be joined to the next message.
pub fn pcm16_le_to_samples(bytes: &[u8], out: &mut Vec<i16>) -> Option<u8> {
    let mut chunks = bytes.chunks_exact(2);
    out.extend(chunks.by_ref().map(|c| i16::from_le_bytes([c[0], c[1]])));
    chunks.remainder().first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_give_the_first_alternative_and_the_flags() {
        let msg = r#"{"type":"Results","channel_index":[0,1],"duration":1.5,"start":2.0,
            "is_final":true,"speech_final":false,"from_finalize":true,
            "channel":{"alternatives":[{"transcript":"hello there","confidence":0.93,"words":[]}]},
            "metadata":{"request_id":"r"}}"#;
        let ListenMessage::Results(r) = parse_listen(msg).unwrap() else {
            panic!("not results")
        };
        assert_eq!(r.transcript, "hello there");
        assert_eq!(r.confidence, Some(0.93));
        assert!(r.is_final && r.from_finalize && !r.speech_final);
        assert_eq!((r.start_s, r.duration_s), (2.0, 1.5));
    }

    #[test]
    fn from_finalize_defaults_to_false_and_unknown_types_are_other() {
        let msg = r#"{"type":"Results","is_final":false,"channel":{"alternatives":[{"transcript":"a"}]}}"#;
        let ListenMessage::Results(r) = parse_listen(msg).unwrap() else {
            panic!("not results")
        };
        assert!(!r.from_finalize && !r.is_final);
        assert_eq!(
            parse_listen(r#"{"type":"Brand new"}"#).unwrap(),
            ListenMessage::Other
        );
        assert_eq!(
            parse_listen(r#"{"type":"UtteranceEnd","channel":[0,1],"last_word_end":2.1}"#).unwrap(),
            ListenMessage::UtteranceEnd
        );
    }

    #[test]
    fn garbage_and_broken_results_are_protocol_errors_without_content() {
        for bad in [
            "not json at all secret-words",
            r#"{"no_type":1}"#,
            r#"{"type":"Results","channel":{"alternatives":[]}}"#,
            r#"{"type":"Results","channel":7}"#,
        ] {
            let err = parse_listen(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Protocol);
            assert!(!err.to_string().contains("secret-words"));
        }
    }

    #[test]
    fn speak_messages_parse() {
        // The pages' spelling, then the reference schema's.
        for (text, want) in [
            (
                r#"{"type":"Flushed","sequence_id":3}"#,
                SpeakMessage::Flushed,
            ),
            (
                r#"{"type":"Cleared","sequence_id":0}"#,
                SpeakMessage::Cleared,
            ),
            (r#"{"type":"flush","sequence_id":4}"#, SpeakMessage::Flushed),
            (r#"{"type":"clear","sequence_id":1}"#, SpeakMessage::Cleared),
        ] {
            assert_eq!(parse_speak(text).unwrap(), want, "{text}");
        }
        assert_eq!(
            parse_speak(r#"{"type":"Warning","description":"too many flushes","code":"W1"}"#)
                .unwrap(),
            SpeakMessage::Warning {
                description: "W1: too many flushes".into()
            }
        );
        assert!(parse_speak("<html>").is_err());
        assert_eq!(
            speak("say \"hi\""),
            r#"{"text":"say \"hi\"","type":"Speak"}"#
        );
    }

    #[test]
    fn pcm_bytes_become_samples_and_an_odd_byte_is_kept() {
        let mut out = Vec::new();
        assert_eq!(
            pcm16_le_to_samples(&[1, 0, 0xff, 0xff, 7], &mut out),
            Some(7)
        );
        assert_eq!(out, vec![1, -1]);
    }
}
