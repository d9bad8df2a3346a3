//! The executor runs analyses on its own pool and gives the reference verdicts for
//! ring snapshots (those of this CPU's kernel set, `smart_turn_common`; on a CPU
//! whose kernels match no recorded set, the model's own on the same input); its
//! snapshot buffers come back for reuse.

mod smart_turn_common;

use brisvox_models::smart_turn::{
    SmartTurn, SmartTurnConfig, SmartTurnRing, SmartTurnService, SmartTurnServiceConfig,
};
use smart_turn_common::{
    block_on, case_input, cases, cases_for, models_available, this_cpu_kernel_set,
};

#[test]
fn ring_snapshots_analysed_on_the_executor_give_the_golden_verdicts() {
    if !models_available("ring_snapshots_analysed_on_the_executor_give_the_golden_verdicts") {
        return;
    }
    let direct = SmartTurn::load(SmartTurnConfig::default()).expect("loads");
    let set = this_cpu_kernel_set(
        |features| direct.probability_of_features(features).expect("runs"),
        1e-5,
    );
    let service = SmartTurnService::start(SmartTurnServiceConfig::default()).expect("starts");
    let cases = match &set {
        Some(set) => cases_for(set),
        None => cases(),
    };
    for case in &cases {
        let mut ring = SmartTurnRing::new();
        ring.push(&case_input(case));
        let mut buffer = service.snapshot_buffer();
        ring.snapshot_into(&mut buffer);
        let expected = match &set {
            Some(_) => case.probability,
            None => direct.analyze(&buffer).expect("analysis").probability,
        };
        let verdict = block_on(service.analyze(buffer)).expect("verdict");
        assert_eq!(
            verdict.probability.to_bits(),
            expected.to_bits(),
            "{}",
            case.name
        );
        assert_eq!(verdict.complete, expected > 0.5, "{}", case.name);
        assert!(
            verdict.model_us > 0,
            "{}: model time is measured",
            case.name
        );
    }
    let stats = service.stats();
    assert_eq!(stats.completed, cases.len() as u64);
    assert_eq!(stats.failures(), 0);
    if set.is_some() {
        let complete = cases.iter().filter(|c| c.complete).count() as u64;
        assert_eq!(stats.complete_verdicts, complete);
    }
    assert!(stats.model_us_total > 0 && stats.features_us_total > 0);
    // Every analysis went through the executor's pool (its completion counter is
    // bumped after the result is sent, so it is not compared here).
    assert_eq!(service.pool().stats().submitted, cases.len() as u64);
    // The buffer of the last analysis is back on the free list, full-sized.
    assert!(service.snapshot_buffer().capacity() >= brisvox_models::smart_turn::RING_SAMPLES);
    // The analyses ran on the executor's threads, not on this one.
    assert_eq!(service.pool().config().name, "brisvox-turn");
}
