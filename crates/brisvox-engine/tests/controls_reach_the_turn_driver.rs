//! Controls from the edge reach the turn driver with their time: a `say` is
//! spoken by the TTS and heard at the transport, an interrupting `say` cuts
//! the bot (a clear; not a barge-in), a DTMF key and a metadata update become
//! events and the metadata is in the call's context, a bad control is
//! answered with `ControlRejected`, and a hang-up request ends the call (a
//! transfer too, naming where to).
//! (Paused clock, energy VAD, fixed "complete" verdict, fixed mock latencies.)

mod common;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_engine::sim::{RecordingSink, SimCaller, SinkEvent};
use brisvox_engine::{
    CallContext, CallEdge, CallEnd, Control, DtmfDigit, EngineEvent, EventBus, Metadata, Models,
    run_call,
};
use common::*;

fn say(text: &str, interrupt: bool) -> Control {
    Control::Say {
        text: text.into(),
        interrupt,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Frames of audio (20 ms) the mock TTS speaks for `text`: 60 ms per char.
fn frames_for(text: &str) -> usize {
    text.chars().count() * 3
}

#[tokio::test(start_paused = true)]
async fn say_dtmf_metadata_and_hangup() {
    let mocks = Mocks::fixed(1);
    let long = "This announcement goes on for quite a while, long enough to be cut.";
    let short = "Sorry, one moment.";
    let caller = SimCaller::new(vec![0i16; 16 * 8_000])
        .with_control(ms(100), say(long, false))
        .with_control(ms(200), say("", false))
        .with_control(ms(1_500), say(short, true))
        .with_control(
            ms(1_600),
            Control::Dtmf {
                digit: DtmfDigit::new('7').expect("a key"),
            },
        )
        .with_control(
            ms(1_700),
            Control::Metadata {
                update: Metadata::from_iter([("order".to_owned(), 42.into())]),
            },
        )
        .with_control(
            ms(1_800),
            Control::Invalid {
                code: "invalid_dtmf".into(),
                message: "x".into(),
            },
        )
        .with_control(
            ms(5_000),
            Control::Hangup {
                reason: "done".into(),
            },
        );
    let context = CallContext {
        call_id: "c1".into(),
        transport: "sim".into(),
        metadata: Metadata::from_iter([("caller".to_owned(), "+15550100".into())]),
    };
    let mut events = EventBus::new();
    let mut rx = events.subscribe(256);
    let (sink, log) = RecordingSink::new();
    let t0 = tokio::time::Instant::now().into_std();
    let report = run_call(
        sim_config(),
        CallEdge::new(caller, sink)
            .with_context(context)
            .with_events(events),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await
    .expect("a valid config");

    // The hang-up request ended the call at its time, long before the audio ran out.
    assert_eq!(report.end, CallEnd::Requested);
    assert_eq!(report.context.metadata["caller"], "+15550100");
    assert_eq!(report.context.metadata["order"], 42);
    assert_eq!(report.turn_counters.barge_ins, 0, "a cut is not a barge-in");
    assert_eq!(mocks.llm.stats().started, 0, "a say bypasses the LLM");

    let got: Vec<EngineEvent> = std::iter::from_fn(|| rx.try_recv()).collect();
    assert!(
        matches!(&got[0], EngineEvent::CallStarted { call_id, metadata } if call_id == "c1" && metadata.len() == 1),
        "{:?}",
        got[0]
    );
    let rejected: Vec<&str> = got
        .iter()
        .filter_map(|e| match e {
            EngineEvent::ControlRejected { code, .. } => Some(code.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(rejected, ["invalid_field", "invalid_dtmf"]);
    assert!(got.contains(&EngineEvent::Dtmf {
        digit: DtmfDigit::new('7').expect("a key")
    }));
    assert!(
        got.iter()
            .any(|e| matches!(e, EngineEvent::MetadataUpdated { metadata } if metadata.len() == 2))
    );
    assert!(got.contains(&EngineEvent::Interrupted {
        old: Epoch(0),
        new: Epoch(1)
    }));

    // What the transport heard: the long say from about 100 ms, one clear at
    // about 1.5 s, then the whole short say in the new epoch.
    let sink = log.events();
    let clears: Vec<_> = sink
        .iter()
        .filter_map(|e| match e {
            SinkEvent::Clear { at, floor } => Some((at.duration_since(t0), *floor)),
            _ => None,
        })
        .collect();
    assert_eq!(clears.len(), 1, "{clears:?}");
    assert!(
        clears[0].0 >= ms(1_500) && clears[0].0 <= ms(1_520),
        "{clears:?}"
    );
    assert_eq!(clears[0].1, Epoch(1));
    let audible = |epoch: Epoch| {
        sink.iter()
            .filter(|e| matches!(e, SinkEvent::Frame { epoch: e2, rms, .. } if *e2 == epoch && *rms > 0.0))
            .count()
    };
    let first = audible(Epoch(0));
    assert!(first > 0 && first < frames_for(long), "cut short: {first}");
    let second = audible(Epoch(1));
    assert!(
        second.abs_diff(frames_for(short)) <= 2,
        "the whole say: {second}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_transfer_ends_the_call_naming_where_to() {
    let mocks = Mocks::fixed(1);
    let caller = SimCaller::new(vec![0i16; 16 * 8_000]).with_control(
        ms(300),
        Control::Transfer {
            to: "+15550199".into(),
        },
    );
    let t0 = tokio::time::Instant::now();
    let report = run_call(
        sim_config(),
        CallEdge::new(caller, RecordingSink::new().0),
        mocks.providers(),
        Models::energy_and_complete(),
    )
    .await
    .expect("a valid config");
    assert_eq!(
        report.end,
        CallEnd::Transferred {
            to: "+15550199".into()
        }
    );
    assert!(
        t0.elapsed() < ms(1_000),
        "ended at the control, not when the audio ran out"
    );
}
