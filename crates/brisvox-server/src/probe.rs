//! `brisvox check FILE --probe`: one minimal live request per vendor provider
//! the agent file configures, with the user's keys, so a bad key, model, voice
//! or rate shows before the first call instead of during it.
//!
//! Each probe goes through the same adapter a call uses (the agent file's
//! base URLs included, so the probes run against fakes in tests):
//!
//! - **STT** (Deepgram, OpenAI transcription): open a session (the key and
//!   the model are checked at the upgrade), send 300 ms of silence, finalize,
//!   and wait for the final.
//! - **LLM** (OpenAI-compatible): one request ("Say OK.", 5 tokens) and wait
//!   for the end of the answer; the first-token time is reported.
//! - **TTS** (Cartesia, ElevenLabs, Deepgram Aura): open a session, speak
//!   "Hello." with the agent's voice and language, and wait for its end; the
//!   rate the audio arrived at is compared with the rate asked for.
//!
//! Mock and local providers are listed as not probed. A probe costs what the
//! request costs at the vendor (a few characters of speech, a few tokens).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use brisvox_core::{AudioFrame, Epoch};
use brisvox_providers::{
    ContextId, LlmEvent, LlmRequest, Message, ProviderError, SttEvent, TtsEvent,
};
use tokio::time::Instant;

use crate::agent::{AgentSettings, LlmProvider, SttProvider, TtsProvider};
use crate::engine::{EngineSetupError, engine_config};
use crate::providers::{build_llm, build_stt, build_tts};

/// The text a TTS probe speaks.
pub const PROBE_TEXT: &str = "Hello.";

/// How one provider answered its probe.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeLine {
    /// `stt`, `llm` or `tts`.
    pub stage: &'static str,
    /// The provider's name in the agent file.
    pub provider: &'static str,
    /// What the probe saw: `None` when the provider was not probed.
    pub outcome: Option<Result<String, String>>,
}

/// Every provider's probe, in the order stt, llm, tts.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    /// One line per stage.
    pub lines: Vec<ProbeLine>,
}

impl ProbeReport {
    /// Whether no probe failed.
    pub fn ok(&self) -> bool {
        self.lines
            .iter()
            .all(|l| !matches!(l.outcome, Some(Err(_))))
    }
}

impl fmt::Display for ProbeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# probe: one live request per vendor provider")?;
        for l in &self.lines {
            let what = match &l.outcome {
                None => "not probed (not a vendor)".to_owned(),
                Some(Ok(ok)) => format!("ok: {ok}"),
                Some(Err(e)) => format!("FAILED: {e}"),
            };
            writeln!(f, "{:<4} {:<18} {what}", l.stage, l.provider)?;
        }
        Ok(())
    }
}

/// Probes every vendor provider of `agent`, each within `within`.
///
/// # Errors
///
/// A provider that cannot be built from the file (the same error `brisvox
/// serve` would give).
pub async fn probe(
    agent: &AgentSettings,
    within: Duration,
) -> Result<ProbeReport, EngineSetupError> {
    let config = engine_config(agent, brisvox_providers::tts::DEFAULT_TTS_RATE_HZ);
    let stt = match agent.stt.provider {
        SttProvider::Deepgram | SttProvider::OpenaiTranscribe => {
            Some(probe_stt(build_stt(agent)?, config.stt.clone(), within).await)
        }
        SttProvider::Mock | SttProvider::Local => None,
    };
    let llm = match agent.llm.provider {
        LlmProvider::OpenaiCompatible => Some(probe_llm(build_llm(agent)?, within).await),
        LlmProvider::Mock | LlmProvider::Local => None,
    };
    let tts = match agent.tts.provider {
        TtsProvider::Cartesia | TtsProvider::Elevenlabs | TtsProvider::DeepgramAura => {
            Some(probe_tts(build_tts(agent)?, config.tts.clone(), within).await)
        }
        TtsProvider::Mock | TtsProvider::Local => None,
    };
    Ok(ProbeReport {
        lines: vec![
            ProbeLine {
                stage: "stt",
                provider: agent.stt.provider.as_str(),
                outcome: stt,
            },
            ProbeLine {
                stage: "llm",
                provider: agent.llm.provider.as_str(),
                outcome: llm,
            },
            ProbeLine {
                stage: "tts",
                provider: agent.tts.provider.as_str(),
                outcome: tts,
            },
        ],
    })
}

/// A failure as advice: what was refused and what to check.
fn advice(error: &ProviderError) -> String {
    let hint = match error {
        ProviderError::Auth { .. } => "check the API key",
        ProviderError::RateLimited { .. } => "the key works; the account is at its limit",
        ProviderError::Server {
            status: 400..=499, ..
        } => "check the model, voice and options in the agent file",
        ProviderError::Server { .. } => "the vendor failed; try again",
        ProviderError::Connect { .. } | ProviderError::Timeout { .. } => {
            "check the base_url and the network"
        }
        _ => "see the error",
    };
    format!("{error} ({hint})")
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

async fn probe_stt(
    provider: Arc<dyn brisvox_providers::SttProvider>,
    config: brisvox_providers::SttConfig,
    within: Duration,
) -> Result<String, String> {
    let started = Instant::now();
    let deadline = started + within;
    let session = tokio::time::timeout_at(deadline, provider.connect(config))
        .await
        .map_err(|_| "no session within the probe's time".to_owned())?
        .map_err(|e| advice(&e))?;
    let connected = started.elapsed();
    let (sender, mut events) = session.split();
    // Silence cannot fail to make a frame: 20 ms at 16 kHz is a valid size.
    let frame = AudioFrame::silence(20, 16_000).expect("a 20 ms frame at 16 kHz");
    for _ in 0..15 {
        let _ = sender.send_audio(&frame);
    }
    let asked = Instant::now();
    sender
        .finalize()
        .await
        .map_err(|e| format!("the session ended: {e}"))?;
    let result = loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) => break Err("no final within the probe's time".to_owned()),
            Ok(Some(SttEvent::Final { .. })) => {
                break Ok(format!(
                    "session opened in {} ms, finalize answered in {} ms",
                    ms(connected),
                    ms(asked.elapsed())
                ));
            }
            Ok(Some(SttEvent::Error(e))) => break Err(advice(&e)),
            Ok(Some(SttEvent::Closed) | None) => break Err("the session closed".to_owned()),
            Ok(Some(_)) => {}
        }
    };
    let _ = sender.close().await;
    result
}

async fn probe_llm(
    provider: Arc<dyn brisvox_providers::LlmProvider>,
    within: Duration,
) -> Result<String, String> {
    let started = Instant::now();
    let deadline = started + within;
    let request = LlmRequest::new(vec![
        Message::system("Answer with one word."),
        Message::user("Say OK."),
    ])
    .with_max_tokens(5);
    let mut stream = provider.stream(request);
    let mut first = None;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return Err("no answer within the probe's time".to_owned()),
            Ok(Some(LlmEvent::TextDelta(_) | LlmEvent::ToolCallDelta { .. })) => {
                first.get_or_insert(started.elapsed());
            }
            Ok(Some(LlmEvent::Error(e))) => return Err(advice(&e)),
            Ok(Some(LlmEvent::Done) | None) => {
                return Ok(match first {
                    Some(t) => format!("first token in {} ms, answer complete", ms(t)),
                    None => "answer complete, without text (check max_tokens)".to_owned(),
                });
            }
            Ok(Some(_)) => {}
        }
    }
}

async fn probe_tts(
    provider: Arc<dyn brisvox_providers::TtsProvider>,
    config: brisvox_providers::TtsConfig,
    within: Duration,
) -> Result<String, String> {
    let asked_rate = config.sample_rate_hz;
    let started = Instant::now();
    let deadline = started + within;
    let mut session = tokio::time::timeout_at(deadline, provider.connect(config))
        .await
        .map_err(|_| "no session within the probe's time".to_owned())?
        .map_err(|e| advice(&e))?;
    let ctx = ContextId::new(Epoch(1), 0);
    let sender = session.sender().clone();
    let sent = async {
        sender.start_context(ctx).await?;
        sender.send_text(ctx, PROBE_TEXT).await?;
        sender.flush(ctx).await
    };
    sent.await.map_err(|e| format!("the session ended: {e}"))?;
    let spoke = Instant::now();
    let (mut first, mut samples, mut rate) = (None, 0usize, None);
    let result = loop {
        match tokio::time::timeout_at(deadline, session.recv()).await {
            Err(_) => break Err("no speech within the probe's time".to_owned()),
            Ok(Some(TtsEvent::Audio {
                samples: s,
                sample_rate_hz,
                ..
            })) => {
                first.get_or_insert(spoke.elapsed());
                samples += s.len();
                rate = Some(sample_rate_hz);
            }
            Ok(Some(TtsEvent::Done { .. })) => break tts_summary(first, samples, rate, asked_rate),
            Ok(Some(TtsEvent::Error { error, .. })) => break Err(advice(&error)),
            Ok(Some(TtsEvent::Closed) | None) => break Err("the session closed".to_owned()),
            Ok(Some(_)) => {}
        }
    };
    let _ = sender.close().await;
    result
}

fn tts_summary(
    first: Option<Duration>,
    samples: usize,
    rate: Option<u32>,
    asked_rate: u32,
) -> Result<String, String> {
    let (Some(first), Some(rate)) = (first, rate) else {
        return Err(format!(
            "no audio for {PROBE_TEXT:?} (check the voice and model)"
        ));
    };
    let speech_ms = samples as u64 * 1000 / u64::from(rate.max(1));
    let rate_note = if rate == asked_rate {
        format!("{rate} Hz as asked")
    } else {
        format!("{rate} Hz (asked {asked_rate} Hz; the engine resamples)")
    };
    Ok(format!(
        "first audio in {} ms, {speech_ms} ms of speech for {PROBE_TEXT:?}, {rate_note}",
        ms(first)
    ))
}
