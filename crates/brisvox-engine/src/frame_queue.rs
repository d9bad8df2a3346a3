//! A bounded single-producer, single-consumer queue whose storage is allocated
//! once, at its capacity: the TTS stage's link to the output stage, and the
//! [`audio_queue`](crate::edge::audio_queue) between the output stage and a
//! route's writer.
//!
//! Why not `tokio::sync::mpsc`: its storage grows in blocks of 32 slots
//! whatever the capacity, and an output item holds an [`AudioFrame`] inline
//! (about 3.9 KB), so a 16-frame channel kept two blocks, about 240 KiB per
//! call. This queue keeps exactly `capacity` slots (16: about 62 KiB).
//!
//! Overflow policy: the sender waits for room (backpressure towards the TTS
//! provider), as with the channel it replaces.
//!
//! [`AudioFrame`]: brisvox_core::AudioFrame

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

struct State<T> {
    items: VecDeque<T>,
    capacity: usize,
    sender_alive: bool,
    receiver_alive: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    /// Wakes the receiver: an item was queued or the sender is gone.
    item_ready: Notify,
    /// Wakes the sender: a slot was freed or the receiver is gone.
    room_ready: Notify,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A queue of owned items is valid after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A queue of at most `capacity` items (at least one), allocated now.
pub(crate) fn bounded<T>(capacity: usize) -> (QueueSender<T>, QueueReceiver<T>) {
    let capacity = capacity.max(1);
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::with_capacity(capacity),
            capacity,
            sender_alive: true,
            receiver_alive: true,
        }),
        item_ready: Notify::new(),
        room_ready: Notify::new(),
    });
    (
        QueueSender {
            shared: Arc::clone(&shared),
        },
        QueueReceiver { shared },
    )
}

/// The sending half (one producer).
pub(crate) struct QueueSender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> QueueSender<T> {
    /// Queues `item`, waiting for room; hands it back if the receiver is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if dropped before it completes, the item was not queued.
    pub(crate) async fn send(&self, item: T) -> Result<(), T> {
        loop {
            let room = self.shared.room_ready.notified();
            tokio::pin!(room);
            // Registered before the check, so a slot freed in between wakes it.
            room.as_mut().enable();
            {
                let mut state = self.shared.lock();
                if !state.receiver_alive {
                    return Err(item);
                }
                if state.items.len() < state.capacity {
                    state.items.push_back(item);
                    drop(state);
                    self.shared.item_ready.notify_one();
                    return Ok(());
                }
            }
            room.await;
        }
    }
}

impl<T> QueueSender<T> {
    /// Queues `item` if there is room; hands it back if the queue is full or
    /// the receiver is gone (never waits).
    pub(crate) fn try_send(&self, item: T) -> Result<(), T> {
        {
            let mut state = self.shared.lock();
            if !state.receiver_alive || state.items.len() == state.capacity {
                return Err(item);
            }
            state.items.push_back(item);
        }
        self.shared.item_ready.notify_one();
        Ok(())
    }

    /// Drops every queued item and queues `item` in their place, at once
    /// (a barge-in's clear). Hands `item` back if the receiver is gone.
    pub(crate) fn replace_all(&self, item: T) -> Result<(), T> {
        {
            let mut state = self.shared.lock();
            if !state.receiver_alive {
                return Err(item);
            }
            // Dropped under the lock: the queue's items (frames) own no heap
            // memory, and collecting them elsewhere would allocate.
            state.items.clear();
            state.items.push_back(item);
        }
        self.shared.item_ready.notify_one();
        Ok(())
    }
}

impl<T> Drop for QueueSender<T> {
    fn drop(&mut self) {
        self.shared.lock().sender_alive = false;
        self.shared.item_ready.notify_one();
    }
}

/// The receiving half (one consumer).
pub(crate) struct QueueReceiver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> QueueReceiver<T> {
    /// The oldest item, waiting for one; `None` once the sender is gone and
    /// every item was taken.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is taken only when this returns it.
    pub(crate) async fn recv(&mut self) -> Option<T> {
        loop {
            let ready = self.shared.item_ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut state = self.shared.lock();
                if let Some(item) = state.items.pop_front() {
                    drop(state);
                    self.shared.room_ready.notify_one();
                    return Some(item);
                }
                if !state.sender_alive {
                    return None;
                }
            }
            ready.await;
        }
    }
}

impl<T> QueueReceiver<T> {
    /// The oldest item, if one waits.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        let item = self.shared.lock().items.pop_front();
        if item.is_some() {
            self.shared.room_ready.notify_one();
        }
        item
    }
}

impl<T> Drop for QueueReceiver<T> {
    fn drop(&mut self) {
        let items = {
            let mut state = self.shared.lock();
            state.receiver_alive = false;
            std::mem::take(&mut state.items)
        };
        // Dropped outside the lock.
        drop(items);
        self.shared.room_ready.notify_one();
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

    #[test]
    fn the_storage_is_allocated_once_at_its_capacity() {
        let (tx, _rx) = bounded::<u8>(16);
        assert!(tx.shared.lock().items.capacity() >= 16);
        assert_eq!(tx.shared.lock().capacity, 16);
    }
}
