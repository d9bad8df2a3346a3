//! The tasks alive on the current tokio runtime, for the tests that show a
//! call or a session leaves none behind.

use std::fmt::Display;

use crate::eventually::{PATIENCE, eventually_async};

/// Tasks alive on the current tokio runtime.
///
/// Panics outside a tokio runtime.
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Waits until exactly `n` tasks are alive on the current runtime; panics with
/// `what` (and the count) after [`PATIENCE`].
///
/// A task whose channels have closed ends on its next poll, not at once: this
/// is how a test waits for that instead of sleeping.
pub async fn until_alive_tasks(n: usize, what: impl Display) {
    eventually_async(
        PATIENCE,
        format_args!("{what} (want {n} tasks alive)"),
        || async { alive_tasks() == n },
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_ended_task_is_no_longer_counted() {
        let base = alive_tasks();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = rx.await;
        });
        assert_eq!(alive_tasks(), base + 1);
        drop(tx);
        until_alive_tasks(base, "the task ends once its channel closes").await;
        task.await.unwrap();
    }
}
