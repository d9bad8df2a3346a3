//! A transport that refuses audio (the caller's side is gone) ends the call
//! with `TransportClosed`, before the caller's audio runs out, and no task is
//! left.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use brisvox_core::AudioFrame;
use brisvox_engine::sim::SimCaller;
use brisvox_engine::{CallEnd, CallSink, Models, TransportClosed, run_call};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use common::*;

/// Takes `left` frames, then refuses.
struct ClosingSink {
    left: u32,
}

impl CallSink for ClosingSink {
    async fn send_audio(
        &mut self,
        _epoch: brisvox_core::Epoch,
        _frame: AudioFrame,
    ) -> Result<(), TransportClosed> {
        if self.left == 0 {
            return Err(TransportClosed);
        }
        self.left -= 1;
        Ok(())
    }

    async fn clear(&mut self, _floor: brisvox_core::Epoch) {}
}

#[tokio::test(start_paused = true)]
async fn a_refused_frame_ends_the_call() {
    let baseline = alive_tasks();
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(60);
    let caller = SimCaller::new(then_silence(fx.samples, 3_000));
    let frames = caller.frames() as u64;
    let report = run_call(
        sim_config(),
        brisvox_engine::CallEdge::new(caller, ClosingSink { left: 10 }),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await
    .expect("a valid config");
    assert_eq!(report.end, CallEnd::TransportClosed);
    assert_eq!(report.frames_out, 10);
    assert!(report.frames_in < frames);
    until_alive_tasks(baseline, "the call's tasks end").await;
}
