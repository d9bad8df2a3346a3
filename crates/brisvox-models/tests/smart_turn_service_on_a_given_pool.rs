//! `SmartTurnService::with_pool` runs analyses on the pool it is given: on an
//! inline pool the verdict is ready when `analyze` returns, it is the model's
//! own verdict, the snapshot buffer goes back to the free list (the next
//! `snapshot_buffer` is the same allocation) and the analysis is counted; a
//! pool that refuses gives `Saturated`, counted as a refused analysis.

mod smart_turn_common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::smart_turn::{SmartTurn, SmartTurnConfig, SmartTurnError, SmartTurnService};
use smart_turn_common::{case_input, cases, models_available};

fn model() -> Arc<SmartTurn> {
    Arc::new(SmartTurn::load(SmartTurnConfig::default()).expect("loads"))
}

/// Polls `fut` once: a verdict that is ready now, or `None`.
fn ready_now<F: Future + Unpin>(mut fut: F) -> Option<F::Output> {
    match Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

#[test]
fn an_inline_pool_answers_at_once_and_reuses_the_buffer() {
    if !models_available("an_inline_pool_answers_at_once_and_reuses_the_buffer") {
        return;
    }
    let model = model();
    let service = SmartTurnService::with_pool(
        Arc::clone(&model),
        InferencePool::inline(PoolConfig::named("t")),
    );
    let input = case_input(&cases()[0]);
    let mut buffer = service.snapshot_buffer();
    let allocation = buffer.as_ptr();
    buffer.extend_from_slice(&input);
    let verdict = ready_now(service.analyze(buffer))
        .expect("ready when analyze returns")
        .expect("a verdict");
    let direct = model.analyze(&input).expect("a verdict");
    assert_eq!(verdict.probability, direct.probability);
    assert_eq!(verdict.complete, direct.complete);
    let again = service.snapshot_buffer();
    assert_eq!(
        again.as_ptr(),
        allocation,
        "the buffer came back to the free list"
    );
    assert!(again.is_empty());
    let stats = service.stats();
    assert_eq!((stats.completed, stats.failures()), (1, 0));
}

#[test]
fn a_refusing_pool_counts_a_refused_analysis() {
    if !models_available("a_refusing_pool_counts_a_refused_analysis") {
        return;
    }
    let pool = InferencePool::new(PoolConfig {
        threads: 1,
        normal_capacity: 0,
        ..PoolConfig::named("refuses")
    });
    let service = SmartTurnService::with_pool(model(), pool);
    let result = ready_now(service.analyze(case_input(&cases()[0]))).expect("refused at once");
    assert!(
        matches!(result, Err(SmartTurnError::Saturated)),
        "{result:?}"
    );
    let stats = service.stats();
    assert_eq!((stats.refused, stats.completed), (1, 0));
}
