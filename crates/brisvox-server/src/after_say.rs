//! A control sent once a `say` has been heard: the agent link's `call.end`
//! with `say` (then the hang-up) and the built-in `transfer_call` tool (then
//! the transfer) speak first and act when the caller has heard it.
//!
//! [`AfterSay`] is an [`EventObserver`] of the call's events: it finds the
//! say's answer by its text (the first `BotText` the say contains) and, when
//! that answer stops (played out, or cut by the caller), sends the control
//! into the call's source. A timer sends it anyway after the given limit, so
//! a say that never plays cannot keep the call up.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_engine::{Control, EngineEvent, EventObserver};
use tokio::sync::mpsc;

/// Sends a control into the call once a say has played out.
#[derive(Debug)]
pub struct AfterSay {
    pending: Mutex<Option<Pending>>,
    controls: mpsc::Sender<Control>,
}

#[derive(Debug)]
struct Pending {
    text: String,
    epoch: Option<Epoch>,
    then: Control,
}

impl AfterSay {
    /// Sends its controls to `controls` (merged into the call's source).
    pub fn new(controls: mpsc::Sender<Control>) -> Arc<Self> {
        Arc::new(AfterSay {
            pending: Mutex::new(None),
            controls,
        })
    }

    /// Queues `say` (after the bot's answer, not interrupting it) and sends
    /// `then` when it has played out, or after `limit`. Replaces a control
    /// still waiting.
    pub async fn say_then(self: &Arc<Self>, say: String, then: Control, limit: Duration) {
        *self.lock() = Some(Pending {
            text: say.clone(),
            epoch: None,
            then,
        });
        let say = Control::Say {
            text: say,
            interrupt: false,
        };
        let _ = self.controls.send(say).await;
        let me = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            me.fire();
        });
    }

    /// True while a control waits for its say.
    pub fn waiting(&self) -> bool {
        self.lock().is_some()
    }

    fn fire(&self) {
        if let Some(pending) = self.lock().take() {
            // A full or closed source: the call is ending anyway.
            let _ = self.controls.try_send(pending.then);
        }
    }

    /// True when `event` ends the say's answer.
    fn done_by(&self, event: &EngineEvent) -> bool {
        let mut state = self.lock();
        let Some(pending) = state.as_mut() else {
            return false;
        };
        match event {
            EngineEvent::BotText { epoch, text }
                if pending.epoch.is_none()
                    && !text.trim().is_empty()
                    && pending.text.contains(text.trim()) =>
            {
                pending.epoch = Some(*epoch);
                false
            }
            EngineEvent::BotSpeakingStopped { epoch }
            | EngineEvent::Interrupted { old: epoch, .. } => pending.epoch == Some(*epoch),
            _ => false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EventObserver for AfterSay {
    fn observe(&self, event: &EngineEvent) {
        if self.done_by(event) {
            self.fire();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer() -> Control {
        Control::Transfer {
            to: "+15550100".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_control_follows_the_say_once_it_has_played() {
        let (tx, mut rx) = mpsc::channel(4);
        let after = AfterSay::new(tx);
        after
            .say_then("Please hold.".into(), transfer(), Duration::from_secs(30))
            .await;
        assert!(matches!(
            rx.try_recv(),
            Ok(Control::Say {
                interrupt: false,
                ..
            })
        ));
        // Another answer stopping does not count; the say's own does.
        after.observe(&EngineEvent::BotSpeakingStopped { epoch: Epoch(1) });
        after.observe(&EngineEvent::BotText {
            epoch: Epoch(2),
            text: "Please hold.".into(),
        });
        assert!(rx.try_recv().is_err());
        after.observe(&EngineEvent::BotSpeakingStopped { epoch: Epoch(2) });
        assert_eq!(rx.try_recv().ok(), Some(transfer()));
        assert!(!after.waiting());
    }

    #[tokio::test(start_paused = true)]
    async fn a_say_that_never_plays_is_given_up_after_the_limit() {
        let (tx, mut rx) = mpsc::channel(4);
        let after = AfterSay::new(tx);
        after
            .say_then("Bye.".into(), transfer(), Duration::from_secs(30))
            .await;
        let _say = rx.recv().await;
        assert_eq!(rx.recv().await, Some(transfer()), "sent at the limit");
    }
}
