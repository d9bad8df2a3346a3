//! The JSON text messages of the brisvox protocol: the server's events and the
//! client's controls, with their encoders.

use serde::{Deserialize, Serialize};

use super::{AudioCodec, DEFAULT_FRAME_MS, StartInfo};

/// The providers a call runs with, as announced in `started`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Providers {
    /// Speech-to-text provider (e.g. `"mock"`, `"deepgram"`).
    pub stt: String,
    /// Language model provider (e.g. `"mock"`, `"openai_compatible"`).
    pub llm: String,
    /// Text-to-speech provider (e.g. `"mock"`, `"cartesia"`).
    pub tts: String,
}

/// Per-turn metrics in milliseconds; a metric that is unknown for the turn is
/// `None` and absent from the JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnMetricsMs {
    /// From the end of the user's speech to the turn end decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_of_turn_delay_ms: Option<f64>,
    /// From the end of the user's speech to the STT final.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stt_final_delay_ms: Option<f64>,
    /// From the LLM request to its first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_ttft_ms: Option<f64>,
    /// From the TTS request to its first audio byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts_ttfb_ms: Option<f64>,
    /// From the end of the user's speech to the first bot audio sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_latency_ms: Option<f64>,
    /// From the barge-in decision to the bot's audio stopping (the clear).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_silence_ms: Option<f64>,
    /// Engine hop: from the turn end decision to the request handed to the LLM
    /// provider (fractional ms; well under 1 ms in a healthy engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_end_to_llm_ms: Option<f64>,
    /// Engine hop: from the TTS's first audio to the first frame handed to the
    /// transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts_first_byte_to_transport_ms: Option<f64>,
    /// Engine hop: from the barge-in decision to the transport's clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt_to_clear_ms: Option<f64>,
    /// From the end of the user's speech to the end-of-turn model's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_verdict_delay_ms: Option<f64>,
    /// What the turn end waited for last: `"stt_final"` (the transcript),
    /// `"turn_model"` (the end-of-turn verdict) or `"timeout"` (a deadline:
    /// the final timeout, or the wait after an "incomplete" verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_for: Option<String>,
}

/// A JSON event from the server to the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerEvent {
    /// The call is accepted; audio may flow.
    Started {
        /// Protocol version the server speaks.
        protocol_version: u32,
        /// The client's call id, echoed.
        call_id: String,
        /// Codec of the audio both ways.
        codec: AudioCodec,
        /// Sample rate of the audio both ways, in Hz.
        sample_rate: u32,
        /// Audio in each of the server's binary messages, in milliseconds.
        #[serde(default = "default_frame_ms")]
        frame_ms: u32,
        /// Providers in use.
        providers: Providers,
        /// True when any provider is a mock (no real STT, LLM or TTS).
        mock: bool,
    },
    /// A transcript of the caller's speech.
    Transcript {
        /// The text.
        text: String,
        /// True for a final transcript, false for an interim one.
        #[serde(rename = "final")]
        is_final: bool,
    },
    /// The bot started sending speech audio.
    BotSpeakingStarted,
    /// The bot stopped sending speech audio.
    BotSpeakingStopped {
        /// True when it stopped because the caller talked over it.
        interrupted: bool,
    },
    /// Barge-in: the client must drop every bot audio frame it has buffered.
    Clear,
    /// Metrics of one finished turn.
    TurnMetrics {
        /// Turn number within the call, from 1.
        turn: u64,
        /// The metrics, in milliseconds.
        #[serde(flatten)]
        metrics: TurnMetricsMs,
    },
    /// The engine saw a key press (a client's `dtmf`).
    Dtmf {
        /// The key: `0`-`9`, `*`, `#` or `A`-`D`.
        digit: String,
    },
    /// Text the bot is about to speak, as handed to its voice (a sentence or
    /// clause at a time; after a `clear` the audio of the last ones was cut).
    BotText {
        /// The response's turn (the caller's turn it answers; 0 before the
        /// first, as for the greeting).
        turn: u64,
        /// The text.
        text: String,
    },
    /// A response was cut (the caller talked over it): what of its text the
    /// caller heard, as the conversation now remembers it.
    BotHeard {
        /// The cut response's turn, as in its `bot_text`s.
        turn: u64,
        /// The part the caller heard, cut after the last heard word.
        heard: String,
        /// The whole text sent to the voice (`heard` is its beginning).
        sent: String,
        /// Audio of it the caller heard, ms.
        played_ms: u64,
    },
    /// The caller's turn ended without text, so nothing answers it (or the
    /// not-heard reply does, when `replied`).
    TurnNoText {
        /// Turn number within the call, from 1.
        turn: u64,
        /// `"empty_transcript"`, `"stt_error"` or `"final_timeout"`.
        reason: String,
        /// How long the caller spoke, in ms.
        speech_ms: f64,
        /// Whether the bot answers with its not-heard reply.
        replied: bool,
    },
    /// Something went wrong; `code` is stable, `message` is for people.
    Error {
        /// Stable machine-readable code (see the protocol document).
        code: String,
        /// Human-readable description.
        message: String,
    },
    /// The call is over; the server closes the websocket next.
    End {
        /// Why (`"client_end"`, `"protocol_error"`, `"max_duration"`, ...).
        reason: String,
    },
}

impl ServerEvent {
    /// The event as a JSON text message.
    pub fn to_json(&self) -> String {
        // Serialising these types cannot fail: every map key is a string and
        // there are no non-serialisable values.
        serde_json::to_string(self).expect("server events always serialise")
    }

    /// Parses a server event (for clients and tests).
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// A JSON control message from the client to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientControl {
    /// Opens the call.
    Start {
        /// Protocol version the client speaks.
        protocol_version: u32,
        /// Codec of the audio both ways.
        codec: AudioCodec,
        /// Sample rate of the audio both ways, in Hz.
        sample_rate: u32,
        /// The client's id for the call.
        call_id: String,
        /// Free metadata.
        #[serde(default)]
        metadata: serde_json::Map<String, serde_json::Value>,
        /// Audio in each of the server's binary messages, in milliseconds
        /// (absent: the default, 20).
        #[serde(
            default = "default_frame_ms",
            skip_serializing_if = "is_default_frame_ms"
        )]
        frame_ms: u32,
    },
    /// Ends the call.
    End {
        /// Optional reason, for logs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Asks the bot to say `text` (outside the normal turn flow).
    Say {
        /// What to say.
        text: String,
        /// Cut the bot now instead of queueing after its current answer.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupt: bool,
    },
    /// Reports a key press.
    Dtmf {
        /// The key: `0`-`9`, `*`, `#` or `A`-`D`.
        digit: String,
    },
}

impl ClientControl {
    /// The `start` message for `info`.
    pub fn start(info: &StartInfo) -> Self {
        Self::Start {
            protocol_version: info.protocol_version,
            codec: info.codec,
            sample_rate: info.sample_rate_hz,
            call_id: info.call_id.clone(),
            metadata: info.metadata.clone(),
            frame_ms: info.frame_ms,
        }
    }

    /// The message as JSON text.
    pub fn to_json(&self) -> String {
        // Cannot fail: string keys only, no non-serialisable values.
        serde_json::to_string(self).expect("client controls always serialise")
    }
}

fn default_frame_ms() -> u32 {
    DEFAULT_FRAME_MS
}

// A reference: serde's skip_serializing_if calls it with one.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_default_frame_ms(ms: &u32) -> bool {
    *ms == DEFAULT_FRAME_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_metrics_are_absent_from_the_json() {
        let ev = ServerEvent::TurnMetrics {
            turn: 3,
            metrics: TurnMetricsMs {
                llm_ttft_ms: Some(350.5),
                ..Default::default()
            },
        };
        assert_eq!(
            ev.to_json(),
            r#"{"type":"turn_metrics","turn":3,"llm_ttft_ms":350.5}"#
        );
        assert_eq!(ServerEvent::from_json(&ev.to_json()).unwrap(), ev);
    }

    #[test]
    fn engine_hops_round_trip_and_an_old_event_without_them_parses() {
        let ev = ServerEvent::TurnMetrics {
            turn: 1,
            metrics: TurnMetricsMs {
                turn_end_to_llm_ms: Some(0.042),
                tts_first_byte_to_transport_ms: Some(0.031),
                interrupt_to_clear_ms: Some(0.02),
                ..Default::default()
            },
        };
        assert_eq!(
            ev.to_json(),
            r#"{"type":"turn_metrics","turn":1,"turn_end_to_llm_ms":0.042,"tts_first_byte_to_transport_ms":0.031,"interrupt_to_clear_ms":0.02}"#
        );
        assert_eq!(ServerEvent::from_json(&ev.to_json()).unwrap(), ev);
        let old = r#"{"type":"turn_metrics","turn":2,"llm_ttft_ms":351.2}"#;
        let ServerEvent::TurnMetrics { metrics, .. } = ServerEvent::from_json(old).unwrap() else {
            panic!("not turn_metrics");
        };
        assert_eq!(metrics.turn_end_to_llm_ms, None);
    }

    #[test]
    fn unit_events_carry_only_their_type() {
        assert_eq!(ServerEvent::Clear.to_json(), r#"{"type":"clear"}"#);
        assert_eq!(
            ServerEvent::BotSpeakingStarted.to_json(),
            r#"{"type":"bot_speaking_started"}"#
        );
    }

    #[test]
    fn transcript_uses_final_on_the_wire() {
        let ev = ServerEvent::Transcript {
            text: "hi".into(),
            is_final: true,
        };
        assert_eq!(
            ev.to_json(),
            r#"{"type":"transcript","text":"hi","final":true}"#
        );
    }
}
