//! The assembled call is deterministic: the same seed gives the same trace
//! (every transport frame and clear, every timeline mark, the counters), and
//! another seed gives another trace.
//! (Paused clock, energy VAD, fixed "complete" verdict, log-normal mock latencies.)

mod common;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use brisvox_engine::sim::SinkEvent;
use common::*;

const EVENTS: [TurnEvent; 17] = [
    TurnEvent::UserSpeechStart,
    TurnEvent::UserSpeechEnd,
    TurnEvent::VadStop,
    TurnEvent::SttFinalize,
    TurnEvent::SttFinal,
    TurnEvent::TurnVerdict,
    TurnEvent::TurnEnd,
    TurnEvent::LlmRequest,
    TurnEvent::LlmFirstToken,
    TurnEvent::LlmFirstSentence,
    TurnEvent::TtsRequest,
    TurnEvent::TtsFirstText,
    TurnEvent::TtsFirstByte,
    TurnEvent::FirstAudioOut,
    TurnEvent::LastAudioOut,
    TurnEvent::Interrupted,
    TurnEvent::AudioOutStopped,
];

async fn trace(seed: u64) -> Vec<String> {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::lognormal(seed);
    let run = run(
        then_silence(fx.samples, 3_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let mut lines = Vec::new();
    for event in run.sink.events() {
        lines.push(match event {
            SinkEvent::Frame { at, rms, len, .. } => {
                format!("frame {:.3} {rms:.1} {len}", run.ms(at))
            }
            SinkEvent::Clear { at, .. } => format!("clear {:.3}", run.ms(at)),
        });
    }
    for turn in &run.report.turns {
        for event in EVENTS {
            if let Some(at) = turn.at(event) {
                lines.push(format!(
                    "{} {} {:.3}",
                    turn.epoch(),
                    event.name(),
                    run.ms(at)
                ));
            }
        }
    }
    lines.push(format!("{:?}", run.report.turn_counters));
    lines.push(format!("{:?}", run.report.pacer));
    lines
}

#[tokio::test(start_paused = true)]
async fn a_seed_replays_exactly() {
    let first = trace(11).await;
    let second = trace(11).await;
    assert!(first.len() > 100, "a real trace: {} lines", first.len());
    assert_eq!(first, second);
    let other = trace(12).await;
    assert_ne!(first, other, "the latencies depend on the seed");
}
