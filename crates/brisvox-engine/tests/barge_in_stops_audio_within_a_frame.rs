//! A caller who talks over a long answer stops it: the transport is cleared
//! within one frame of the confirmed interruption, no frame of the old answer
//! follows the clear, and the new turn is answered.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::Models;
use brisvox_engine::sim::SinkEvent;
use common::*;

const FRAME_MS: f64 = 20.0;

#[tokio::test(start_paused = true)]
async fn talking_over_a_long_answer_clears_it_at_once() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(3);
    let long = "Sure, ".to_owned() + &"this answer goes on and on for a long while ".repeat(8);
    mocks.llm.push_answer(long.as_str());
    mocks.llm.push_answer("Okay, got it.");
    let run = run(
        then_silence(fx.samples.clone(), 3_000),
        sim_config(),
        &mocks,
        Models::energy_and_complete(),
    )
    .await;
    let r = &run.report;
    assert_eq!(r.turn_counters.barge_ins, 1, "{:?}", r.turn_counters);
    assert_eq!(mocks.llm.stats().started, 2);

    let interrupted = r
        .turns
        .iter()
        .find(|t| t.was_interrupted())
        .expect("an interrupted turn");
    let time_to_silence = interrupted
        .metrics()
        .time_to_silence
        .expect("AudioOutStopped marked after the clear");
    println!("time to silence: {time_to_silence:?}");
    assert!(time_to_silence <= Duration::from_millis(20));
    let interrupted_at = run.ms(interrupted.at(TurnEvent::Interrupted).expect("marked"));
    // The barge-in was confirmed shortly after the second utterance began.
    let (second_start, _) = fx.utterances[1];
    assert!(interrupted_at >= second_start as f64 && interrupted_at <= second_start as f64 + 200.0);

    let events = run.sink.events();
    let clears: Vec<f64> = events
        .iter()
        .filter_map(|e| match e {
            SinkEvent::Clear { at, .. } => Some(run.ms(*at)),
            SinkEvent::Frame { .. } => None,
        })
        .collect();
    assert_eq!(clears.len(), 1, "one clear for one barge-in");
    assert!(clears[0] - interrupted_at <= FRAME_MS);

    // No audible frame between the clear and the new answer's first audio.
    let answer = r
        .turns
        .iter()
        .find(|t| t.epoch() > interrupted.epoch() && t.at(TurnEvent::FirstAudioOut).is_some())
        .expect("the new turn is answered");
    let new_first = run.ms(answer.at(TurnEvent::FirstAudioOut).expect("first audio"));
    let old_after_clear = run
        .audible_frames_ms()
        .into_iter()
        .filter(|&at| at >= clears[0] && at < new_first)
        .count();
    assert_eq!(old_after_clear, 0, "old frames after the clear");
    // The old answer was audible right up to the interruption.
    let last_before = run
        .audible_frames_ms()
        .into_iter()
        .filter(|&at| at <= clears[0])
        .fold(f64::MIN, f64::max);
    assert!(
        interrupted_at - last_before <= FRAME_MS,
        "{last_before} vs {interrupted_at}"
    );
    assert_eq!(mocks.tts.stats().contexts_cancelled, 1);
}

/// A transport whose hand-off takes `delay` (a busy socket): a frame counts as
/// played only once its send completed.
struct SlowSink {
    delay: Duration,
    log: std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, bool)>>>,
}

impl brisvox_engine::CallSink for SlowSink {
    async fn send_audio(
        &mut self,
        _epoch: brisvox_core::Epoch,
        frame: brisvox_core::AudioFrame,
    ) -> Result<(), brisvox_engine::TransportClosed> {
        tokio::time::sleep(self.delay).await;
        let audible = frame.samples().iter().any(|&s| s != 0);
        let at = tokio::time::Instant::now().into_std();
        self.log.lock().expect("log").push((at, audible));
        Ok(())
    }

    async fn clear(&mut self, _floor: brisvox_core::Epoch) {
        let at = tokio::time::Instant::now().into_std();
        self.log.lock().expect("log").push((at, false));
    }
}

#[tokio::test(start_paused = true)]
async fn a_frame_in_flight_at_the_barge_in_is_never_played() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(3);
    let long = "Sure, ".to_owned() + &"this answer goes on and on for a long while ".repeat(8);
    mocks.llm.push_answer(long.as_str());
    mocks.llm.push_answer("Okay, got it.");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = SlowSink {
        delay: Duration::from_millis(15),
        log: log.clone(),
    };
    let report = brisvox_engine::run_call(
        sim_config(),
        brisvox_engine::CallEdge::new(
            brisvox_engine::sim::SimCaller::new(then_silence(fx.samples.clone(), 3_000)),
            sink,
        ),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await
    .expect("a valid config");
    assert_eq!(report.turn_counters.barge_ins, 1);
    let interrupted = report
        .turns
        .iter()
        .find(|t| t.was_interrupted())
        .expect("an interrupted turn");
    let at = interrupted.at(TurnEvent::Interrupted).expect("marked");
    assert!(interrupted.metrics().time_to_silence.expect("stopped") <= Duration::from_millis(20));
    let answer = report
        .turns
        .iter()
        .find(|t| t.epoch() > interrupted.epoch() && t.at(TurnEvent::FirstAudioOut).is_some())
        .expect("the new turn is answered");
    let new_first = answer.at(TurnEvent::FirstAudioOut).expect("first audio");
    let log = log.lock().expect("log").clone();
    let old_after = log
        .iter()
        .filter(|(t, audible)| *audible && *t >= at && *t < new_first)
        .count();
    assert_eq!(
        old_after, 0,
        "a frame of the old answer played after the barge-in"
    );
    // Frames queued or in flight at the barge-in are counted as stale, not
    // as played.
    assert!(report.pacer.stale_dropped >= 1);
}
