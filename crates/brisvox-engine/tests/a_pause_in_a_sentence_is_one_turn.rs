//! A caller who pauses 400 ms mid-sentence and goes on is in one turn: the
//! VAD stops at the pause (Finalize sent, its final joins the turn's text),
//! speech resumes before the fixed-silence policy ends the turn, and the whole
//! sentence gets exactly one LLM request, answered after its real end.
//! (Paused clock, energy VAD, fixed-silence policy of 600 ms; no model.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use brisvox_engine::turn::TurnPolicy;
use common::*;

#[tokio::test(start_paused = true)]
async fn resumed_speech_after_a_pause_continues_the_turn() {
    let fx = fixture("en_pause_in_sentence");
    let mocks = Mocks::fixed(5);
    let mut config = sim_config();
    config.turn.policy = TurnPolicy::FixedSilence {
        silence: Duration::from_millis(600),
    };
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        config,
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    assert_eq!(r.turn_counters.turns, 1, "{:?}", r.turn_counters);
    assert_eq!(r.turn_counters.responses, 1);
    assert_eq!(r.turn_counters.taken_back, 0);
    assert_eq!(mocks.llm.stats().started, 1);
    // The pause was a VAD stop: two Finalizes, two finals, one text.
    assert_eq!(mocks.stt.stats().finalizes, 2);
    assert_eq!(
        mocks.llm.requests()[0].last_user_text(),
        Some("utterance 0 utterance 1")
    );
    let answered = run.answered();
    assert_eq!(answered.len(), 1);
    let (_, end) = fx.utterances[0];
    let first_audio = run.ms(answered[0].at(TurnEvent::FirstAudioOut).expect("answered"));
    assert!(
        first_audio > end as f64 + 600.0,
        "answered at {first_audio} ms"
    );
    let audible = run.audible_frames_ms();
    assert!(audible.iter().all(|&at| at > end as f64));
}
