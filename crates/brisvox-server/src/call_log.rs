//! The logs as a consumer of a call's events: [`CallLog`] observes the
//! engine's events (synchronously, one line per event worth a line) with the
//! call's id, so the log of a call does not depend on its socket.

use brisvox_engine::{EngineEvent, EventObserver};

/// Logs one call's events.
#[derive(Debug)]
pub(crate) struct CallLog {
    call_id: String,
}

impl CallLog {
    /// A log for the call `call_id`.
    pub(crate) fn new(call_id: &str) -> Self {
        CallLog {
            call_id: call_id.to_owned(),
        }
    }
}

impl EventObserver for CallLog {
    fn observe(&self, event: &EngineEvent) {
        let call_id = self.call_id.as_str();
        match event {
            EngineEvent::CallStarted { metadata, .. } => {
                tracing::debug!(
                    call_id,
                    metadata_keys = metadata.len(),
                    "engine call started"
                );
            }
            EngineEvent::MetadataUpdated { metadata } => {
                tracing::debug!(
                    call_id,
                    metadata_keys = metadata.len(),
                    "call metadata updated"
                );
            }
            EngineEvent::Transcript {
                text,
                is_final: true,
            } => tracing::debug!(call_id, chars = text.chars().count(), "final transcript"),
            EngineEvent::Dtmf { digit } => {
                tracing::info!(call_id, digit = %digit.as_char(), "dtmf");
            }
            EngineEvent::ControlRejected { code, message } => {
                tracing::info!(call_id, code, message, "control rejected");
            }
            EngineEvent::Interrupted { old, new } => {
                tracing::debug!(call_id, old = old.0, new = new.0, "bot interrupted");
            }
            EngineEvent::TurnNoText {
                epoch,
                reason,
                speech,
                replied,
            } => tracing::info!(
                call_id,
                turn = epoch.0,
                reason = reason.as_str(),
                speech_ms = speech.as_millis() as u64,
                replied,
                "a turn produced no text"
            ),
            EngineEvent::TurnMetrics { record } => {
                let ms = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
                let m = record.metrics();
                tracing::info!(
                    call_id,
                    turn = record.epoch().0,
                    response_latency_ms = ms(m.response_latency),
                    end_of_turn_delay_ms = ms(m.end_of_turn_delay),
                    time_to_silence_ms = ms(m.time_to_silence),
                    "turn metrics"
                );
            }
            _ => {}
        }
    }
}
