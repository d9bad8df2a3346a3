//! `Control::Respond` (the agent link's `respond`) makes the model answer
//! over the conversation as it stands, without a caller turn: at once when
//! the bot is idle (no user message is added: after a context update the
//! answer reads the new context), after the bot's current answer when it is
//! speaking, and not at all when it arrives while the caller speaks (the
//! answer to the caller's turn spends it). A caller who talks over it cuts
//! it like any answer.
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_engine::sim::{RecordingSink, SimCaller, SinkEvent};
use brisvox_engine::{
    CallEdge, ContextUpdate, Control, EngineEvent, EventBus, Models, run_call, turn::TurnCounters,
};
use brisvox_providers::{LlmRequest, Role};
use common::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What a call of the two-utterance fixture (speech at 0.5-3.1 s and
/// 7.1-9.8 s) with `controls` gave: the model's requests, the events, the
/// audible frames per epoch, the counters.
struct Outcome {
    requests: Vec<LlmRequest>,
    events: Vec<EngineEvent>,
    sink: Vec<SinkEvent>,
    counters: TurnCounters,
}

async fn call_with(mocks: &Mocks, controls: Vec<(u64, Control)>) -> Outcome {
    let fx = fixture("en_two_utterances");
    let mut caller = SimCaller::new(then_silence(fx.samples, 3_000));
    for (at, control) in controls {
        caller = caller.with_control(ms(at), control);
    }
    let mut events = EventBus::new();
    let mut rx = events.subscribe(4096);
    let (sink, log) = RecordingSink::new();
    let report = run_call(
        sim_config(),
        CallEdge::new(caller, sink).with_events(events),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await
    .expect("a valid config");
    Outcome {
        requests: mocks.llm.requests(),
        events: std::iter::from_fn(|| rx.try_recv()).collect(),
        sink: log.events(),
        counters: report.turn_counters,
    }
}

impl Outcome {
    fn audible(&self, epoch: Epoch) -> usize {
        self.sink
            .iter()
            .filter(|e| matches!(e, SinkEvent::Frame { epoch: e2, rms, .. } if *e2 == epoch && *rms > 0.0))
            .count()
    }

    fn roles(&self, i: usize) -> Vec<Role> {
        self.requests[i].messages.iter().map(|m| m.role).collect()
    }
}

#[tokio::test(start_paused = true)]
async fn a_respond_in_silence_answers_at_once_and_the_caller_can_cut_it() {
    let mocks = Mocks::fixed(1);
    let long = "Welcome back, I can see your order from last week is still on its way to you.";
    mocks.llm.push_answer(long);
    // The respond's answer plays from about 0.5 s: the caller's first
    // utterance (from 0.5 s) talks over it.
    let out = call_with(&mocks, vec![(10, Control::Respond)]).await;
    assert_eq!(out.requests.len(), 3, "the respond and the two turns");
    assert_eq!(
        out.roles(0),
        [Role::System],
        "no caller turn: no user message"
    );
    assert!(
        out.events.contains(&EngineEvent::Interrupted {
            old: Epoch(0),
            new: Epoch(1)
        }),
        "{:?}",
        out.events
    );
    assert_eq!(out.counters.barge_ins, 1);
    let heard = out.audible(Epoch(0));
    assert!(heard > 0 && heard < long.len() * 3, "cut: {heard} frames");
    // The caller's turn is answered over what of it was heard (the cut
    // answer is kept only up to the last word heard).
    let second = &out.requests[1].messages;
    assert_eq!(second.last().map(|m| m.role), Some(Role::User));
    assert!(
        !second.iter().any(|m| &*m.text == long),
        "the whole answer is not in the conversation: {second:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_respond_after_a_context_update_reads_it_and_one_during_the_callers_turn_is_spent() {
    let mocks = Mocks::fixed(2);
    let update = ContextUpdate {
        system_prompt: Some("You are the front desk of a small hotel.".to_owned()),
        messages: None,
    };
    // 1.5 s: the caller is speaking. 5.5 s: the first answer is over.
    let out = call_with(
        &mocks,
        vec![
            (1_500, Control::Respond),
            (5_500, Control::Context(update)),
            (5_500, Control::Respond),
        ],
    )
    .await;
    assert_eq!(
        out.requests.len(),
        3,
        "turn 1, the respond at 5.5 s, turn 2 (the one at 1.5 s was spent)"
    );
    assert_eq!(out.roles(0), [Role::System, Role::User]);
    assert_eq!(out.roles(1), [Role::System, Role::User, Role::Assistant]);
    assert_eq!(
        last_text(&out.requests[1], Role::System),
        "You are the front desk of a small hotel."
    );
    assert_eq!(out.counters.barge_ins, 0);
}

#[tokio::test(start_paused = true)]
async fn a_respond_while_the_bot_speaks_waits_for_the_end_of_its_answer() {
    let mocks = Mocks::fixed(3);
    // Turn 1's answer ("Okay, got it.", 13 chars at 60 ms) plays from about
    // 4.0 s to 4.8 s: the respond at 4.2 s comes while it plays.
    let out = call_with(&mocks, vec![(4_200, Control::Respond)]).await;
    assert_eq!(out.requests.len(), 3);
    assert_eq!(out.roles(1), [Role::System, Role::User, Role::Assistant]);
    assert!(
        !out.sink
            .iter()
            .any(|e| matches!(e, SinkEvent::Clear { .. })),
        "nothing was cut"
    );
    let frames = "Okay, got it.".len() * 3;
    let both = out.audible(Epoch(1));
    assert!(
        both.abs_diff(2 * frames) <= 4,
        "the answer whole, then the respond's: {both} frames"
    );
}
