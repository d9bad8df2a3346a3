//! The production models in the assembled call, deterministically: Silero
//! through the batched VAD service and Smart Turn v3.2, both on inline pools
//! (each job runs inside its submit, so the paused clock sees no thread).
//! Two utterances are two turns, each answered once after its real end; the
//! 400 ms pause inside a sentence is a VAD stop that Smart Turn judges
//! incomplete, so the resumed speech is the same turn (adaptive policy).
//!
//! Skipped (with a message) when the model files or ONNX Runtime are missing,
//! unless `CI` is set (`brisvox_models::runtime::models_required`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::turn::TurnPolicy;
use brisvox_engine::{Models, VadSource, VerdictSource};
use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::runtime::models_required;
use brisvox_models::smart_turn::{SmartTurn, SmartTurnConfig};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::{SileroModel, SileroRate};
use common::*;

fn real_models() -> Option<Models> {
    let loaded = SileroModel::load()
        .map_err(|e| e.to_string())
        .and_then(|silero| {
            SmartTurn::load(SmartTurnConfig::default())
                .map(|turn| (silero, turn))
                .map_err(|e| e.to_string())
        });
    let (silero, turn) = match loaded {
        Ok(models) => models,
        Err(e) if !models_required() => {
            eprintln!("skipped: models not available ({e})");
            return None;
        }
        Err(e) => panic!("models required but not loadable: {e}"),
    };
    let vad = VadService::new(
        Arc::new(silero),
        InferencePool::inline(PoolConfig::named("vad")),
        VadServiceConfig::new(SileroRate::Hz16000),
    );
    Some(Models {
        vad: VadSource::Silero(vad),
        verdict: VerdictSource::SmartTurn {
            model: Arc::new(turn),
            pool: InferencePool::inline(PoolConfig::named("turn")),
        },
    })
}

#[tokio::test(start_paused = true)]
async fn silero_and_smart_turn_take_two_turns() {
    let Some(models) = real_models() else {
        return;
    };
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(4);
    let mut config = sim_config();
    config.vad.min_silence = Duration::from_millis(100);
    // The model may judge the first sentence incomplete; a 1 s hold keeps the
    // answer clear of the second utterance either way.
    config.turn.policy = TurnPolicy::Adaptive {
        incomplete_timeout: Duration::from_secs(1),
    };
    let run = run(
        then_silence(fx.samples.clone(), 4_000),
        config,
        &mocks,
        models,
    )
    .await;
    let r = &run.report;
    println!("{:?}", r.turn_counters);
    assert_eq!(r.turn_counters.turns, 2);
    assert_eq!(r.turn_counters.barge_ins, 0);
    assert_eq!(mocks.llm.stats().started, 2);
    assert_eq!(r.turn_counters.verdicts_failed, 0);
    assert_eq!(r.vad_windows_lost, 0);
    let c = r.turn_counters;
    assert_eq!(
        c.verdicts_complete + c.verdicts_incomplete,
        2,
        "one analysis per stop"
    );
    for (turn, (_, end)) in run.answered().iter().zip(&fx.utterances) {
        let m = turn.metrics();
        println!(
            "response latency {:?}, end of turn {:?}",
            m.response_latency, m.end_of_turn_delay
        );
        let speech_end = run.ms(turn.at(TurnEvent::UserSpeechEnd).expect("speech end"));
        assert!(
            (speech_end - *end as f64).abs() <= 100.0,
            "{speech_end} vs {end}"
        );
        let first_audio = run.ms(turn.at(TurnEvent::FirstAudioOut).expect("answered"));
        assert!(first_audio > *end as f64);
    }
}

#[tokio::test(start_paused = true)]
async fn smart_turn_holds_the_turn_through_a_pause() {
    let Some(models) = real_models() else {
        return;
    };
    let fx = fixture("en_pause_in_sentence");
    let mocks = Mocks::fixed(4);
    let mut config = sim_config();
    config.vad.min_silence = Duration::from_millis(100);
    let run = run(
        then_silence(fx.samples.clone(), 4_000),
        config,
        &mocks,
        models,
    )
    .await;
    let r = &run.report;
    println!("{:?}", r.turn_counters);
    assert_eq!(r.turn_counters.turns, 1);
    assert_eq!(r.turn_counters.responses, 1);
    assert_eq!(r.turn_counters.taken_back, 0);
    assert_eq!(mocks.llm.stats().started, 1);
    // The 400 ms pause was a Silero stop, judged by Smart Turn (not ended by
    // it), and the speech after it joined the same turn: two stops, two
    // finals, one request with both.
    let c = r.turn_counters;
    assert!(c.verdicts_incomplete >= 1, "{c:?}");
    assert_eq!(c.verdicts_complete + c.verdicts_incomplete, 2, "{c:?}");
    assert_eq!(mocks.stt.stats().finalizes, 2);
    assert_eq!(
        mocks.llm.requests()[0].last_user_text(),
        Some("utterance 0 utterance 1")
    );
    let (_, end) = fx.utterances[0];
    let audible = run.audible_frames_ms();
    assert!(audible.iter().all(|&at| at > end as f64));
}
