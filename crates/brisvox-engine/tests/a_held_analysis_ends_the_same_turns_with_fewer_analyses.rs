//! An analysis held until the stop's STT final (issue #20 item 1:
//! `EngineConfig::analysis_hold`) ends every turn of every 16 kHz fixture
//! exactly as the analysis at the stop does, with fewer analyses: with
//! `require_final` a verdict can end the turn only once the final is in, so
//! the analysis of a stop the caller went on from before the final could
//! never change the outcome, and is not run. The stop's audio is snapshotted
//! at the stop either way, so the verdicts that count are computed on the
//! same samples.
//!
//! Each fixture is one call with Silero and Smart Turn on inline pools and the
//! engine's defaults, run without and with the hold: the same turn counters
//! (turns, responses, fallbacks, empty turns) and the same timeline for every
//! turn (every mark but the verdict's own time, which moves to the final), the
//! same words to the LLM, and no more analyses on any fixture; fewer in all.
//!
//! Skipped (with a message) when the model files or ONNX Runtime are missing,
//! unless `CI` is set (`brisvox_models::runtime::models_required`).
//! (Paused clock, fixed mock latencies.)

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_core::timeline::{TurnEvent, TurnRecord};
use brisvox_engine::turn::TurnCounters;
use brisvox_engine::{EngineConfig, Models, VadSource, VerdictSource};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::smart_turn::{SmartTurn, SmartTurnService};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use common::*;

/// Longer than the engine's default final timeout: the analysis waits for
/// the final (or for the wait for it to give up).
const HOLD: Duration = Duration::from_secs(2);

struct Outcome {
    counters: TurnCounters,
    /// Every turn's marks but the verdict's, in ms from the call's start.
    timelines: Vec<Vec<(TurnEvent, Option<u128>)>>,
    /// The conversations the LLM was asked to answer, in order.
    asked: Vec<String>,
    analyses: u64,
    complete: u64,
}

fn timeline(record: &TurnRecord, t0: Instant) -> Vec<(TurnEvent, Option<u128>)> {
    TurnEvent::ALL
        .iter()
        .filter(|e| **e != TurnEvent::TurnVerdict)
        .map(|e| {
            let at = record.at(*e).map(|at| at.saturating_duration_since(t0));
            (*e, at.map(|d| d.as_micros()))
        })
        .collect()
}

async fn call(
    name: &str,
    hold: Duration,
    silero: &Arc<SileroModel>,
    turn: &Arc<SmartTurn>,
) -> Outcome {
    let service = SmartTurnService::with_pool(
        Arc::clone(turn),
        InferencePool::inline(PoolConfig::named("turn")),
    );
    let models = Models {
        vad: VadSource::Silero(VadService::new(
            Arc::clone(silero),
            InferencePool::inline(PoolConfig::named("vad")),
            VadServiceConfig::new(SileroRate::Hz16000),
        )),
        verdict: VerdictSource::Service(service.clone()),
    };
    let config = EngineConfig {
        analysis_hold: hold,
        ..EngineConfig::default()
    };
    let mocks = Mocks::fixed(3);
    let run = run(
        then_silence(fixture(name).samples, 4_000),
        config,
        &mocks,
        models,
    )
    .await;
    let stats = service.stats();
    assert_eq!(stats.failures(), 0, "{name}: inline analyses never fail");
    Outcome {
        counters: run.report.turn_counters,
        timelines: run
            .report
            .turns
            .iter()
            .map(|r| timeline(r, run.t0))
            .collect(),
        asked: mocks
            .llm
            .requests()
            .iter()
            .map(|r| format!("{:?}", r.messages))
            .collect(),
        analyses: stats.completed,
        complete: stats.complete_verdicts,
    }
}

/// The counters with the verdicts' own counts left out (they count analyses).
fn decisions(c: TurnCounters) -> TurnCounters {
    TurnCounters {
        verdicts_complete: 0,
        verdicts_incomplete: 0,
        verdicts_failed: 0,
        stale_verdicts: 0,
        ..c
    }
}

#[tokio::test(start_paused = true)]
async fn the_same_turns_end_at_the_same_times_with_fewer_analyses() {
    let Some((silero, turn)) = real_models() else {
        return;
    };
    let (mut before_total, mut after_total) = (0, 0);
    for name in FIXTURES_16K {
        let before = call(name, Duration::ZERO, &silero, &turn).await;
        let after = call(name, HOLD, &silero, &turn).await;
        println!(
            "{name}: {} turns; analyses {} -> {} (complete {} -> {})",
            before.counters.turns, before.analyses, after.analyses, before.complete, after.complete
        );
        assert!(before.counters.turns >= 1, "{name}: a turn");
        assert_eq!(
            decisions(after.counters),
            decisions(before.counters),
            "{name}"
        );
        assert_eq!(
            after.timelines, before.timelines,
            "{name}: the same turn timelines"
        );
        assert_eq!(
            after.asked, before.asked,
            "{name}: the same words to the LLM"
        );
        assert!(
            after.analyses <= before.analyses,
            "{name}: never more analyses"
        );
        // Every held analysis ran because its verdict could end the turn.
        let c = after.counters;
        assert_eq!(c.stale_verdicts, 0, "{name}");
        assert_eq!(
            after.analyses,
            c.verdicts_complete + c.verdicts_incomplete,
            "{name}"
        );
        before_total += before.analyses;
        after_total += after.analyses;
    }
    println!("analyses on the fixtures: {before_total} at the stop, {after_total} held");
    assert!(
        after_total < before_total,
        "the stops the caller went on from before the final cost no analysis"
    );
}
