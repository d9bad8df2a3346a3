//! The engine's events as the brisvox protocol's JSON events
//! (`docs/WEBSOCKET_PROTOCOL.md`), and a turn's metrics in milliseconds.
//!
//! [`WireEvents`] is the one place an [`EngineEvent`] becomes a [`ServerEvent`]:
//! every `bot_speaking_started` gets exactly one `bot_speaking_stopped`, a
//! turn's `turn_metrics` comes from the engine's [`EngineEvent::TurnMetrics`]
//! (once per turn), a refused control is an `error`, a key press a `dtmf`,
//! the bot's text a `bot_text` (and what of a cut answer was heard a
//! `bot_heard`), a turn without text a `turn_no_text`.
//! [`turn_metrics_ms`] is shared with `/metrics`, which observes the same
//! engine event.

use std::time::Duration;

use brisvox_core::timeline::{TurnEvent, TurnRecord};
use brisvox_engine::EngineEvent;
use brisvox_transport::brisvox_ws::{ServerEvent, TurnMetricsMs};

/// What the mapping remembers of a call.
#[derive(Debug, Default)]
pub(crate) struct WireEvents {
    /// A `bot_speaking_started` is open: every start gets exactly one stop.
    speaking: bool,
}

impl WireEvents {
    /// The protocol event for an engine event, if it has one.
    pub(crate) fn map(&mut self, event: EngineEvent) -> Option<ServerEvent> {
        match event {
            EngineEvent::Transcript { text, is_final } => {
                Some(ServerEvent::Transcript { text, is_final })
            }
            EngineEvent::BotSpeakingStarted { .. } if !self.speaking => {
                self.speaking = true;
                Some(ServerEvent::BotSpeakingStarted)
            }
            EngineEvent::BotSpeakingStopped { .. } if self.speaking => {
                self.speaking = false;
                Some(ServerEvent::BotSpeakingStopped { interrupted: false })
            }
            EngineEvent::Interrupted { .. } if self.speaking => {
                self.speaking = false;
                Some(ServerEvent::BotSpeakingStopped { interrupted: true })
            }
            EngineEvent::TurnMetrics { record } => Some(ServerEvent::TurnMetrics {
                turn: record.epoch().0,
                metrics: turn_metrics_ms(&record),
            }),
            EngineEvent::ControlRejected { code, message } => {
                Some(ServerEvent::Error { code, message })
            }
            EngineEvent::Dtmf { digit } => Some(ServerEvent::Dtmf {
                digit: digit.as_char().to_string(),
            }),
            EngineEvent::BotText { epoch, text } => Some(ServerEvent::BotText {
                turn: epoch.0,
                text,
            }),
            EngineEvent::Heard {
                epoch,
                sent,
                heard,
                played_ms,
            } => Some(ServerEvent::BotHeard {
                turn: epoch.0,
                heard,
                sent,
                played_ms,
            }),
            EngineEvent::TurnNoText {
                epoch,
                reason,
                speech,
                replied,
            } => Some(ServerEvent::TurnNoText {
                turn: epoch.0,
                reason: reason.as_str().to_owned(),
                speech_ms: speech.as_secs_f64() * 1000.0,
                replied,
            }),
            _ => None,
        }
    }
}

/// A turn's metrics in (fractional) milliseconds; unknown ones are `None`.
pub(crate) fn turn_metrics_ms(record: &TurnRecord) -> TurnMetricsMs {
    let m = record.metrics();
    let hops = record.engine_hops();
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
    TurnMetricsMs {
        end_of_turn_delay_ms: ms(m.end_of_turn_delay),
        stt_final_delay_ms: ms(m.stt_final_delay),
        llm_ttft_ms: ms(m.llm_ttft),
        tts_ttfb_ms: ms(m.tts_ttfb),
        response_latency_ms: ms(m.response_latency),
        time_to_silence_ms: ms(m.time_to_silence),
        turn_end_to_llm_ms: ms(hops.turn_end_to_llm),
        tts_first_byte_to_transport_ms: ms(hops.tts_first_byte_to_transport),
        interrupt_to_clear_ms: ms(hops.interrupt_to_clear),
        turn_verdict_delay_ms: ms(record.span(TurnEvent::UserSpeechEnd, TurnEvent::TurnVerdict)),
        waited_for: record.end_of_turn_waited_for().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use brisvox_core::Epoch;
    use brisvox_core::timeline::TimelineRecorder;

    use super::*;

    #[test]
    fn the_bot_s_words_carry_their_turn_and_a_cut_says_what_was_heard() {
        let mut wire = WireEvents::default();
        let text = wire.map(EngineEvent::BotText {
            epoch: Epoch(2),
            text: "We open at nine.".into(),
        });
        assert_eq!(
            text,
            Some(ServerEvent::BotText {
                turn: 2,
                text: "We open at nine.".into()
            })
        );
        let heard = wire.map(EngineEvent::Heard {
            epoch: Epoch(2),
            sent: "We open at nine. And close at five.".into(),
            heard: "We open at nine.".into(),
            played_ms: 1200,
        });
        let json = heard.expect("a bot_heard").to_json();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["type"], "bot_heard");
        assert_eq!(v["turn"], 2);
        assert_eq!(v["heard"], "We open at nine.");
        assert_eq!(v["sent"], "We open at nine. And close at five.");
        assert_eq!(v["played_ms"], 1200);
    }

    #[test]
    fn every_bot_speaking_start_gets_exactly_one_stop() {
        let mut wire = WireEvents::default();
        let start = EngineEvent::BotSpeakingStarted { epoch: Epoch(1) };
        assert_eq!(
            wire.map(start.clone()),
            Some(ServerEvent::BotSpeakingStarted)
        );
        assert_eq!(wire.map(start), None);
        assert_eq!(
            wire.map(EngineEvent::Interrupted {
                old: Epoch(1),
                new: Epoch(2)
            }),
            Some(ServerEvent::BotSpeakingStopped { interrupted: true })
        );
        assert_eq!(
            wire.map(EngineEvent::BotSpeakingStopped { epoch: Epoch(1) }),
            None
        );
    }

    #[test]
    fn turn_metrics_carry_the_engine_hops_in_fractional_ms() {
        let mut rec = TimelineRecorder::new();
        #[allow(clippy::disallowed_methods)] // a test origin
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        rec.mark(Epoch(1), TurnEvent::TurnEnd, us(0));
        rec.mark(Epoch(1), TurnEvent::LlmRequestSent, us(40));
        rec.mark(Epoch(1), TurnEvent::TtsFirstByte, us(500_000));
        rec.mark(Epoch(1), TurnEvent::FirstAudioOut, us(500_060));
        let record = Box::new(rec.open_turn().expect("open").clone());
        let Some(ServerEvent::TurnMetrics { turn, metrics }) =
            WireEvents::default().map(EngineEvent::TurnMetrics { record })
        else {
            panic!("no turn_metrics");
        };
        assert_eq!(turn, 1);
        let near = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-9);
        assert!(near(metrics.turn_end_to_llm_ms, 0.04), "{metrics:?}");
        assert!(
            near(metrics.tts_first_byte_to_transport_ms, 0.06),
            "{metrics:?}"
        );
        assert_eq!(metrics.interrupt_to_clear_ms, None);
    }
}
