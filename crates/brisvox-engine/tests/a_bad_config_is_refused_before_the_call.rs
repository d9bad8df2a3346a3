//! `run_call` refuses settings that cannot work before it touches a provider
//! or reads a frame, naming the setting.

mod common;

use std::time::Duration;

use brisvox_engine::sim::{RecordingSink, SimCaller};
use brisvox_engine::{CallError, EngineConfigError, Models, run_call};
use common::*;

#[tokio::test(start_paused = true)]
async fn a_zero_capacity_queue_is_named() {
    let mocks = Mocks::fixed(0);
    let mut config = sim_config();
    config.queues.tts = 0;
    let (sink, log) = RecordingSink::new();
    let result = run_call(
        config,
        brisvox_engine::CallEdge::new(SimCaller::new(vec![0i16; 16_000]), sink),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await;
    match result {
        Err(CallError::Config(EngineConfigError::Zero { field })) => {
            assert_eq!(field, "queues.tts");
        }
        other => panic!("expected a config error, got {other:?}"),
    }
    assert_eq!(mocks.stt.stats().sessions, 0, "no provider was touched");
    assert!(log.events().is_empty());

    let mut config = sim_config();
    config.turn.final_timeout = Duration::ZERO;
    let (sink, _) = RecordingSink::new();
    let result = run_call(
        config,
        brisvox_engine::CallEdge::new(SimCaller::new(vec![0i16; 16_000]), sink),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await;
    assert!(matches!(
        result,
        Err(CallError::Config(EngineConfigError::Turn(_)))
    ));
}
