//! Once a call is warm, the media path allocates nothing per 20 ms frame:
//! during a stretch where the caller is silent and the bot idle, frames still
//! flow through AudioIn (ring, VAD windows, the STT session's audio ring) and
//! the allocator is not called.
//! While an answer plays, the only allocations are the provider's own audio
//! chunks (the mock TTS hands each chunk over in a `Vec`).
//! (The test kit's counting global allocator, per thread; paused clock on the test's
//! thread, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_engine::sim::{RecordingSink, SimCaller};
use brisvox_engine::{CallSink, Models, TransportClosed, run_call};
use brisvox_testkit::alloc::{CountingAllocator, thread_allocations as allocations};
use common::*;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// A sink that keeps nothing (the recording sink's log would allocate).
struct CountingSink(Arc<AtomicU64>);

impl CallSink for CountingSink {
    async fn send_audio(
        &mut self,
        _epoch: brisvox_core::Epoch,
        _frame: AudioFrame,
    ) -> Result<(), TransportClosed> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn clear(&mut self, _floor: brisvox_core::Epoch) {}
}

#[tokio::test(start_paused = true)]
async fn playing_an_answer_allocates_only_the_providers_chunks() {
    let fx = fixture("en_two_utterances");
    let mocks = Mocks::fixed(2);
    let long = "Sure, ".to_owned() + &"this answer goes on and on ".repeat(6);
    mocks.llm.push_answer(long.as_str());
    let sent = Arc::new(AtomicU64::new(0));
    let call = tokio::spawn(run_call(
        sim_config(),
        brisvox_engine::CallEdge::new(
            SimCaller::new(fx.samples[..7_000 * 16].to_vec()),
            CountingSink(Arc::clone(&sent)),
        ),
        mocks.providers(),
        Models::energy_and_complete(),
    ));
    // The answer starts at ~4.0 s and lasts ~9 s; the LLM is done by ~5.5 s.
    tokio::time::sleep(Duration::from_millis(5_000)).await;
    let (allocs, frames, chunks) = (
        allocations(),
        sent.load(Ordering::Relaxed),
        mocks.tts.stats().audio_chunks,
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let allocs = allocations() - allocs;
    let frames = sent.load(Ordering::Relaxed) - frames;
    let chunks = mocks.tts.stats().audio_chunks - chunks;
    call.await.expect("the call task").expect("a valid config");
    println!("{allocs} allocations, {frames} frames out, {chunks} TTS chunks");
    assert!(frames >= 70, "the answer was playing: {frames} frames");
    // One chunk may be allocated by the mock just before the window and counted
    // just after it (or the reverse): one of slack, far below one per frame.
    assert!(
        allocs <= chunks + 1,
        "{allocs} allocations for {chunks} provider chunks"
    );
}

#[tokio::test(start_paused = true)]
async fn a_quiet_stretch_of_frames_allocates_nothing() {
    let fx = fixture("en_two_utterances");
    let frames = SimCaller::new(fx.samples.clone()).frames();
    let mocks = Mocks::fixed(2);
    let (sink, _log) = RecordingSink::new();
    let call = tokio::spawn(run_call(
        sim_config(),
        brisvox_engine::CallEdge::new(SimCaller::new(fx.samples), sink),
        mocks.providers(),
        Models::energy_and_complete(),
    ));
    // The first answer has played out by 5.5 s; the second utterance starts at 7.07 s.
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    let before = allocations();
    tokio::time::sleep(Duration::from_millis(1_400)).await;
    let during = allocations() - before;
    let report = call.await.expect("the call task").expect("a valid config");
    println!("{during} allocations over 70 frames");
    assert!(
        before > 0,
        "the allocator counts (the call's setup allocates)"
    );
    assert_eq!(report.frames_in, frames as u64);
    assert_eq!(
        report.turn_counters.responses, 2,
        "a real call around the window"
    );
    assert_eq!(during, 0, "allocations in 70 quiet frames");
}
