//! ElevenLabs text-to-speech over its multi-context websocket
//! (`wss://api.elevenlabs.io/v1/text-to-speech/{voice_id}/multi-stream-input`).
//!
//! One socket per session, kept open across responses; one ElevenLabs context
//! per [`ContextId`]. Text chunks go out as `{"text", "context_id"}` (each
//! ending in a space, as ElevenLabs asks); the end of a response sends
//! `{"context_id", "flush": true}` then
//! `{"context_id", "close_context": true}`, and the context's `isFinal`
//! message becomes [`crate::TtsEvent::Done`]. A barge-in sends
//! `close_context` at once. Audio is `pcm_{rate}` (24 kHz by default), base64
//! in `audio` fields tagged with `contextId`.
//!
//! Keep-alive: the URL asks for the longest `inactivity_timeout` (180 s), and
//! while nothing else is sent each open context gets an empty text message
//! every [`ElevenLabsConfig::keepalive_ms`] (which resets its timeout without
//! producing audio), plus a websocket ping for the connection.
//!
//! The key travels in the `xi-api-key` header, never in the URL.
//!
//! Documented behaviour this adapter follows (each decision's page):
//!
//! - **No chunk schedule.** The URL asks for `auto_mode=true`: "Reduces latency
//!   by disabling chunk schedule and buffers. Recommended for full
//!   sentences/phrases"; without it the first audio waits for the default
//!   `chunk_length_schedule` of 120 characters
//!   (<https://elevenlabs.io/docs/api-reference/text-to-speech/v-1-text-to-speech-voice-id-multi-stream-input>).
//!   brisvox sends segmenter-cut phrases, the case auto mode is for.
//! - **End of a context.** The reference's schema names the last message
//!   `isFinal`; the multi-context guide's own receiver reads `is_final`
//!   (<https://elevenlabs.io/docs/eleven-api/guides/how-to/websockets/multi-context-web-socket>).
//!   Both are accepted.
//! - **Five contexts.** "Each connection is limited to 5 concurrent contexts"
//!   (same guide): a new context waits while five are open or closing, so a
//!   run of barge-ins never makes ElevenLabs close the socket
//!   (`max_active_conversations`).
//! - **Word timing.** `sync_alignment=true` ("Whether to include timing data
//!   with every audio chunk"); `alignment` (characters with start times and
//!   durations in ms, "relative to the returned chunk") becomes
//!   [`crate::TtsEvent::Words`].

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::http::HeaderName;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

use crate::tts::TtsSession;
use crate::vendors::ws_tts::{Incoming, TtsWire, WordsFrom, WsTtsSession, WsTtsTiming};
use crate::vendors::{ApiKey, connect_ws, safe_code};
use crate::words::words_from_chars;
use crate::{BoxFuture, ProviderError, TtsConfig, TtsProvider, WordTiming};

/// ElevenLabs' websocket root.
pub const ELEVENLABS_BASE_URL: &str = "wss://api.elevenlabs.io";
/// PCM rates ElevenLabs offers as `pcm_{rate}`, in Hz.
pub const ELEVENLABS_PCM_RATES_HZ: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 44_100];
/// Contexts ElevenLabs keeps open on one socket.
pub const ELEVENLABS_MAX_CONTEXTS: usize = 5;

/// Settings of an [`ElevenLabsTts`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElevenLabsConfig {
    /// Websocket root, [`ELEVENLABS_BASE_URL`] unless testing.
    pub base_url: String,
    /// Sent as `xi-api-key`; never logged.
    pub api_key: ApiKey,
    /// Model used when [`TtsConfig::model`] is `None` (e.g. `eleven_flash_v2_5`).
    pub model: String,
    /// Voice id used when [`TtsConfig::voice`] is `None`.
    pub voice_id: String,
    /// `inactivity_timeout` asked for in the URL, in seconds (at most 180).
    pub inactivity_timeout_s: u32,
    /// Time allowed for TCP, TLS and the websocket upgrade, in ms.
    pub connect_timeout_ms: u64,
    /// Time from a context's first text to its first audio, in ms.
    pub first_audio_timeout_ms: u64,
    /// Interval of keep-alive messages while nothing else is sent, in ms.
    pub keepalive_ms: u64,
    /// `auto_mode` in the URL (no chunk schedule; on by default).
    pub auto_mode: bool,
    /// `sync_alignment` in the URL (word timing with every chunk).
    pub sync_alignment: bool,
}

impl ElevenLabsConfig {
    /// ElevenLabs' endpoint with `model` and `voice_id`; 5 s to connect, 5 s
    /// to the first audio, keep-alive every 10 s, inactivity timeout 180 s.
    pub fn new(api_key: ApiKey, model: impl Into<String>, voice_id: impl Into<String>) -> Self {
        ElevenLabsConfig {
            base_url: ELEVENLABS_BASE_URL.to_owned(),
            api_key,
            model: model.into(),
            voice_id: voice_id.into(),
            inactivity_timeout_s: 180,
            connect_timeout_ms: 5_000,
            first_audio_timeout_ms: 5_000,
            keepalive_ms: 10_000,
            auto_mode: true,
            sync_alignment: true,
        }
    }

    /// The same settings with another websocket root (a fake server).
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// The same settings with other timeouts (milliseconds).
    #[must_use]
    pub fn with_timeouts(mut self, connect_ms: u64, first_audio_ms: u64) -> Self {
        self.connect_timeout_ms = connect_ms;
        self.first_audio_timeout_ms = first_audio_ms;
        self
    }

    /// The same settings with another keep-alive interval (milliseconds).
    #[must_use]
    pub fn with_keepalive(mut self, keepalive_ms: u64) -> Self {
        self.keepalive_ms = keepalive_ms;
        self
    }

    /// The websocket URL for `config` and the PCM rate it will deliver, in Hz
    /// (the asked rate if ElevenLabs offers it, else 24 kHz).
    pub fn url(&self, config: &TtsConfig) -> (String, u32) {
        let rate = if ELEVENLABS_PCM_RATES_HZ.contains(&config.sample_rate_hz) {
            config.sample_rate_hz
        } else {
            24_000
        };
        let voice = config.voice.as_deref().unwrap_or(&self.voice_id);
        let model = config.model.as_deref().unwrap_or(&self.model);
        let mut url = format!(
            "{}/v1/text-to-speech/{}/multi-stream-input?model_id={}&output_format=pcm_{rate}&inactivity_timeout={}",
            self.base_url.trim_end_matches('/'),
            url_part(voice),
            url_part(model),
            self.inactivity_timeout_s.min(180),
        );
        if self.auto_mode {
            url.push_str("&auto_mode=true");
        }
        if self.sync_alignment {
            url.push_str("&sync_alignment=true");
        }
        if let Some(language) = &config.language {
            let primary = language.split(['-', '_']).next().unwrap_or(language);
            url.push_str(&format!(
                "&language_code={}",
                url_part(&primary.to_ascii_lowercase())
            ));
        }
        (url, rate)
    }
}

/// `s` with every byte outside `[A-Za-z0-9._-]` percent-encoded.
fn url_part(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// ElevenLabs multi-context streaming TTS.
#[derive(Debug, Clone)]
pub struct ElevenLabsTts {
    config: Arc<ElevenLabsConfig>,
}

impl ElevenLabsTts {
    /// An adapter with `config`.
    pub fn new(config: ElevenLabsConfig) -> Self {
        ElevenLabsTts {
            config: Arc::new(config),
        }
    }
}

impl TtsProvider for ElevenLabsTts {
    fn connect(&self, config: TtsConfig) -> BoxFuture<'_, Result<TtsSession, ProviderError>> {
        Box::pin(async move {
            let c = &self.config;
            let (url, rate) = c.url(&config);
            let headers = vec![(
                HeaderName::from_static("xi-api-key"),
                c.api_key.header_value("")?,
            )];
            let socket =
                connect_ws(&url, headers, Duration::from_millis(c.connect_timeout_ms)).await?;
            let mut timing = WsTtsTiming::new(c.first_audio_timeout_ms, c.keepalive_ms, rate);
            timing.max_open_contexts = Some(ELEVENLABS_MAX_CONTEXTS);
            let (session, backend) = TtsSession::channel();
            tokio::spawn(
                WsTtsSession::new(ElevenLabsWire, socket, backend, timing)
                    .run()
                    .in_current_span(),
            );
            Ok(session)
        })
    }
}

/// ElevenLabs' multi-context message format (sans-IO).
#[derive(Debug, Clone, Copy, Default)]
pub struct ElevenLabsWire;

impl TtsWire for ElevenLabsWire {
    fn text(&self, wire: &str, text: &str, _first: bool) -> Vec<String> {
        let text = if text.ends_with(char::is_whitespace) {
            text.to_owned()
        } else {
            format!("{text} ")
        };
        vec![json!({"text": text, "context_id": wire}).to_string()]
    }

    fn flush(&self, wire: &str, _any_text: bool) -> Vec<String> {
        // As the multi-context guide's `flush_context` and its last context.
        vec![
            json!({"context_id": wire, "flush": true}).to_string(),
            json!({"context_id": wire, "close_context": true}).to_string(),
        ]
    }

    fn cancel(&self, wire: &str) -> String {
        json!({"context_id": wire, "close_context": true}).to_string()
    }

    fn keepalive(&self, open: &[&str]) -> Vec<WsMessage> {
        let mut out: Vec<WsMessage> = open
            .iter()
            .map(|w| WsMessage::text(json!({"context_id": w, "text": ""}).to_string()))
            .collect();
        out.push(WsMessage::Ping(Vec::new().into()));
        out
    }

    fn goodbye(&self) -> Option<String> {
        Some(json!({"close_socket": true}).to_string())
    }

    fn parse(&self, text: &str) -> Vec<Incoming> {
        parse_message(text)
    }

    fn close_error(&self, frame: Option<&CloseFrame>) -> ProviderError {
        close_error(frame)
    }
}

pub(crate) fn parse_message(text: &str) -> Vec<Incoming> {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) else {
        return vec![Incoming::SessionError(ProviderError::protocol(
            "malformed ElevenLabs message",
        ))];
    };
    let wire = m
        .get("contextId")
        .or_else(|| m.get("context_id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if m.get("error").is_some_and(|e| !e.is_null()) {
        let error = error_of(&m);
        return vec![match wire {
            Some(wire) => Incoming::ContextError {
                wire,
                error,
                refused: false,
            },
            None => Incoming::SessionError(error),
        }];
    }
    let Some(wire) = wire else {
        return vec![Incoming::Ignore];
    };
    let mut out = Vec::new();
    match m.get("audio") {
        Some(Value::String(audio)) if !audio.is_empty() => {
            match base64::engine::general_purpose::STANDARD.decode(audio) {
                Ok(pcm) => out.push(Incoming::Audio {
                    wire: wire.clone(),
                    pcm,
                }),
                Err(_) => {
                    return vec![Incoming::SessionError(ProviderError::protocol(
                        "audio not base64",
                    ))];
                }
            }
        }
        None | Some(Value::Null | Value::String(_)) => {}
        Some(_) => {
            return vec![Incoming::SessionError(ProviderError::protocol(
                "audio not a string",
            ))];
        }
    }
    if let Some(words) = alignment(&m) {
        out.push(Incoming::Words {
            wire: wire.clone(),
            words,
            from: WordsFrom::ChunkStart,
        });
    }
    let is_final = |k: &str| m.get(k).and_then(Value::as_bool) == Some(true);
    if is_final("isFinal") || is_final("is_final") {
        out.push(Incoming::Done { wire });
    }
    out
}

/// The words of an `alignment` (the text as sent; `normalizedAlignment` as a
/// fallback), or `None` when absent or malformed.
fn alignment(m: &serde_json::Map<String, Value>) -> Option<Vec<WordTiming>> {
    let a = ["alignment", "normalizedAlignment"]
        .iter()
        .filter_map(|k| m.get(*k))
        .find(|a| a.is_object())?;
    let chars: Vec<String> = a
        .get("chars")?
        .as_array()?
        .iter()
        .map(|c| c.as_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let numbers =
        |k: &str| -> Option<Vec<u64>> { a.get(k)?.as_array()?.iter().map(Value::as_u64).collect() };
    let words = words_from_chars(
        &chars,
        &numbers("charStartTimesMs")?,
        &numbers("charDurationsMs")?,
        0,
    );
    (!words.is_empty()).then_some(words)
}

/// The error of an `error` message: its code decides the kind; the
/// free-text `message` is never used.
fn error_of(m: &serde_json::Map<String, Value>) -> ProviderError {
    let code = m
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    if code.contains("auth") || code.contains("api_key") || code.contains("unauthorized") {
        ProviderError::Auth { status: None }
    } else if code.contains("max_active")
        || code.contains("rate")
        || code.contains("concurrent")
        || code.contains("quota")
    {
        ProviderError::RateLimited {
            retry_after_ms: None,
        }
    } else {
        ProviderError::Server {
            status: 400,
            reason: safe_code(&code)
                .unwrap_or_else(|| "ElevenLabs error".into())
                .into(),
        }
    }
}

fn close_error(frame: Option<&CloseFrame>) -> ProviderError {
    let Some(frame) = frame else {
        return ProviderError::disconnected("closed by ElevenLabs");
    };
    let code = u16::from(frame.code);
    let reason = frame.reason.to_ascii_lowercase();
    if code == 1008
        && (reason.contains("api key") || reason.contains("api_key") || reason.contains("auth"))
    {
        ProviderError::Auth { status: None }
    } else if code == 1008 && (reason.contains("max") || reason.contains("limit")) {
        ProviderError::RateLimited {
            retry_after_ms: None,
        }
    } else {
        ProviderError::Disconnected {
            reason: format!("closed by ElevenLabs (code {code})").into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_carries_model_format_and_timeout_but_no_key() {
        let config =
            ElevenLabsConfig::new(ApiKey::new("xi-secret"), "eleven_flash_v2_5", "voice 1");
        let (url, rate) = config.url(&TtsConfig {
            language: Some("tr-TR".into()),
            ..TtsConfig::default()
        });
        assert_eq!(
            url,
            "wss://api.elevenlabs.io/v1/text-to-speech/voice%201/multi-stream-input?model_id=eleven_flash_v2_5&output_format=pcm_24000&inactivity_timeout=180&auto_mode=true&sync_alignment=true&language_code=tr"
        );
        assert_eq!(rate, 24_000);
        let (url, rate) = config.url(&TtsConfig {
            sample_rate_hz: 12_345,
            ..TtsConfig::default()
        });
        assert!(url.contains("pcm_24000") && rate == 24_000 && !url.contains("xi-secret"));
    }

    #[test]
    fn messages_follow_the_multi_context_protocol() {
        let w = ElevenLabsWire;
        let t: Value = serde_json::from_str(&w.text("c1", "Hello,", true)[0]).unwrap();
        assert_eq!(t, json!({"text": "Hello, ", "context_id": "c1"}));
        let f: Vec<Value> = w
            .flush("c1", true)
            .iter()
            .map(|m| serde_json::from_str(m).unwrap())
            .collect();
        assert_eq!(f[0], json!({"context_id": "c1", "flush": true}));
        assert_eq!(f[1], json!({"context_id": "c1", "close_context": true}));
        let c: Value = serde_json::from_str(&w.cancel("c1")).unwrap();
        assert_eq!(c, json!({"context_id": "c1", "close_context": true}));
    }

    #[test]
    fn responses_parse() {
        assert_eq!(
            parse_message(
                r#"{"audio":"AQA=","isFinal":false,"contextId":"c1","normalizedAlignment":null}"#
            ),
            vec![Incoming::Audio {
                wire: "c1".into(),
                pcm: vec![1, 0]
            }]
        );
        assert_eq!(
            parse_message(r#"{"audio":"AQA=","isFinal":true,"contextId":"c1"}"#),
            vec![
                Incoming::Audio {
                    wire: "c1".into(),
                    pcm: vec![1, 0]
                },
                Incoming::Done { wire: "c1".into() }
            ]
        );
        assert_eq!(
            parse_message(r#"{"isFinal":true,"contextId":"c1"}"#),
            vec![Incoming::Done { wire: "c1".into() }]
        );
        assert_eq!(
            parse_message(
                r#"{"message":"Maximum simultaneous contexts","error":"max_active_conversations","code":1008}"#
            ),
            vec![Incoming::SessionError(ProviderError::RateLimited {
                retry_after_ms: None
            })]
        );
        assert!(matches!(parse_message("[1]")[0], Incoming::SessionError(_)));
        assert!(matches!(
            parse_message(r#"{"audio":"%%","contextId":"c1"}"#)[0],
            Incoming::SessionError(_)
        ));
    }
}
