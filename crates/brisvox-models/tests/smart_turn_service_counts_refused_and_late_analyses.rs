//! A full executor queue refuses new analyses (reject newest) and an analysis that
//! cannot start before its deadline is skipped; both are failed analyses, counted.

mod smart_turn_common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_models::smart_turn::{
    SmartTurn, SmartTurnConfig, SmartTurnError, SmartTurnService, SmartTurnServiceConfig,
};
use smart_turn_common::{block_on, case_input, cases, models_available};

fn model() -> Arc<SmartTurn> {
    Arc::new(SmartTurn::load(SmartTurnConfig::default()).expect("loads"))
}

#[test]
fn a_full_queue_refuses_and_the_refusals_are_counted() {
    if !models_available("a_full_queue_refuses_and_the_refusals_are_counted") {
        return;
    }
    let config = SmartTurnServiceConfig {
        threads: 1,
        queue_capacity: 1,
        start_timeout: Duration::from_secs(60),
        ..SmartTurnServiceConfig::default()
    };
    let service = SmartTurnService::with_model(model(), &config);
    let input = case_input(&cases()[0]);
    // Six at once: one runs (tens of ms), one waits, the rest find the queue full.
    let pending: Vec<_> = (0..6).map(|_| service.analyze(input.clone())).collect();
    let results: Vec<_> = pending.into_iter().map(block_on).collect();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(SmartTurnError::Saturated)))
        .count();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(refused + ok, 6, "{results:?}");
    assert!(
        refused >= 4,
        "at most one running and one waiting: {results:?}"
    );
    let stats = service.stats();
    assert_eq!(stats.refused, refused as u64);
    assert_eq!(stats.completed, ok as u64);
    assert_eq!(stats.failures(), refused as u64);
}

#[test]
fn an_analysis_that_cannot_start_in_time_fails_as_timed_out() {
    if !models_available("an_analysis_that_cannot_start_in_time_fails_as_timed_out") {
        return;
    }
    let config = SmartTurnServiceConfig {
        threads: 1,
        queue_capacity: 8,
        start_timeout: Duration::from_millis(5),
        ..SmartTurnServiceConfig::default()
    };
    let service = SmartTurnService::with_model(model(), &config);
    let input = case_input(&cases()[0]);
    // Each analysis takes tens of ms: those queued behind the first one wait far
    // longer than 5 ms (the first may also miss it on a loaded machine).
    let pending: Vec<_> = (0..4).map(|_| service.analyze(input.clone())).collect();
    let results: Vec<_> = pending.into_iter().map(block_on).collect();
    let timed_out = results
        .iter()
        .filter(|r| matches!(r, Err(SmartTurnError::TimedOut)))
        .count();
    assert!(timed_out >= 3, "{results:?}");
    let stats = service.stats();
    assert_eq!(stats.timed_out, timed_out as u64);
    assert_eq!(stats.completed + stats.timed_out, 4);
}
