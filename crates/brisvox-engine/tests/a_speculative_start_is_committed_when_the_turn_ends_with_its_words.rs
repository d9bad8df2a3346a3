//! Speculative LLM start: with the STT's interim converged to the final, the
//! run started from the partial at the VAD stop is committed when the turn
//! ends with the same words. No second request is made, and each answer
//! starts sooner than the same call without speculation by about the wait
//! for the final (150 ms here). (Paused clock, energy VAD, fixed "complete"
//! verdict, the same seed for both calls.)

mod common;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use brisvox_engine::turn::SpeculationConfig;
use common::*;

async fn call(speculation: Option<SpeculationConfig>) -> (Run, Mocks) {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(11);
    mocks.stt.set_converged_interims(true);
    mocks.stt.set_interims_from_speech(true);
    let mut config = sim_config();
    config.turn.speculation = speculation;
    let run = run(
        then_silence(fx.samples.clone(), 2_000),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    (run, mocks)
}

fn first_audio_ms(run: &Run) -> Vec<f64> {
    run.answered()
        .iter()
        .map(|t| run.ms(t.at(TurnEvent::FirstAudioOut).expect("answered")))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_partial_run_is_committed_and_the_answer_starts_sooner() {
    let (off, off_mocks) = call(None).await;
    let (on, on_mocks) = call(Some(SpeculationConfig::default())).await;
    let s = on.report.speculation;
    assert_eq!(off.report.speculation, Default::default(), "off: no run");
    assert_eq!((s.started, s.committed), (2, 2), "{s:?}");
    assert_eq!(
        (s.discarded, s.withdrawn, s.wasted_output_tokens),
        (0, 0, 0)
    );
    assert_eq!(on_mocks.llm.stats().started, 2, "no second request");
    assert_eq!(
        on_mocks.llm.requests()[0].last_user_text(),
        off_mocks.llm.requests()[0].last_user_text(),
        "the same request"
    );
    let (a_off, a_on) = (first_audio_ms(&off), first_audio_ms(&on));
    assert_eq!((a_off.len(), a_on.len()), (2, 2));
    for (off, on) in a_off.iter().zip(&a_on) {
        assert!(
            off - on >= 100.0,
            "speculation answers sooner: {on:.0} ms against {off:.0} ms"
        );
    }
    assert_eq!(
        tts_texts(&on_mocks),
        tts_texts(&off_mocks),
        "the same answers"
    );
}
