//! Batch transcription over an OpenAI-compatible `POST /v1/audio/transcriptions`
//! (OpenAI Whisper and `gpt-4o-transcribe`, Groq, a local faster-whisper or
//! whisper.cpp server): an [`SttProvider`] for services that do not stream.
//!
//! A session buffers the caller's audio. At [`SttSender::finalize`] (the VAD
//! stop) the utterance so far is sent as a 16-bit mono WAV in a multipart form
//! (`file`, `model`, `language`, `response_format=json`) and the answer's
//! `text` comes back as one [`SttEvent::Final`] with `from_finalize: true`;
//! the buffer then starts over. An empty utterance is answered with an empty
//! final without a request. Requests run one at a time, in order, while audio
//! of the next utterance keeps being buffered. There are no interims.
//!
//! The buffer holds at most [`OpenAiTranscribeOptions::max_utterance_ms`];
//! overflow policy: drop the oldest audio (the end of an utterance is what the
//! turn depends on), logged once per utterance.
//!
//! A failed request is reported as [`SttEvent::Error`] (typed: 401/403 auth,
//! 429 rate limit with `Retry-After`, 5xx server, unreadable answer, timeout,
//! dropped connection) in place of that utterance's final; the session goes
//! on. The key, if any, travels only in `Authorization: Bearer …`; local
//! servers may need none.
//!
//! [`SttSender::finalize`]: crate::SttSender::finalize

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::Deserialize;

use crate::error::redact_url;
use crate::stt::{SttBackend, SttInput};
use crate::{BoxFuture, ProviderError, SttConfig, SttEvent, SttProvider, SttSession};

/// OpenAI's API base.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Settings of a batch transcription provider. The session's [`SttConfig`]
/// overrides `model` and `language` when it sets them and gives the rate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiTranscribeOptions {
    /// API base; the request goes to `{base_url}/audio/transcriptions`
    /// (`https://api.openai.com/v1`, or `http://127.0.0.1:8000/v1` for a local server).
    pub base_url: String,
    /// Model (`whisper-1`, `gpt-4o-transcribe`, or the local server's name).
    pub model: String,
    /// Language hint (ISO-639-1, `en`), or `None` to let the service detect it.
    pub language: Option<String>,
    /// Deadline from sending a request to the response's headers (time to
    /// first byte; includes the upload).
    pub first_byte_timeout: Duration,
    /// Deadline for the whole request, body included.
    pub request_timeout: Duration,
    /// Longest utterance kept, in ms (older audio is dropped).
    pub max_utterance_ms: u32,
}

impl Default for OpenAiTranscribeOptions {
    fn default() -> Self {
        OpenAiTranscribeOptions {
            base_url: OPENAI_BASE_URL.to_owned(),
            model: "whisper-1".to_owned(),
            language: None,
            first_byte_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(20),
            max_utterance_ms: 30_000,
        }
    }
}

/// An OpenAI-compatible batch transcription service as an [`SttProvider`].
/// Cheap to clone; prints its key as `<redacted>`. Uses the process-wide
/// HTTP client ([`crate::openai_llm::shared_client`]).
#[derive(Clone)]
pub struct OpenAiTranscribe {
    key: Option<Arc<str>>,
    options: Arc<OpenAiTranscribeOptions>,
    client: reqwest::Client,
}

impl fmt::Debug for OpenAiTranscribe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiTranscribe")
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("options", &self.options)
            .finish()
    }
}

impl OpenAiTranscribe {
    /// A provider that sends `api_key` (if any) as a bearer token.
    pub fn new(api_key: Option<String>, options: OpenAiTranscribeOptions) -> Self {
        OpenAiTranscribe {
            key: api_key.filter(|k| !k.is_empty()).map(Arc::from),
            options: Arc::new(options),
            client: crate::openai_llm::shared_client().clone(),
        }
    }

    /// The transcription endpoint.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/audio/transcriptions",
            self.options.base_url.trim_end_matches('/')
        )
    }
}

impl SttProvider for OpenAiTranscribe {
    fn connect(&self, config: SttConfig) -> BoxFuture<'_, Result<SttSession, ProviderError>> {
        Box::pin(async move {
            let auth = match &self.key {
                Some(key) => {
                    let mut value =
                        HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                            ProviderError::connect("the API key is not a valid header value")
                        })?;
                    value.set_sensitive(true);
                    Some(value)
                }
                None => None,
            };
            let request = RequestTemplate {
                client: self.client.clone(),
                endpoint: Arc::from(self.endpoint()),
                auth,
                model: Arc::from(config.model.as_deref().unwrap_or(&self.options.model)),
                language: config
                    .language
                    .as_deref()
                    .or(self.options.language.as_deref())
                    .map(Arc::from),
                first_byte_timeout: self.options.first_byte_timeout,
                request_timeout: self.options.request_timeout,
            };
            let (session, backend) = SttSession::channel();
            let cap =
                u64::from(self.options.max_utterance_ms) * u64::from(config.sample_rate_hz) / 1000;
            let task = TranscribeTask {
                backend,
                request: Arc::new(request),
                sample_rate_hz: config.sample_rate_hz,
                buffer: Vec::new(),
                cap: usize::try_from(cap).unwrap_or(usize::MAX),
                overflowed: false,
                waiting: VecDeque::new(),
                in_flight: None,
                closing: false,
            };
            tokio::spawn(task.run().in_current_span());
            Ok(session)
        })
    }
}

/// Everything a request needs but the audio.
struct RequestTemplate {
    client: reqwest::Client,
    endpoint: Arc<str>,
    auth: Option<HeaderValue>,
    model: Arc<str>,
    language: Option<Arc<str>>,
    first_byte_timeout: Duration,
    request_timeout: Duration,
}

#[derive(Deserialize)]
struct TranscriptionAnswer {
    text: String,
}

impl RequestTemplate {
    /// Transcribes one utterance.
    async fn transcribe(&self, wav: Vec<u8>) -> Result<String, ProviderError> {
        let file = reqwest::multipart::Part::bytes(wav)
            .file_name("utterance.wav")
            .mime_str("audio/wav")
            // Cannot fail: a constant, valid MIME type.
            .expect("audio/wav is a valid MIME type");
        let mut form = reqwest::multipart::Form::new()
            .part("file", file)
            .text("model", self.model.to_string())
            .text("response_format", "json");
        if let Some(language) = &self.language {
            form = form.text("language", language.to_string());
        }
        let mut request = self
            .client
            .post(&*self.endpoint)
            .multipart(form)
            .timeout(self.request_timeout);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = tokio::time::timeout(self.first_byte_timeout, request.send())
            .await
            .map_err(|_| ProviderError::Timeout {
                waiting_for: "transcription response",
                after_ms: crate::deepgram::duration_ms(self.first_byte_timeout),
            })?
            .map_err(|e| self.request_error(&e))?;
        let status = response.status().as_u16();
        if status == 400 {
            let error = status_error(status, &response);
            let body = response.bytes().await.unwrap_or_default();
            // OpenAI answers audio under 0.1 s with 400 `audio_too_short`
            // ("Audio file is too short. Minimum audio length is 0.1
            // seconds."); gpt-4o-transcribe with `invalid_value` and "audio
            // duration ... is shorter than 0.1 seconds". Nothing was said:
            // an empty final, not an error.
            return if too_short(&body) {
                Ok(String::new())
            } else {
                Err(error)
            };
        }
        if !response.status().is_success() {
            return Err(status_error(status, &response));
        }
        let body = response.bytes().await.map_err(|e| self.request_error(&e))?;
        let answer: TranscriptionAnswer = serde_json::from_slice(&body)
            .map_err(|_| ProviderError::protocol("transcription answer without a text field"))?;
        Ok(answer.text.trim().to_owned())
    }

    fn request_error(&self, error: &reqwest::Error) -> ProviderError {
        let endpoint = redact_url(&self.endpoint);
        if error.is_timeout() {
            ProviderError::Timeout {
                waiting_for: "transcription",
                after_ms: crate::deepgram::duration_ms(self.request_timeout),
            }
        } else if error.is_connect() {
            ProviderError::Connect {
                reason: format!("could not reach {endpoint}").into(),
            }
        } else {
            ProviderError::Disconnected {
                reason: format!("transcription request to {endpoint} broke off").into(),
            }
        }
    }
}

/// Whether a 400 body says the audio was too short to transcribe.
fn too_short(body: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    let error = &value["error"];
    let code = error["code"].as_str().unwrap_or("");
    let message = error["message"].as_str().unwrap_or("").to_ascii_lowercase();
    code == "audio_too_short"
        || (code == "invalid_value" && message.contains("shorter than 0.1 seconds"))
}

fn status_error(status: u16, response: &reqwest::Response) -> ProviderError {
    match status {
        401 | 403 => ProviderError::Auth {
            status: Some(status),
        },
        429 => ProviderError::RateLimited {
            retry_after_ms: response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|s| s.saturating_mul(1000)),
        },
        _ => ProviderError::server(status, "transcription request refused"),
    }
}

/// A mono PCM16 WAV file of `samples` at `sample_rate_hz`.
pub fn wav_bytes(samples: &[i16], sample_rate_hz: u32) -> Vec<u8> {
    // A WAV holds at most 4 GiB; an utterance is capped far below that.
    let data_len = u32::try_from(samples.len() * 2).unwrap_or(u32::MAX);
    let mut wav = Vec::with_capacity(44 + samples.len() * 2);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&sample_rate_hz.to_le_bytes());
    wav.extend_from_slice(&(sample_rate_hz * 2).to_le_bytes()); // bytes per second
    wav.extend_from_slice(&2u16.to_le_bytes()); // block align
    wav.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.extend(samples.iter().flat_map(|s| s.to_le_bytes()));
    wav
}

type Transcription = Pin<Box<dyn Future<Output = Result<String, ProviderError>> + Send>>;

struct TranscribeTask {
    backend: SttBackend,
    request: Arc<RequestTemplate>,
    sample_rate_hz: u32,
    buffer: Vec<i16>,
    cap: usize,
    overflowed: bool,
    /// Utterances finalised but not yet sent, in order.
    waiting: VecDeque<Vec<i16>>,
    in_flight: Option<Transcription>,
    closing: bool,
}

/// Waits for the request in flight, or forever when there is none.
///
/// # Cancel safety
///
/// Cancel safe: the request stays in `slot` until it completes.
async fn in_flight(slot: &mut Option<Transcription>) -> Result<String, ProviderError> {
    match slot {
        Some(request) => request.await,
        None => std::future::pending().await,
    }
}

enum Step {
    Input(Option<SttInput>),
    Answered(Result<String, ProviderError>),
}

impl TranscribeTask {
    async fn run(mut self) {
        loop {
            if self.closing && self.in_flight.is_none() && self.waiting.is_empty() {
                break;
            }
            let step = tokio::select! {
                input = self.backend.recv(), if !self.closing => Step::Input(input),
                answer = in_flight(&mut self.in_flight) => Step::Answered(answer),
            };
            match step {
                Step::Input(Some(SttInput::Audio(frame))) => self.on_audio(frame.samples()),
                Step::Input(Some(SttInput::Finalize)) => {
                    let utterance = std::mem::take(&mut self.buffer);
                    self.overflowed = false;
                    self.waiting.push_back(utterance);
                }
                Step::Input(Some(SttInput::Close) | None) => self.closing = true,
                Step::Answered(answer) => {
                    self.in_flight = None;
                    let event = match answer {
                        Ok(text) => SttEvent::Final {
                            text,
                            confidence: None,
                            from_finalize: true,
                        },
                        Err(error) => {
                            tracing::warn!(%error, "transcription failed");
                            SttEvent::Error(error)
                        }
                    };
                    if self.backend.events.send(event).await.is_err() {
                        return;
                    }
                }
            }
            if self.in_flight.is_none()
                && let Some(utterance) = self.waiting.pop_front()
            {
                self.in_flight = Some(self.start(utterance));
            }
        }
        let _ = self.backend.events.send(SttEvent::Closed).await;
    }

    fn on_audio(&mut self, samples: &[i16]) {
        self.buffer.extend_from_slice(samples);
        let over = self.buffer.len().saturating_sub(self.cap);
        if over > 0 {
            self.buffer.drain(..over);
            if !self.overflowed {
                self.overflowed = true;
                tracing::warn!("utterance longer than max_utterance_ms; dropping its start");
            }
        }
    }

    fn start(&self, utterance: Vec<i16>) -> Transcription {
        if utterance.is_empty() {
            return Box::pin(async { Ok(String::new()) });
        }
        let wav = wav_bytes(&utterance, self.sample_rate_hz);
        let request = self.request.clone();
        Box::pin(async move { request.transcribe(wav).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wav_header_describes_mono_pcm16() {
        let wav = wav_bytes(&[1, -1, 2], 16_000);
        assert_eq!(wav.len(), 44 + 6);
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(u32::from_le_bytes(wav[4..8].try_into().unwrap()), 42);
        assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 16_000);
        assert_eq!(u32::from_le_bytes(wav[28..32].try_into().unwrap()), 32_000);
        assert_eq!(u32::from_le_bytes(wav[40..44].try_into().unwrap()), 6);
        assert_eq!(&wav[44..], &[1, 0, 0xff, 0xff, 2, 0]);
    }

    #[test]
    fn too_short_audio_is_recognised_from_the_error_body() {
        let openai = br#"{"error":{"message":"Audio file is too short. Minimum audio length is 0.1 seconds.","type":"invalid_request_error","param":"file","code":"audio_too_short"}}"#;
        assert!(too_short(openai));
        let gpt4o = br#"{"error":{"message":"audio duration 0.0 seconds is shorter than 0.1 seconds which is the minimum for this model","type":"invalid_request_error","param":null,"code":"invalid_value"}}"#;
        assert!(too_short(gpt4o));
        assert!(!too_short(
            br#"{"error":{"code":"invalid_value","message":"bad model"}}"#
        ));
        assert!(!too_short(b"not json"));
    }

    #[test]
    fn the_key_never_prints() {
        let t = OpenAiTranscribe::new(Some("sk-abc".into()), OpenAiTranscribeOptions::default());
        assert!(!format!("{t:?}").contains("sk-abc"));
        assert_eq!(
            t.endpoint(),
            "https://api.openai.com/v1/audio/transcriptions"
        );
    }
}
