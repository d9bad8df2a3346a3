//! The Smart Turn defaults are the measured ones (1 intra-op thread, ENABLE_ALL),
//! and 0 threads or sessions are raised to 1.

mod smart_turn_common;

use brisvox_models::smart_turn::{
    DEFAULT_INTRA_THREADS, GraphOptimization, SmartTurn, SmartTurnConfig,
};
use smart_turn_common::models_available;

#[test]
fn defaults_are_one_intra_thread_one_session_and_enable_all() {
    let config = SmartTurnConfig::default();
    assert_eq!(DEFAULT_INTRA_THREADS, 1);
    assert_eq!(config.intra_threads, 1);
    assert_eq!(config.sessions, 1);
    assert_eq!(config.graph_optimization, GraphOptimization::All);
}

#[test]
fn zero_threads_and_sessions_are_raised_to_one() {
    if !models_available("zero_threads_and_sessions_are_raised_to_one") {
        return;
    }
    let model = SmartTurn::load(SmartTurnConfig {
        intra_threads: 0,
        sessions: 0,
        ..SmartTurnConfig::default()
    })
    .expect("loads");
    assert_eq!(model.config().intra_threads, 1);
    assert_eq!(model.config().sessions, 1);
    model.warm_up().expect("the one session runs");
}
