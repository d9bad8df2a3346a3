//! A bounded single-producer, single-consumer queue whose storage is allocated
//! once, at its capacity: the TTS stage's link to the output stage, the
//! [`audio_queue`](crate::edge::audio_queue) between the output stage and a
//! route's writer, and the [`inbound_queue`](crate::edge::inbound_queue)
//! between a route's reader and the engine (with an urgent lane for controls).
//!
//! Why not `tokio::sync::mpsc`: its storage grows in blocks of 32 slots
//! whatever the capacity, and an output item holds an [`AudioFrame`] inline
//! (about 3.9 KB), so a 16-frame channel kept two blocks, about 240 KiB per
//! call. This queue keeps exactly `capacity` slots (16: about 62 KiB).
//!
//! Why not `tokio::sync::Notify` for the wake-ups: every frame crosses one of
//! these queues at least twice per call, and a `Notify` wait takes the
//! notifier's own lock to register and again to unregister, on top of the
//! queue's. Here each operation takes the queue's one lock once, and the two
//! wakers live in the state it guards: a side that must wait leaves its waker
//! there (cloned only when it changed), and the other side takes it under the
//! lock and wakes it after unlocking.
//!
//! Overflow policy: the sender waits for room (backpressure towards the TTS
//! provider), as with the channel it replaces; `try_send` refuses instead.
//!
//! [`AudioFrame`]: brisvox_core::AudioFrame

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

struct State<T, U> {
    items: VecDeque<T>,
    capacity: usize,
    /// Taken before `items`; never waited for (`try_send_urgent` refuses).
    urgent: VecDeque<U>,
    urgent_capacity: usize,
    sender_alive: bool,
    receiver_alive: bool,
    /// The receiver's task, waiting for an item or the end.
    receiver: Option<Waker>,
    /// The sender's task, waiting for room or the end.
    sender: Option<Waker>,
}

/// Leaves `cx`'s waker in `slot`, cloning it only if it would not wake the same task.
fn park(slot: &mut Option<Waker>, cx: &Context<'_>) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        *slot = Some(cx.waker().clone());
    }
}

fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

struct Shared<T, U> {
    state: Mutex<State<T, U>>,
}

impl<T, U> Shared<T, U> {
    fn lock(&self) -> MutexGuard<'_, State<T, U>> {
        // A queue of owned items is valid after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A queue of at most `capacity` items (at least one), allocated now.
pub(crate) fn bounded<T>(capacity: usize) -> (QueueSender<T>, QueueReceiver<T>) {
    with_urgent_lane(capacity, 0)
}

/// A queue of at most `capacity` items (at least one) beside a lane of at most
/// `urgent_capacity` urgent items, which the receiver takes first; both are
/// allocated now.
pub(crate) fn with_urgent_lane<T, U>(
    capacity: usize,
    urgent_capacity: usize,
) -> (QueueSender<T, U>, QueueReceiver<T, U>) {
    let capacity = capacity.max(1);
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::with_capacity(capacity),
            capacity,
            urgent: VecDeque::with_capacity(urgent_capacity),
            urgent_capacity,
            sender_alive: true,
            receiver_alive: true,
            receiver: None,
            sender: None,
        }),
    });
    (
        QueueSender {
            shared: Arc::clone(&shared),
        },
        QueueReceiver { shared },
    )
}

/// Why `try_send` or `try_send_urgent` did not queue an item (handed back).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TrySendError<T> {
    /// No room.
    Full(T),
    /// The receiver is gone.
    Closed(T),
}

/// What the receiver took.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next<T, U> {
    /// From the urgent lane.
    Urgent(U),
    /// From the ordinary queue.
    Item(T),
}

/// The sending half (one producer).
pub(crate) struct QueueSender<T, U = Infallible> {
    shared: Arc<Shared<T, U>>,
}

impl<T, U> QueueSender<T, U> {
    /// Queues `item`, waiting for room; hands it back if the receiver is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if dropped before it completes, the item was not queued.
    pub(crate) async fn send(&self, item: T) -> Result<(), T> {
        let mut item = Some(item);
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            if !state.receiver_alive {
                return Poll::Ready(Err(item.take().expect("polled after completion")));
            }
            if state.items.len() < state.capacity {
                state
                    .items
                    .push_back(item.take().expect("polled after completion"));
                let receiver = state.receiver.take();
                drop(state);
                wake(receiver);
                return Poll::Ready(Ok(()));
            }
            park(&mut state.sender, cx);
            Poll::Pending
        })
        .await
    }

    /// Queues `item` if there is room (never waits).
    pub(crate) fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
        self.try_queue(item, |state| (&mut state.items, state.capacity))
    }

    /// Queues `item` on the urgent lane if it has room (never waits).
    pub(crate) fn try_send_urgent(&self, item: U) -> Result<(), TrySendError<U>> {
        self.try_queue(item, |state| (&mut state.urgent, state.urgent_capacity))
    }

    /// Queues `item` on `lane` (the queue and its capacity) if it has room.
    fn try_queue<V>(
        &self,
        item: V,
        lane: impl FnOnce(&mut State<T, U>) -> (&mut VecDeque<V>, usize),
    ) -> Result<(), TrySendError<V>> {
        let mut state = self.shared.lock();
        if !state.receiver_alive {
            return Err(TrySendError::Closed(item));
        }
        let (queue, capacity) = lane(&mut state);
        if queue.len() >= capacity {
            return Err(TrySendError::Full(item));
        }
        queue.push_back(item);
        let receiver = state.receiver.take();
        drop(state);
        wake(receiver);
        Ok(())
    }

    /// Drops every queued item and queues `item` in their place, at once
    /// (a barge-in's clear). Hands `item` back if the receiver is gone.
    pub(crate) fn replace_all(&self, item: T) -> Result<(), T> {
        let mut state = self.shared.lock();
        if !state.receiver_alive {
            return Err(item);
        }
        // Dropped under the lock: the queue's items (frames) own no heap
        // memory, and collecting them elsewhere would allocate.
        state.items.clear();
        state.items.push_back(item);
        let receiver = state.receiver.take();
        drop(state);
        wake(receiver);
        Ok(())
    }
}

impl<T, U> Drop for QueueSender<T, U> {
    fn drop(&mut self) {
        let receiver = {
            let mut state = self.shared.lock();
            state.sender_alive = false;
            state.receiver.take()
        };
        wake(receiver);
    }
}

/// The receiving half (one consumer).
pub(crate) struct QueueReceiver<T, U = Infallible> {
    shared: Arc<Shared<T, U>>,
}

impl<T, U> QueueReceiver<T, U> {
    /// The oldest urgent item, else the oldest item, waiting for one; `None`
    /// once the sender is gone and every item was taken.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is taken only when this returns it.
    pub(crate) async fn recv_next(&mut self) -> Option<Next<T, U>> {
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            if let Some((next, sender)) = state.pop() {
                drop(state);
                wake(sender);
                return Poll::Ready(Some(next));
            }
            if !state.sender_alive {
                return Poll::Ready(None);
            }
            park(&mut state.receiver, cx);
            Poll::Pending
        })
        .await
    }

    /// The oldest urgent item, else the oldest item, if one waits.
    pub(crate) fn try_recv_next(&mut self) -> Option<Next<T, U>> {
        let mut state = self.shared.lock();
        let (next, sender) = state.pop()?;
        drop(state);
        wake(sender);
        Some(next)
    }
}

impl<T, U> State<T, U> {
    /// Takes the oldest urgent item, else the oldest item, with the sender's
    /// waker if that freed room it may be waiting for (to wake once unlocked).
    fn pop(&mut self) -> Option<(Next<T, U>, Option<Waker>)> {
        if let Some(urgent) = self.urgent.pop_front() {
            return Some((Next::Urgent(urgent), None));
        }
        let item = self.items.pop_front()?;
        Some((Next::Item(item), self.sender.take()))
    }
}

impl<T> QueueReceiver<T> {
    /// The oldest item, waiting for one; `None` once the sender is gone and
    /// every item was taken.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is taken only when this returns it.
    pub(crate) async fn recv(&mut self) -> Option<T> {
        self.recv_next().await.map(Next::into_item)
    }

    /// The oldest item, if one waits.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        self.try_recv_next().map(Next::into_item)
    }
}

impl<T> Next<T, Infallible> {
    fn into_item(self) -> T {
        match self {
            Next::Item(item) => item,
            Next::Urgent(never) => match never {},
        }
    }
}

impl<T, U> Drop for QueueReceiver<T, U> {
    fn drop(&mut self) {
        let (items, urgent, sender) = {
            let mut state = self.shared.lock();
            state.receiver_alive = false;
            (
                std::mem::take(&mut state.items),
                std::mem::take(&mut state.urgent),
                state.sender.take(),
            )
        };
        // Dropped outside the lock.
        drop((items, urgent));
        wake(sender);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn items_arrive_in_order_and_the_sender_waits_for_room() {
        let (tx, mut rx) = bounded(2);
        tx.send(1).await.expect("room");
        tx.send(2).await.expect("room");
        let third = tokio::spawn(async move {
            tx.send(3).await.expect("room later");
            tx
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!third.is_finished(), "a full queue makes the sender wait");
        assert_eq!(rx.recv().await, Some(1));
        let tx = third.await.expect("the sender task");
        assert_eq!(rx.recv().await, Some(2));
        assert_eq!(rx.recv().await, Some(3));
        drop(tx);
        assert_eq!(rx.recv().await, None, "the sender is gone");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_receiver_wakes_for_an_item_and_for_the_end() {
        let (tx, mut rx) = bounded::<u32>(1);
        let reader = tokio::spawn(async move {
            let first = rx.recv().await;
            let end = rx.recv().await;
            (first, end)
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        tx.send(7).await.expect("room");
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(tx);
        assert_eq!(reader.await.expect("the reader"), (Some(7), None));
    }

    #[tokio::test(start_paused = true)]
    async fn a_gone_receiver_hands_the_item_back_and_frees_a_waiting_sender() {
        let (tx, rx) = bounded(1);
        tx.send(1).await.expect("room");
        let waiting = tokio::spawn(async move { tx.send(2).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(rx);
        assert_eq!(waiting.await.expect("the sender task"), Err(2));
    }

    #[tokio::test(start_paused = true)]
    async fn urgent_items_come_first_and_neither_lane_waits() {
        let (tx, mut rx) = with_urgent_lane::<u32, &str>(2, 1);
        tx.try_send(1).expect("room");
        tx.try_send(2).expect("room");
        assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
        tx.try_send_urgent("stop").expect("urgent room");
        assert_eq!(
            tx.try_send_urgent("again"),
            Err(TrySendError::Full("again"))
        );
        assert_eq!(rx.recv_next().await, Some(Next::Urgent("stop")));
        assert_eq!(rx.recv_next().await, Some(Next::Item(1)));
        // Taking an item made room; the urgent lane has room again.
        tx.try_send(3).expect("room again");
        tx.try_send_urgent("later").expect("urgent room again");
        assert_eq!(rx.recv_next().await, Some(Next::Urgent("later")));
        drop(tx);
        assert_eq!(rx.recv_next().await, Some(Next::Item(2)));
        assert_eq!(rx.recv_next().await, Some(Next::Item(3)));
        assert_eq!(rx.recv_next().await, None, "drained and the sender is gone");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_receiver_wakes_for_an_urgent_item() {
        let (tx, mut rx) = with_urgent_lane::<u32, u8>(1, 1);
        let reader = tokio::spawn(async move { rx.recv_next().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!reader.is_finished(), "nothing queued yet");
        tx.try_send_urgent(9).expect("urgent room");
        assert_eq!(reader.await.expect("the reader"), Some(Next::Urgent(9)));
    }

    #[test]
    fn a_gone_receiver_refuses_both_lanes() {
        let (tx, rx) = with_urgent_lane::<u32, u8>(1, 1);
        drop(rx);
        assert_eq!(tx.try_send(1), Err(TrySendError::Closed(1)));
        assert_eq!(tx.try_send_urgent(2), Err(TrySendError::Closed(2)));
        assert_eq!(tx.replace_all(3), Err(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_receive_takes_nothing() {
        let (tx, mut rx) = bounded::<u32>(1);
        // Polled once while empty, then dropped: its waker stays behind.
        let cancelled = tokio::time::timeout(Duration::from_millis(5), rx.recv()).await;
        assert!(cancelled.is_err(), "nothing was queued");
        tx.send(4).await.expect("room");
        assert_eq!(
            rx.try_recv(),
            Some(4),
            "the item waited for the next receive"
        );
        assert_eq!(rx.try_recv(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn replace_all_drops_the_queued_items_and_wakes_the_receiver() {
        let (tx, mut rx) = bounded::<u32>(3);
        tx.try_send(1).expect("room");
        tx.try_send(2).expect("room");
        tx.replace_all(0).expect("receiver alive");
        assert_eq!(rx.recv().await, Some(0));
        let reader = tokio::spawn(async move { rx.recv().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        tx.replace_all(5).expect("receiver alive");
        assert_eq!(reader.await.expect("the reader"), Some(5));
    }

    #[test]
    fn the_storage_is_allocated_once_at_its_capacity() {
        let (tx, _rx) = bounded::<u8>(16);
        assert!(tx.shared.lock().items.capacity() >= 16);
        assert_eq!(tx.shared.lock().capacity, 16);
    }
}
