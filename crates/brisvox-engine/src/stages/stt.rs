//! The STT stage: the session's transcript events to the turn driver, the
//! driver's Finalize requests to the session, and the session's life.
//!
//! The stage reads the session's events and forwards interims and finals. The
//! driver asks for a Finalize through a small queue it never waits on
//! ([`FINALIZE_CAPACITY`]; a full queue means the session is stalled, and the
//! request is dropped: the machine's final timeout covers the turn); the
//! stage hands it to the session, waiting for room there if it must. A
//! provider error is counted; when the session ends (closed or gone) the stage
//! withdraws the sender (AudioIn then counts its frames as dropped, the turn
//! machine's final timeout ends a waiting turn), reconnects up to
//! [`ProviderLimits::stt_reconnects`](crate::config::ProviderLimits) times and
//! publishes the new sender; when no reconnect is left it tells the driver,
//! which ends the call.

use std::sync::Arc;

use brisvox_providers::{
    ProviderError, SttConfig, SttEvent, SttEvents, SttProvider, SttSender, SttSession,
};
use tokio::sync::{mpsc, watch};

use super::inbox::DriverInput;
use super::{now, shutdown};
use crate::report::{FailureBook, ProviderStage};

/// Finalize requests that may wait for the STT stage.
pub(crate) const FINALIZE_CAPACITY: usize = 4;

/// The STT stage actor.
pub(crate) struct SttStage {
    provider: Arc<dyn SttProvider>,
    config: SttConfig,
    events: Option<SttEvents>,
    sender: watch::Sender<Option<SttSender>>,
    finalize: mpsc::Receiver<()>,
    driver: mpsc::Sender<DriverInput>,
    reconnects_left: u32,
    failures: Arc<FailureBook>,
    shutdown: watch::Receiver<bool>,
}

/// What the STT stage is built from.
pub(crate) struct SttParts {
    pub(crate) provider: Arc<dyn SttProvider>,
    pub(crate) config: SttConfig,
    pub(crate) session: SttSession,
    /// Where the current session's sender is published (AudioIn reads it).
    pub(crate) sender: watch::Sender<Option<SttSender>>,
    pub(crate) finalize: mpsc::Receiver<()>,
    pub(crate) driver: mpsc::Sender<DriverInput>,
    pub(crate) reconnects: u32,
    pub(crate) failures: Arc<FailureBook>,
    pub(crate) shutdown: watch::Receiver<bool>,
}

impl SttStage {
    /// The stage around a connected session; its sender is published at once.
    pub(crate) fn new(parts: SttParts) -> Self {
        let (tx, events) = parts.session.split();
        parts.sender.send_replace(Some(tx));
        SttStage {
            provider: parts.provider,
            config: parts.config,
            events: Some(events),
            sender: parts.sender,
            finalize: parts.finalize,
            driver: parts.driver,
            reconnects_left: parts.reconnects,
            failures: parts.failures,
            shutdown: parts.shutdown,
        }
    }

    /// Forwards events until the call shuts down or the STT is gone for good.
    pub(crate) async fn run(mut self) {
        loop {
            let event = tokio::select! {
                biased;
                () = shutdown(&mut self.shutdown) => break,
                Some(()) = self.finalize.recv() => {
                    self.on_finalize().await;
                    continue;
                }
                event = next_event(&mut self.events) => event,
            };
            if !self.on_event(event).await {
                break;
            }
        }
        // Dropping the last senders ends the provider's session.
        self.sender.send_replace(None);
    }

    /// Hands a Finalize to the current session (none: the session is being
    /// replaced, and the final timeout covers the turn).
    async fn on_finalize(&mut self) {
        let sender = self.sender.borrow().clone();
        if let Some(sender) = sender {
            tokio::select! {
                biased;
                () = shutdown(&mut self.shutdown) => {}
                _ = sender.finalize() => {}
            }
        }
    }

    /// One event (`None`: the session is gone). Returns false to stop.
    async fn on_event(&mut self, event: Option<SttEvent>) -> bool {
        let input = match event {
            Some(SttEvent::Interim { text }) => DriverInput::Interim { text, at: now() },
            Some(SttEvent::Final {
                text,
                from_finalize,
                ..
            }) => DriverInput::Final {
                text,
                from_finalize,
                at: now(),
            },
            Some(SttEvent::Error(error)) => {
                self.failures.count(ProviderStage::Stt, error.kind());
                DriverInput::SttError { at: now() }
            }
            Some(SttEvent::Closed) | None => return self.on_lost().await,
            Some(_) => return true,
        };
        self.driver.send(input).await.is_ok()
    }

    /// The session ended: reconnect or give up. Returns false when given up.
    async fn on_lost(&mut self) -> bool {
        self.events = None;
        self.sender.send_replace(None);
        while self.reconnects_left > 0 {
            self.reconnects_left -= 1;
            let connected = tokio::select! {
                biased;
                () = shutdown(&mut self.shutdown) => return false,
                c = self.provider.connect(self.config.clone()) => c,
            };
            match connected {
                Ok(session) => {
                    let (tx, events) = session.split();
                    self.sender.send_replace(Some(tx));
                    self.events = Some(events);
                    return true;
                }
                Err(error) => self.count(&error),
            }
        }
        let _ = self.driver.send(DriverInput::SttLost { at: now() }).await;
        false
    }

    fn count(&self, error: &ProviderError) {
        self.failures.count(ProviderStage::Stt, error.kind());
    }
}

/// The next event of the session, `None` when it is gone.
///
/// # Cancel safety
///
/// Cancel safe: [`SttEvents::recv`] is.
async fn next_event(events: &mut Option<SttEvents>) -> Option<SttEvent> {
    match events {
        Some(events) => events.recv().await,
        None => None,
    }
}
