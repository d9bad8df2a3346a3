//! Waits that are polled only after they asked to be.
//!
//! A `select!` polls every branch each time its task wakes. In a call's hot
//! loops (the route's reader, AudioIn, the output pacer) the task wakes for
//! every 20 ms frame, while some branches wait for something rare: the end of
//! the call, a drain of the server, a control from the agent link. Polling a
//! `watch` or `Notify` wait takes the notifier's lock to check it and refresh
//! its waker; an `mpsc` receive takes the budget and an atomic waker. A
//! [`Gate`] skips those polls: the wait is given a waker of its own, which
//! marks the gate and wakes the task, and it is polled again only once marked
//! (or right after it gave an item, as a channel may hold more).
//!
//! A skipped poll costs a waker compare and an atomic load; the task's waker
//! is stored again only when the polling task changes.
//!
//! Here, in `brisvox-core`, so that provider sessions use it as well as the
//! engine and the server (the engine re-exports it as `brisvox_engine::gate`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

/// The wake-up mark between a wait and the task that polls it.
struct Mark {
    /// The wait asked to be polled (or has not been polled yet).
    woken: AtomicBool,
    /// The task polling the gate. Kept, not taken, by a wake, so a gate whose
    /// task did not change need not register it again.
    task: Mutex<Option<Waker>>,
}

impl Mark {
    fn task(&self) -> MutexGuard<'_, Option<Waker>> {
        // A waker slot is valid after any panic.
        self.task.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Set before the task is woken: the poll that follows sees it.
        self.woken.store(true, Ordering::Release);
        let task = self.task().clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

/// Polls a wait only when it asked to be (see the module's docs).
pub struct Gate {
    mark: Arc<Mark>,
    /// The wait's own waker: sets the mark, then wakes the task.
    waker: Waker,
    /// The task's waker as last left in `mark`: leaving it again only when it
    /// changed keeps a skipped poll to a compare and a load.
    registered: Option<Waker>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("woken", &self.mark.woken.load(Ordering::Relaxed))
            .finish()
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A gate whose first poll goes through.
    pub fn new() -> Self {
        let mark = Arc::new(Mark {
            woken: AtomicBool::new(true),
            task: Mutex::new(None),
        });
        let waker = Waker::from(Arc::clone(&mark));
        Gate {
            mark,
            waker,
            registered: None,
        }
    }

    /// Runs `poll` with the gate's waker if the wait asked to be polled since
    /// its last poll; otherwise `Pending` at once. `cx`'s task is woken when
    /// the wait wakes its waker.
    pub fn poll_with<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        // Registered before the mark is read: a wake in between is not lost.
        if !(self.registered.as_ref()).is_some_and(|w| w.will_wake(cx.waker())) {
            *self.mark.task() = Some(cx.waker().clone());
            self.registered = Some(cx.waker().clone());
        }
        if !self.mark.woken.load(Ordering::Acquire)
            || !self.mark.woken.swap(false, Ordering::AcqRel)
        {
            return Poll::Pending;
        }
        let result = poll(&mut Context::from_waker(&self.waker));
        if result.is_ready() {
            // A ready poll registers no waker: poll again next time.
            self.mark.woken.store(true, Ordering::Release);
        }
        result
    }
}

/// A future polled only when it asked to be: for a rare branch of a
/// `select!` in a loop that wakes often.
pub struct Gated<F> {
    future: Pin<Box<F>>,
    gate: Gate,
}

impl<F> std::fmt::Debug for Gated<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gated").field("gate", &self.gate).finish()
    }
}

impl<F: Future> Gated<F> {
    /// Gates `future` (moved to the heap once).
    pub fn new(future: F) -> Self {
        Gated {
            future: Box::pin(future),
            gate: Gate::new(),
        }
    }
}

impl<F: Future> Future for Gated<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let future = this.future.as_mut();
        this.gate.poll_with(cx, |cx| future.poll(cx))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tokio::sync::{mpsc, watch};

    use super::*;

    /// A future that counts its polls and is ready once `ready` is set.
    struct Counted<'a> {
        polls: &'a AtomicUsize,
        ready: &'a AtomicBool,
        waker: &'a std::sync::Mutex<Option<Waker>>,
    }

    impl Future for Counted<'_> {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.ready.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn the_wait_is_polled_only_after_it_woke() {
        let (polls, ready, waker) = (
            AtomicUsize::new(0),
            AtomicBool::new(false),
            std::sync::Mutex::new(None::<Waker>),
        );
        let mut gated = Gated::new(Counted {
            polls: &polls,
            ready: &ready,
            waker: &waker,
        });
        let task = Arc::new(Flag::default());
        let task_waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&task_waker);
        assert!(Pin::new(&mut gated).poll(&mut cx).is_pending());
        assert_eq!(
            polls.load(Ordering::SeqCst),
            1,
            "the first poll goes through"
        );
        for _ in 0..5 {
            assert!(Pin::new(&mut gated).poll(&mut cx).is_pending());
        }
        assert_eq!(polls.load(Ordering::SeqCst), 1, "not woken: not polled");
        ready.store(true, Ordering::SeqCst);
        waker.lock().unwrap().take().expect("registered").wake();
        assert!(
            task.0.load(Ordering::SeqCst),
            "the wait's wake woke the task"
        );
        assert!(Pin::new(&mut gated).poll(&mut cx).is_ready());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[derive(Default)]
    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_gated_watch_wait_ends_a_busy_select() {
        let (tx, mut rx) = watch::channel(false);
        let (frames_tx, mut frames) = mpsc::channel::<u32>(4);
        let mut down = Gated::new(async move {
            let _ = rx.wait_for(|d| *d).await;
        });
        let feeder = tokio::spawn(async move {
            for n in 0..100 {
                frames_tx.send(n).await.unwrap();
            }
            tx.send(true).unwrap();
            std::future::pending::<()>().await;
        });
        let mut seen = 0;
        loop {
            tokio::select! {
                biased;
                Some(_) = frames.recv() => seen += 1,
                () = &mut down => break,
            }
        }
        assert_eq!(seen, 100, "every frame before the end was taken");
        feeder.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_gated_receiver_gives_every_queued_item() {
        let (tx, mut rx) = mpsc::channel::<u32>(8);
        let mut gate = Gate::new();
        for n in 0..3 {
            tx.send(n).await.unwrap();
        }
        // Only the first poll was woken; the ones after a ready poll go through too.
        for n in 0..3 {
            let got = std::future::poll_fn(|cx| gate.poll_with(cx, |cx| rx.poll_recv(cx))).await;
            assert_eq!(got, Some(n));
        }
        let later = tokio::spawn(async move {
            std::future::poll_fn(|cx| gate.poll_with(cx, |cx| rx.poll_recv(cx))).await
        });
        tokio::task::yield_now().await;
        tx.send(7).await.unwrap();
        assert_eq!(later.await.unwrap(), Some(7));
    }
}
