//! The stage tasks of a call: small actors around the sans-IO cores.
//!
//! Each stage owns its state and one bounded inbox (capacity in
//! [`QueueCapacities`](crate::QueueCapacities); the inbox types are all in
//! [`inbox`], so no stage imports another); `run(self)` loops over the
//! inbox, its provider events and its timer, and hands each to an `on_*`
//! handler. Every stage also watches two signals:
//!
//! - the **epoch floor** (a `watch` of [`Epoch`]): the turn driver raises it on a
//!   barge-in or a taken-back turn, and every item of an older epoch is dropped
//!   on sight (LLM stream cancelled, TTS context cancelled, pacer flushed,
//!   transport cleared);
//! - the **shutdown** signal (a `watch` of `bool`): the explicit end of the
//!   call; every stage returns from `run` when it is set.
//!
//! The call's [`TimelineRecorder`] is shared as an `Arc<Mutex<_>>`: a mark is
//! a few nanoseconds under an uncontended lock, so stages mark where the work
//! happens, on the same clock, without a message hop that would delay the stamp.

pub(crate) mod audio_in;
pub(crate) mod driver;
pub(crate) mod early;
pub(crate) mod inbox;
pub(crate) mod llm;
pub(crate) mod output;
pub(crate) mod segmenter;
pub(crate) mod speculative;
pub(crate) mod spoken;
pub(crate) mod stt;
pub(crate) mod tool_calls;
pub(crate) mod tts;

#[cfg(test)]
mod hot_path_tests;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use brisvox_core::Epoch;
use brisvox_core::timeline::{TimelineRecorder, TurnEvent};
use tokio::sync::{mpsc, watch};

/// The call's timeline, shared by the stages.
pub(crate) type SharedTimeline = Arc<Mutex<TimelineRecorder>>;

/// The current time on tokio's clock (paused in tests), as a std instant.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Marks `event` of `epoch`'s turn at `at`.
pub(crate) fn mark(timeline: &SharedTimeline, epoch: Epoch, event: TurnEvent, at: Instant) {
    timeline
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .mark(epoch, event, at);
}

/// Waits until the epoch floor is above `epoch` (its items are stale); never
/// returns if the floor's sender is gone.
///
/// # Cancel safety
///
/// Cancel safe: it only observes the watch.
pub(crate) async fn stale(floor: &mut watch::Receiver<Epoch>, epoch: Epoch) {
    loop {
        if epoch.is_stale(*floor.borrow_and_update()) {
            return;
        }
        if floor.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Resolves when `epoch` is stale; never when there is no epoch (no response).
///
/// # Cancel safety
///
/// Cancel safe: it only observes the watch.
pub(crate) async fn stale_opt(floor: &mut watch::Receiver<Epoch>, epoch: Option<Epoch>) {
    match epoch {
        Some(epoch) => stale(floor, epoch).await,
        None => std::future::pending().await,
    }
}

/// Waits for the shutdown signal; never returns if its sender is gone without it.
///
/// # Cancel safety
///
/// Cancel safe: it only observes the watch.
pub(crate) async fn shutdown(signal: &mut watch::Receiver<bool>) {
    if signal.wait_for(|down| *down).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Runs `work` unless the call shuts down first (then `None`): a provider
/// call that waits for room in a stalled session must not hold up the end
/// of the call.
///
/// # Cancel safety
///
/// As cancel safe as `work`.
pub(crate) async fn unless_shutdown<F: std::future::Future>(
    signal: &mut watch::Receiver<bool>,
    work: F,
) -> Option<F::Output> {
    tokio::select! {
        biased;
        () = shutdown(signal) => None,
        out = work => Some(out),
    }
}

/// Sleeps until `deadline`, at once if it is due (a due deadline never goes to
/// the timer), forever if there is none.
///
/// # Cancel safety
///
/// Cancel safe: it only waits.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) if d > now() => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
        Some(_) => {}
        None => std::future::pending().await,
    }
}

/// A bounded inbox of the next stage, as its sender sees it.
pub(crate) trait Outbox<T> {
    /// Sends `item`, waiting for room; false if the receiver is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if dropped before it completes, the item was not sent.
    async fn put(&self, item: T) -> bool;
}

impl<T> Outbox<T> for mpsc::Sender<T> {
    async fn put(&self, item: T) -> bool {
        self.send(item).await.is_ok()
    }
}

impl<T> Outbox<T> for crate::frame_queue::QueueSender<T> {
    async fn put(&self, item: T) -> bool {
        self.send(item).await.is_ok()
    }
}

/// Sends `item` of `epoch` downstream, waiting for room, unless the epoch goes
/// stale first. Returns false when the item was dropped (stale or the
/// receiver is gone).
///
/// # Cancel safety
///
/// Cancel safe: if dropped before it completes, the item was not sent.
pub(crate) async fn forward<T, O: Outbox<T>>(
    tx: &O,
    item: T,
    epoch: Epoch,
    floor: &mut watch::Receiver<Epoch>,
) -> bool {
    tokio::select! {
        biased;
        () = stale(floor, epoch) => false,
        sent = tx.put(item) => sent,
    }
}
