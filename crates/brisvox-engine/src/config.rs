//! The settings of one call: turn-taking, VAD, audio rates, the agent's prompt,
//! the first TTS chunk, provider time limits and the stage queue capacities.
//!
//! [`EngineConfig::validate`] names the first setting that cannot work;
//! [`run_call`](crate::run_call) refuses to start a call with such a setting.

use std::sync::Arc;
use std::time::Duration;

use brisvox_models::vad::detector::{FallingHintImpossible, VadParams};
use brisvox_providers::{SttConfig, TtsConfig};
use brisvox_text::Language;

use brisvox_core::frame::INTERNAL_RATE_HZ;

use crate::turn::{TurnConfig, TurnConfigError};

/// Capacities of the stage inboxes. Every queue of a call is bounded; see the
/// stage modules for each overflow policy (all of them wait: backpressure
/// towards the provider, never an unbounded queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueCapacities {
    /// TurnDriver inbox (VAD, STT and output events), in messages.
    pub driver: usize,
    /// LLM stage inbox (response starts), in messages.
    pub llm: usize,
    /// Segmenter stage inbox (LLM deltas), in messages.
    pub segmenter: usize,
    /// TTS stage inbox (text chunks), in messages.
    pub tts: usize,
    /// Output stage inbox (framed audio), in frames.
    pub output: usize,
}

impl Default for QueueCapacities {
    fn default() -> Self {
        QueueCapacities {
            driver: 64,
            llm: 8,
            segmenter: 64,
            tts: 32,
            output: 16,
        }
    }
}

/// The energy VAD's settings: a window whose RMS reaches `speech_dbfs` is
/// speech (probability 1), anything else silence (probability 0). Meant for
/// tests and the simulator, where it makes the VAD exact and model-free.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyVadConfig {
    /// RMS level (dBFS, full scale 32768) from which a 32 ms window is speech.
    pub speech_dbfs: f32,
}

impl Default for EnergyVadConfig {
    /// -40 dBFS: about 15 dB over the fixtures' noise floor (-55 dBFS).
    fn default() -> Self {
        EnergyVadConfig { speech_dbfs: -40.0 }
    }
}

/// Time limits on the providers. A limit that passes fails the response (it is
/// counted as a [`ProviderError::Timeout`](brisvox_providers::ProviderError)),
/// never the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderLimits {
    /// From the LLM request to its first event.
    pub llm_first_token: Duration,
    /// From the first text sent to a TTS context to its first audio, and
    /// between two audio chunks of a context.
    pub tts_stall: Duration,
    /// How many times a lost STT session is reconnected before the call ends.
    pub stt_reconnects: u32,
}

impl Default for ProviderLimits {
    fn default() -> Self {
        ProviderLimits {
            llm_first_token: Duration::from_secs(5),
            tts_stall: Duration::from_secs(3),
            stt_reconnects: 1,
        }
    }
}

/// Early analysis (opt-in): Smart Turn starts at the VAD's falling hint and its
/// verdict answers the confirmed stop of the same fall (module docs of the
/// driver's early analysis). Needs `vad.fall_delay` set so that hints can be
/// sent ([`VadParams::check_falling_hint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlyAnalysisConfig {
    /// Most early analyses per user turn (renewed at each turn end).
    pub max_per_turn: u32,
    /// Most audio between the snapshot and the stop for the verdict to be reused.
    pub max_tail: Duration,
}

impl Default for EarlyAnalysisConfig {
    /// 4 analyses per turn, 300 ms of tail.
    fn default() -> Self {
        EarlyAnalysisConfig {
            max_per_turn: 4,
            max_tail: Duration::from_millis(300),
        }
    }
}

/// Everything one call needs besides its transport, providers and models.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// Turn-taking (policy, barge-in, idle guard, limits, greeting).
    pub turn: TurnConfig,
    /// The VAD stop rule (thresholds, min speech / silence, padding); used by
    /// both the Silero and the energy VAD.
    pub vad: VadParams,
    /// Rate of the transport's outgoing frames, in Hz (the input is always
    /// 16 kHz 20 ms frames: transports convert at the edge).
    pub output_rate_hz: u32,
    /// Duration of an outgoing frame, in milliseconds.
    pub output_frame_ms: u32,
    /// How the STT session is opened (its rate must be 16 kHz: the engine
    /// sends its internal frames).
    pub stt: SttConfig,
    /// How the TTS session is opened (voice, model, language, rate asked for).
    pub tts: TtsConfig,
    /// The agent's system message.
    pub system_prompt: Arc<str>,
    /// Language of the conversation (segmenter and normaliser tables).
    pub language: Language,
    /// Words the first TTS chunk of a response needs before a clause boundary may end it.
    pub first_chunk_words: usize,
    /// Most messages kept in the conversation besides the system message
    /// (oldest dropped first).
    pub max_history_messages: usize,
    /// Provider time limits.
    pub limits: ProviderLimits,
    /// Stage inbox capacities.
    pub queues: QueueCapacities,
    /// Settings of the energy VAD, when the call uses it.
    pub energy_vad: EnergyVadConfig,
    /// Early analysis at the VAD's falling hint; `None` (the default) is off.
    pub early_analysis: Option<EarlyAnalysisConfig>,
    /// How long a stop's Smart Turn analysis may wait for the stop's STT
    /// final (with `turn.require_final`) before it runs; zero (the default)
    /// runs it at the stop. The audio is taken at the stop either way, so the
    /// verdict is the same; it starts when the finals are in (the first
    /// moment it can end the turn), or when this hold ends, whichever comes
    /// first. A caller who goes on before then costs no analysis. The cost:
    /// when the final comes sooner than the hold plus one analysis, the
    /// verdict comes up to one analysis after the final instead of with it.
    pub analysis_hold: Duration,
    /// How tool calls run (rounds, timeout, filler).
    pub tools: crate::tools::ToolSettings,
    /// Said when the LLM fails during an answer (refused, failed before or
    /// after its first token, stalled past `limits.llm_first_token`): spoken
    /// after what the answer had said, kept in the conversation, and the call
    /// goes on listening. `None`: the answer just ends.
    pub apology: Option<Arc<str>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            turn: TurnConfig::default(),
            vad: VadParams::default(),
            output_rate_hz: 16_000,
            output_frame_ms: 20,
            stt: SttConfig::default(),
            tts: TtsConfig::default(),
            system_prompt: Arc::from("You are a helpful voice assistant. Answer briefly."),
            language: Language::En,
            first_chunk_words: brisvox_text::segment::FIRST_MIN_WORDS_EN,
            max_history_messages: 64,
            limits: ProviderLimits::default(),
            queues: QueueCapacities::default(),
            energy_vad: EnergyVadConfig::default(),
            early_analysis: None,
            analysis_hold: Duration::ZERO,
            tools: crate::tools::ToolSettings::default(),
            apology: None,
        }
    }
}

/// A setting that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineConfigError {
    /// A turn-taking setting.
    #[error("turn: {0}")]
    Turn(#[from] TurnConfigError),
    /// A value that must be positive is zero.
    #[error("{field} must be greater than zero")]
    Zero {
        /// The setting's name.
        field: &'static str,
    },
    /// The output frame does not fit an audio frame.
    #[error("{frame_ms} ms at {rate_hz} Hz is {samples} samples; a frame holds 1..={max}")]
    OutputFrame {
        /// The frame duration.
        frame_ms: u32,
        /// The output rate.
        rate_hz: u32,
        /// Samples per frame that would result.
        samples: u64,
        /// The most an audio frame holds.
        max: usize,
    },
    /// The VAD thresholds are out of order or out of 0..=1.
    #[error("vad thresholds must satisfy 0 <= negative ({negative}) <= positive ({positive}) <= 1")]
    VadThresholds {
        /// The silence threshold.
        negative: f32,
        /// The speech threshold.
        positive: f32,
    },
    /// The STT must take the engine's internal rate.
    #[error("stt.sample_rate_hz must be 16000 (the engine's internal rate), got {rate_hz}")]
    SttRate {
        /// The rate asked for.
        rate_hz: u32,
    },
    /// Early analysis is on but the VAD can send no falling hint.
    #[error("early_analysis needs a VAD falling hint: {0}")]
    EarlyAnalysis(#[from] FallingHintImpossible),
    /// The energy VAD threshold is not a level below full scale.
    #[error("energy_vad.speech_dbfs must be below 0 dBFS, got {0}")]
    EnergyThreshold(f32),
}

impl EngineConfig {
    /// Checks the settings, naming the first one that cannot work.
    pub fn validate(&self) -> Result<(), EngineConfigError> {
        self.turn.validate()?;
        let positive = |v: u64, field| {
            if v == 0 {
                Err(EngineConfigError::Zero { field })
            } else {
                Ok(())
            }
        };
        positive(u64::from(self.output_rate_hz), "output_rate_hz")?;
        positive(u64::from(self.tts.sample_rate_hz), "tts.sample_rate_hz")?;
        if self.stt.sample_rate_hz != INTERNAL_RATE_HZ {
            return Err(EngineConfigError::SttRate {
                rate_hz: self.stt.sample_rate_hz,
            });
        }
        positive(self.first_chunk_words as u64, "first_chunk_words")?;
        positive(self.max_history_messages as u64, "max_history_messages")?;
        positive(
            self.limits.llm_first_token.as_millis() as u64,
            "limits.llm_first_token",
        )?;
        positive(self.limits.tts_stall.as_millis() as u64, "limits.tts_stall")?;
        positive(self.tools.timeout.as_millis() as u64, "tools.timeout")?;
        let q = self.queues;
        for (v, field) in [
            (q.driver, "queues.driver"),
            (q.llm, "queues.llm"),
            (q.segmenter, "queues.segmenter"),
            (q.tts, "queues.tts"),
            (q.output, "queues.output"),
        ] {
            positive(v as u64, field)?;
        }
        if let Some(early) = self.early_analysis {
            positive(u64::from(early.max_per_turn), "early_analysis.max_per_turn")?;
            self.vad.check_falling_hint()?;
        }
        self.validate_audio()
    }

    fn validate_audio(&self) -> Result<(), EngineConfigError> {
        let samples = u64::from(self.output_rate_hz) * u64::from(self.output_frame_ms) / 1000;
        let max = brisvox_core::frame::MAX_FRAME_SAMPLES;
        if samples == 0 || samples > max as u64 {
            return Err(EngineConfigError::OutputFrame {
                frame_ms: self.output_frame_ms,
                rate_hz: self.output_rate_hz,
                samples,
                max,
            });
        }
        let (neg, pos) = (self.vad.negative_threshold, self.vad.positive_threshold);
        if !(0.0..=1.0).contains(&neg) || !(0.0..=1.0).contains(&pos) || neg > pos {
            return Err(EngineConfigError::VadThresholds {
                negative: neg,
                positive: pos,
            });
        }
        if self.energy_vad.speech_dbfs.is_nan() || self.energy_vad.speech_dbfs >= 0.0 {
            return Err(EngineConfigError::EnergyThreshold(
                self.energy_vad.speech_dbfs,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(EngineConfig::default().validate(), Ok(()));
    }

    #[test]
    fn bad_settings_are_named() {
        let mut cfg = EngineConfig::default();
        cfg.queues.output = 0;
        assert_eq!(
            cfg.validate(),
            Err(EngineConfigError::Zero {
                field: "queues.output"
            })
        );
        let cfg = EngineConfig {
            output_rate_hz: 96_000,
            output_frame_ms: 40,
            ..EngineConfig::default()
        };
        assert!(matches!(
            cfg.validate(),
            Err(EngineConfigError::OutputFrame { samples: 3840, .. })
        ));
        let mut cfg = EngineConfig::default();
        cfg.vad.negative_threshold = 0.9;
        assert!(matches!(
            cfg.validate(),
            Err(EngineConfigError::VadThresholds { .. })
        ));
        let mut cfg = EngineConfig {
            early_analysis: Some(EarlyAnalysisConfig::default()),
            ..EngineConfig::default()
        };
        assert_eq!(
            cfg.validate(),
            Err(EngineConfigError::EarlyAnalysis(
                FallingHintImpossible::Disabled
            ))
        );
        cfg.vad.fall_delay = Some(Duration::from_millis(64));
        assert_eq!(cfg.validate(), Ok(()));
        cfg.vad.fall_delay = Some(Duration::from_millis(100));
        assert!(matches!(
            cfg.validate(),
            Err(EngineConfigError::EarlyAnalysis(_))
        ));
        let mut cfg = EngineConfig::default();
        cfg.turn.final_timeout = Duration::ZERO;
        assert!(matches!(cfg.validate(), Err(EngineConfigError::Turn(_))));
    }
}
