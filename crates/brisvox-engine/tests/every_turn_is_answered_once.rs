//! Two separate utterances make two turns; each is answered by exactly one LLM
//! request, and the bot never talks over the caller.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{CallEnd, Models};
use common::*;

#[tokio::test(start_paused = true)]
async fn two_utterances_get_two_answers_without_talk_over() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(1);
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    assert_eq!(r.end, CallEnd::Hangup);
    assert_eq!(r.turn_counters.turns, 2, "{:?}", r.turn_counters);
    assert_eq!(r.turn_counters.responses, 2);
    assert_eq!(r.turn_counters.taken_back, 0);
    assert_eq!(mocks.llm.stats().started, 2);
    let answered = run.answered();
    assert_eq!(answered.len(), 2);
    for (turn, (start, end)) in answered.iter().zip(&fx.utterances) {
        let first_audio = turn
            .at(TurnEvent::FirstAudioOut)
            .expect("answered with audio");
        assert!(
            run.ms(first_audio) > *end as f64,
            "answer before the end of speech"
        );
        let speech_end = run.ms(turn.at(TurnEvent::UserSpeechEnd).expect("speech end"));
        assert!(
            (speech_end - *end as f64).abs() <= 32.0 + 30.0 + 20.0,
            "VAD speech end {speech_end} ms vs truth {end} ms"
        );
        let _ = start;
    }
    // No audible bot frame while the caller speaks.
    for at in run.audible_frames_ms() {
        for (start, end) in &fx.utterances {
            assert!(
                at < *start as f64 || at > *end as f64,
                "bot audio at {at} ms during speech {start}..{end}"
            );
        }
    }
    // Each user message reached the LLM once, in order.
    let requests = mocks.llm.requests();
    assert_eq!(requests[0].last_user_text(), Some("utterance 0"));
    assert_eq!(requests[1].last_user_text(), Some("utterance 1"));
    assert_eq!(r.failed_responses, 0);
    assert!(r.provider_failures.is_empty(), "{:?}", r.provider_failures);
}
