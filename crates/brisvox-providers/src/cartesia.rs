//! Cartesia Sonic text-to-speech over its websocket
//! (`wss://api.cartesia.ai/tts/websocket`).
//!
//! One socket per session, kept open across responses; one Cartesia context
//! per [`ContextId`]. Text chunks go out as generation requests with
//! `continue: true`; the flush sends an empty transcript with
//! `continue: false`, after which Cartesia answers `done`. A barge-in sends
//! `{"context_id": .., "cancel": true}`. Audio is raw `pcm_s16le` at the
//! configured rate (24 kHz by default), base64 in `chunk` messages.
//!
//! A context Cartesia refuses for capacity ("You have reached your
//! concurrency limit of N", or status 429) is re-opened after
//! [`CARTESIA_REFUSAL_RETRY_MS`] up to [`CARTESIA_REFUSAL_RETRIES`] times with
//! the text sent so far; only then does its error reach the engine.
//!
//! Documented behaviour this adapter follows (each decision's page):
//!
//! - **Auth.** `Authorization: Bearer <key>` and `Cartesia-Version` headers:
//!   "To use your API key, include Authorization: Bearer <api_key> in the HTTP
//!   headers" (<https://docs.cartesia.ai/api-reference>), and "Cartesia accepts
//!   both `X-Api-Key` and `Authorization` headers for server-side
//!   authentication", shown on `wss://api.cartesia.ai/tts/websocket`
//!   (<https://docs.cartesia.ai/get-started/authenticate-your-client-applications>).
//!   The `?api_key=` query parameter of the 2024-11-13 pages is not used: a
//!   key never enters a URL here.
//! - **Buffering.** Each request carries `max_buffer_delay_ms` (0 unless
//!   configured): brisvox sends segmenter-cut clauses, and Cartesia warns that
//!   clause-sized text with the 3000 ms default "may wait up to 3000ms for
//!   additional input before generating speech"
//!   (<https://docs.cartesia.ai/use-the-api/tts-websocket/buffering>).
//! - **Expiry.** "Contexts automatically expire 1 second after the last audio
//!   output is streamed out" (<https://docs.cartesia.ai/use-the-api/tts-websocket/contexts>):
//!   text that continues a context idle for [`CARTESIA_IDLE_ROTATE_MS`] after
//!   its last audio goes to a fresh context id, and a flush that finds the
//!   context idle ends it without a message (see [`crate::vendors`]' `ws_ctx`).
//! - **Word timing.** `add_timestamps: true`; `timestamps` messages
//!   (`word_timestamps {words, start, end}` in seconds from the context's
//!   start) become [`crate::TtsEvent::Words`].

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

use crate::tts::TtsSession;
use crate::vendors::ws_tts::{Incoming, TtsWire, WordsFrom, WsTtsSession, WsTtsTiming};
use crate::vendors::{ApiKey, connect_ws, safe_code};
use crate::{BoxFuture, ProviderError, TtsConfig, TtsProvider, WordTiming};

/// Cartesia's websocket endpoint.
pub const CARTESIA_URL: &str = "wss://api.cartesia.ai/tts/websocket";
/// The `Cartesia-Version` sent unless configured otherwise: the version whose
/// websocket reference the adapter and its fixtures follow
/// (<https://docs.cartesia.ai/2026-03-01/api-reference/tts/websocket>).
pub const CARTESIA_VERSION: &str = "2026-03-01";
/// A context idle this long after its last audio is treated as expired
/// (Cartesia expires it 1 s after its last audio streamed out; the margin
/// covers the network), in ms.
pub const CARTESIA_IDLE_ROTATE_MS: u64 = 600;
/// Pause before a refused context is re-opened, in ms.
pub const CARTESIA_REFUSAL_RETRY_MS: u64 = 300;
/// Re-openings of a refused context before the error is reported.
pub const CARTESIA_REFUSAL_RETRIES: u32 = 4;

/// Settings of a [`CartesiaTts`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CartesiaConfig {
    /// Websocket URL, [`CARTESIA_URL`] unless testing.
    pub url: String,
    /// Sent as `Authorization: Bearer`; never logged.
    pub api_key: ApiKey,
    /// `Cartesia-Version` header.
    pub version: String,
    /// Model used when [`TtsConfig::model`] is `None` (e.g. `sonic-2`).
    pub model: String,
    /// Voice id used when [`TtsConfig::voice`] is `None`.
    pub voice_id: String,
    /// Time allowed for TCP, TLS and the websocket upgrade, in ms.
    pub connect_timeout_ms: u64,
    /// Time from a context's first text to its first audio, in ms.
    pub first_audio_timeout_ms: u64,
    /// Pause before a refused context is re-opened, in ms.
    pub refusal_retry_ms: u64,
    /// Re-openings of a refused context.
    pub refusal_retries: u32,
    /// Interval of websocket pings on an idle session, in ms.
    pub keepalive_ms: u64,
    /// `max_buffer_delay_ms` sent with every request (0: speak each chunk at
    /// once; Cartesia's range 0 to 5000, its default 3000).
    pub max_buffer_delay_ms: u32,
    /// Ask for word timestamps (`add_timestamps`).
    pub word_timestamps: bool,
}

impl CartesiaConfig {
    /// Cartesia's endpoint with `model` and `voice_id`; 5 s to connect, 5 s to
    /// the first audio, 300 ms x 4 for refused contexts, a ping every 30 s.
    pub fn new(api_key: ApiKey, model: impl Into<String>, voice_id: impl Into<String>) -> Self {
        CartesiaConfig {
            url: CARTESIA_URL.to_owned(),
            api_key,
            version: CARTESIA_VERSION.to_owned(),
            model: model.into(),
            voice_id: voice_id.into(),
            connect_timeout_ms: 5_000,
            first_audio_timeout_ms: 5_000,
            refusal_retry_ms: CARTESIA_REFUSAL_RETRY_MS,
            refusal_retries: CARTESIA_REFUSAL_RETRIES,
            keepalive_ms: 30_000,
            max_buffer_delay_ms: 0,
            word_timestamps: true,
        }
    }

    /// The same settings with another `max_buffer_delay_ms` (clamped to 5000).
    #[must_use]
    pub fn with_max_buffer_delay_ms(mut self, ms: u32) -> Self {
        self.max_buffer_delay_ms = ms.min(5_000);
        self
    }

    /// The same settings with another websocket URL (a fake server).
    #[must_use]
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// The same settings with other timeouts (milliseconds).
    #[must_use]
    pub fn with_timeouts(mut self, connect_ms: u64, first_audio_ms: u64) -> Self {
        self.connect_timeout_ms = connect_ms;
        self.first_audio_timeout_ms = first_audio_ms;
        self
    }

    /// The same settings with another refused-context policy.
    #[must_use]
    pub fn with_refusal_retries(mut self, retries: u32, pause_ms: u64) -> Self {
        self.refusal_retries = retries;
        self.refusal_retry_ms = pause_ms;
        self
    }
}

/// Cartesia streaming TTS.
#[derive(Debug, Clone)]
pub struct CartesiaTts {
    config: Arc<CartesiaConfig>,
}

impl CartesiaTts {
    /// An adapter with `config`.
    pub fn new(config: CartesiaConfig) -> Self {
        CartesiaTts {
            config: Arc::new(config),
        }
    }
}

impl TtsProvider for CartesiaTts {
    fn connect(&self, config: TtsConfig) -> BoxFuture<'_, Result<TtsSession, ProviderError>> {
        Box::pin(async move {
            let c = &self.config;
            let headers = vec![
                (
                    HeaderName::from_static("authorization"),
                    c.api_key.header_value("Bearer ")?,
                ),
                (
                    HeaderName::from_static("cartesia-version"),
                    HeaderValue::from_str(&c.version)
                        .map_err(|_| ProviderError::connect("invalid Cartesia-Version"))?,
                ),
            ];
            let timeout = Duration::from_millis(c.connect_timeout_ms);
            let socket = connect_ws(&c.url, headers, timeout).await?;
            let wire = CartesiaWire::new(c, &config);
            let mut timing = WsTtsTiming::new(
                c.first_audio_timeout_ms,
                c.keepalive_ms,
                config.sample_rate_hz,
            );
            timing.refusal_retry_ms = c.refusal_retry_ms;
            timing.refusal_retries = c.refusal_retries;
            timing.idle_rotate_ms = Some(CARTESIA_IDLE_ROTATE_MS);
            let (session, backend) = TtsSession::channel();
            tokio::spawn(
                WsTtsSession::new(wire, socket, backend, timing)
                    .run()
                    .in_current_span(),
            );
            Ok(session)
        })
    }
}

/// Cartesia's message format for one session (sans-IO).
#[derive(Debug)]
pub struct CartesiaWire {
    /// The fields every generation request of the session repeats.
    base: serde_json::Map<String, Value>,
}

impl CartesiaWire {
    /// The format for `config` (model, voice, language, rate) over `defaults`.
    pub fn new(defaults: &CartesiaConfig, config: &TtsConfig) -> Self {
        let mut base = serde_json::Map::new();
        let model = config.model.as_deref().unwrap_or(&defaults.model);
        let voice = config.voice.as_deref().unwrap_or(&defaults.voice_id);
        base.insert("model_id".into(), json!(model));
        base.insert("voice".into(), json!({"mode": "id", "id": voice}));
        base.insert(
            "output_format".into(),
            json!({"container": "raw", "encoding": "pcm_s16le", "sample_rate": config.sample_rate_hz}),
        );
        if let Some(language) = &config.language {
            // Cartesia wants the primary subtag ("en", "tr").
            let primary = language.split(['-', '_']).next().unwrap_or(language);
            base.insert("language".into(), json!(primary.to_ascii_lowercase()));
        }
        base.insert(
            "max_buffer_delay_ms".into(),
            json!(defaults.max_buffer_delay_ms),
        );
        if defaults.word_timestamps {
            base.insert("add_timestamps".into(), json!(true));
        }
        CartesiaWire { base }
    }

    fn request(&self, wire: &str, transcript: &str, more: bool) -> String {
        let mut m = self.base.clone();
        m.insert("context_id".into(), json!(wire));
        m.insert("transcript".into(), json!(transcript));
        m.insert("continue".into(), json!(more));
        Value::Object(m).to_string()
    }
}

impl TtsWire for CartesiaWire {
    fn text(&self, wire: &str, text: &str, _first: bool) -> Vec<String> {
        vec![self.request(wire, text, true)]
    }

    fn flush(&self, wire: &str, _any_text: bool) -> Vec<String> {
        vec![self.request(wire, "", false)]
    }

    fn cancel(&self, wire: &str) -> String {
        json!({"context_id": wire, "cancel": true}).to_string()
    }

    fn keepalive(&self, _open: &[&str]) -> Vec<WsMessage> {
        vec![WsMessage::Ping(Vec::new().into())]
    }

    fn goodbye(&self) -> Option<String> {
        None
    }

    fn parse(&self, text: &str) -> Vec<Incoming> {
        vec![parse_message(text)]
    }

    fn close_error(&self, frame: Option<&CloseFrame>) -> ProviderError {
        close_error(frame)
    }
}

pub(crate) fn parse_message(text: &str) -> Incoming {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) else {
        return Incoming::SessionError(ProviderError::protocol("malformed Cartesia message"));
    };
    let field = |k: &str| m.get(k).and_then(Value::as_str);
    let wire = field("context_id").map(str::to_owned);
    match (field("type"), wire) {
        (Some("chunk"), Some(wire)) => {
            let Some(data) = field("data") else {
                return Incoming::SessionError(ProviderError::protocol("chunk without data"));
            };
            match base64::engine::general_purpose::STANDARD.decode(data) {
                Ok(pcm) => Incoming::Audio { wire, pcm },
                Err(_) => Incoming::SessionError(ProviderError::protocol("chunk data not base64")),
            }
        }
        (Some("done"), Some(wire)) => Incoming::Done { wire },
        (Some("error"), wire) => {
            let (error, refused) = error_of(&m);
            match wire {
                Some(wire) => Incoming::ContextError {
                    wire,
                    error,
                    refused,
                },
                None => Incoming::SessionError(error),
            }
        }
        (Some("timestamps"), Some(wire)) => timestamps(&m, wire),
        (Some("phoneme_timestamps" | "flush_done"), _) => Incoming::Ignore,
        (Some(_), _) => Incoming::Ignore,
        (None, _) => {
            Incoming::SessionError(ProviderError::protocol("Cartesia message without type"))
        }
    }
}

/// A `timestamps` message: `word_timestamps {words, start, end}` (seconds from
/// the context's first audio) as words; malformed timing is ignored, never fatal.
fn timestamps(m: &serde_json::Map<String, Value>, wire: String) -> Incoming {
    let t = m.get("word_timestamps");
    let list = |k: &str| t.and_then(|t| t.get(k)).and_then(Value::as_array);
    let (Some(words), Some(starts), Some(ends)) = (list("words"), list("start"), list("end"))
    else {
        return Incoming::Ignore;
    };
    let words = words
        .iter()
        .zip(starts)
        .zip(ends)
        .filter_map(|((w, s), e)| {
            Some(WordTiming::from_secs(
                w.as_str()?,
                0,
                s.as_f64()?,
                e.as_f64()?,
            ))
        })
        .collect();
    Incoming::Words {
        wire,
        words,
        from: WordsFrom::WireStart,
    }
}

/// The error of an `error` message and whether it is a capacity refusal.
fn error_of(m: &serde_json::Map<String, Value>) -> (ProviderError, bool) {
    let status = m.get("status_code").and_then(Value::as_u64).unwrap_or(0) as u16;
    let text = ["error", "message", "title"]
        .iter()
        .filter_map(|k| m.get(*k).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    let refused = status == 429 || text.contains("concurrency limit");
    let code = m
        .get("error_code")
        .and_then(Value::as_str)
        .and_then(safe_code);
    let error = match status {
        401 | 403 => ProviderError::Auth {
            status: Some(status),
        },
        _ if refused => ProviderError::RateLimited {
            retry_after_ms: None,
        },
        500..=599 => ProviderError::Server {
            status,
            reason: code
                .unwrap_or_else(|| "Cartesia server error".into())
                .into(),
        },
        _ => ProviderError::Server {
            status: if status == 0 { 400 } else { status },
            reason: code
                .unwrap_or_else(|| "Cartesia refused the request".into())
                .into(),
        },
    };
    (error, refused)
}

fn close_error(frame: Option<&CloseFrame>) -> ProviderError {
    match frame {
        Some(f) if u16::from(f.code) == 1008 => ProviderError::Auth { status: None },
        Some(f) => ProviderError::Disconnected {
            reason: format!("closed by Cartesia (code {})", u16::from(f.code)).into(),
        },
        None => ProviderError::disconnected("closed by Cartesia"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire() -> impl Fn(&str) -> Incoming {
        |text| parse_message(text)
    }

    fn codec() -> CartesiaWire {
        let defaults = CartesiaConfig::new(ApiKey::new("k"), "sonic-2", "voice-1");
        let config = TtsConfig {
            language: Some("en-US".into()),
            ..TtsConfig::default()
        };
        CartesiaWire::new(&defaults, &config)
    }

    #[test]
    fn requests_carry_the_documented_fields() {
        let w = codec();
        let text: Value = serde_json::from_str(&w.text("c1", "Hello, ", true)[0]).unwrap();
        assert_eq!(text["model_id"], "sonic-2");
        assert_eq!(text["voice"], json!({"mode": "id", "id": "voice-1"}));
        assert_eq!(
            text["output_format"],
            json!({"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000})
        );
        assert_eq!(text["language"], "en");
        assert_eq!(
            (&text["context_id"], &text["continue"]),
            (&json!("c1"), &json!(true))
        );
        let flush: Value = serde_json::from_str(&w.flush("c1", true)[0]).unwrap();
        assert_eq!(
            (&flush["transcript"], &flush["continue"]),
            (&json!(""), &json!(false))
        );
        let cancel: Value = serde_json::from_str(&w.cancel("c1")).unwrap();
        assert_eq!(cancel, json!({"context_id": "c1", "cancel": true}));
    }

    #[test]
    fn messages_parse() {
        let w = wire();
        let chunk = r#"{"type":"chunk","data":"AQACAA==","done":false,"status_code":206,"context_id":"c1"}"#;
        assert_eq!(
            w(chunk),
            Incoming::Audio {
                wire: "c1".into(),
                pcm: vec![1, 0, 2, 0]
            }
        );
        assert_eq!(
            w(r#"{"type":"done","done":true,"context_id":"c1"}"#),
            Incoming::Done { wire: "c1".into() }
        );
        assert_eq!(
            w(r#"{"type":"flush_done","context_id":"c1"}"#),
            Incoming::Ignore
        );
        let refused = r#"{"type":"error","context_id":"c1","status_code":429,"error":"You have reached your concurrency limit of 2"}"#;
        assert!(matches!(
            w(refused),
            Incoming::ContextError { refused: true, .. }
        ));
        let bad_model = r#"{"type":"error","context_id":"c1","status_code":400,"error_code":"model_not_found","error":"Invalid model"}"#;
        assert_eq!(
            w(bad_model),
            Incoming::ContextError {
                wire: "c1".into(),
                error: ProviderError::server(400, "model_not_found"),
                refused: false
            }
        );
        assert!(matches!(w("{oops"), Incoming::SessionError(_)));
        assert!(matches!(
            w(r#"{"type":"chunk","context_id":"c1","data":"***"}"#),
            Incoming::SessionError(_)
        ));
    }
}
