//! Each injected STT failure reaches the engine as a typed `ProviderError` with
//! the right `is_retryable`: at connect, mid-utterance (error or disconnect, the
//! session then ends), as a stall, or as a slow final.

mod common;

use std::time::Duration;

use brisvox_providers::mock::{Fault, FaultPlan, MockStt};
use brisvox_providers::{ErrorKind, ProviderError, SttConfig, SttEvent, SttProvider};
use common::{collect_stt, speech_frame};
use tokio::time::Instant;

fn stt_with(fault: Fault) -> MockStt {
    let stt = MockStt::default();
    stt.set_transcriber(|_| "one two three four five".to_owned());
    stt.set_faults(FaultPlan::none().at(0, fault));
    stt
}

/// 1 s of speech, finalize, wait, close; every event with its time.
async fn utterance(stt: &MockStt) -> Vec<(u64, SttEvent)> {
    let (sender, events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let collector = tokio::spawn(collect_stt(events, Instant::now()));
    for _ in 0..50 {
        // A failed session refuses audio (`Closed`); the events tell the story.
        let _ = sender.send_audio(&speech_frame());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = sender.finalize().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = sender.close().await;
    collector.await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_refused_connect_is_typed() {
    let stt = MockStt::default();
    stt.set_connect_faults(
        FaultPlan::none()
            .at(0, Fault::Refuse(ProviderError::Auth { status: Some(403) }))
            .at(1, Fault::Refuse(ProviderError::connect("mock: refused"))),
    );
    let auth = stt.connect(SttConfig::default()).await.unwrap_err();
    assert_eq!(auth.kind(), ErrorKind::Auth);
    assert!(!auth.is_retryable());
    let refused = stt.connect(SttConfig::default()).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Connect);
    assert!(refused.is_retryable());
    assert!(stt.connect(SttConfig::default()).await.is_ok());
    assert_eq!(stt.stats().sessions, 1);
}

#[tokio::test(start_paused = true)]
async fn an_error_mid_utterance_ends_the_session() {
    let stt = stt_with(Fault::FailAfter {
        items: 2,
        error: ProviderError::protocol("mock: bad frame"),
    });
    let events = utterance(&stt).await;
    let kinds: Vec<&SttEvent> = events.iter().map(|(_, e)| e).collect();
    assert!(matches!(kinds[0], SttEvent::Interim { .. }));
    assert!(matches!(kinds[1], SttEvent::Interim { .. }));
    assert_eq!(
        kinds[2],
        &SttEvent::Error(ProviderError::protocol("mock: bad frame"))
    );
    assert_eq!(kinds[3], &SttEvent::Closed);
    assert_eq!(kinds.len(), 4);
    assert!(!ProviderError::protocol("x").is_retryable());
}

#[tokio::test(start_paused = true)]
async fn a_disconnect_before_the_final_is_retryable() {
    let stt = stt_with(Fault::DisconnectAfter { items: 3 });
    let events = utterance(&stt).await;
    let error = events.iter().find_map(|(t, e)| match e {
        SttEvent::Error(error) => Some((*t, error.clone())),
        _ => None,
    });
    let (at, error) = error.unwrap();
    assert_eq!(at, 1150, "the drop comes when the final was due");
    assert_eq!(error.kind(), ErrorKind::Disconnected);
    assert!(error.is_retryable());
    assert_eq!(events.last().unwrap().1, SttEvent::Closed);
    assert!(
        !events
            .iter()
            .any(|(_, e)| matches!(e, SttEvent::Final { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn a_stall_withholds_the_final_until_close() {
    let stt = stt_with(Fault::StallAfter { items: 1 });
    let events = utterance(&stt).await;
    let kinds: Vec<&SttEvent> = events.iter().map(|(_, e)| e).collect();
    assert!(matches!(kinds[0], SttEvent::Interim { .. }));
    assert_eq!(kinds[1], &SttEvent::Closed);
    assert_eq!(events[1].0, 2000, "closed when asked, nothing in between");
}

#[tokio::test(start_paused = true)]
async fn a_slow_final_comes_late() {
    let stt = stt_with(Fault::SlowStart {
        factor: 1.0,
        extra_ms: 400,
    });
    let events = utterance(&stt).await;
    let at = events
        .iter()
        .find_map(|(t, e)| matches!(e, SttEvent::Final { .. }).then_some(*t));
    assert_eq!(at, Some(1550));
}
