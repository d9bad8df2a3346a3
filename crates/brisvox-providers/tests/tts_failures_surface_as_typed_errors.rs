//! Each injected TTS failure reaches the engine as a typed `ProviderError` with
//! the right `is_retryable`: at connect, confined to one context (the session
//! goes on), as a dropped connection (the session ends), as a stall, or as a
//! slow first byte.

mod common;

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::mock::{Fault, FaultPlan, MockTts};
use brisvox_providers::{
    ContextId, ErrorKind, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession,
};
use common::ms_since;
use tokio::time::Instant;

fn ctx(seq: u32) -> ContextId {
    ContextId::new(Epoch(1), seq)
}

async fn speak(session: &TtsSession, c: ContextId, text: &str) {
    let sender = session.sender();
    sender.start_context(c).await.unwrap();
    sender.send_text(c, text).await.unwrap();
    sender.flush(c).await.unwrap();
}

/// Events until the context's end (`Done` or an error) or `Closed`.
async fn until_end(session: &mut TtsSession, start: Instant) -> Vec<(u64, TtsEvent)> {
    let mut out = Vec::new();
    while let Some(event) = session.recv().await {
        let end = !matches!(event, TtsEvent::Audio { .. });
        out.push((ms_since(start), event));
        if end {
            break;
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn a_refused_connect_and_a_slow_connect() {
    let tts = MockTts::default();
    tts.set_connect_faults(
        FaultPlan::none()
            .at(
                0,
                Fault::Refuse(ProviderError::RateLimited {
                    retry_after_ms: Some(500),
                }),
            )
            .at(
                1,
                Fault::SlowStart {
                    factor: 1.0,
                    extra_ms: 250,
                },
            ),
    );
    let error = tts.connect(TtsConfig::default()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert!(error.is_retryable());
    let start = Instant::now();
    tts.connect(TtsConfig::default()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(250));
}

#[tokio::test(start_paused = true)]
async fn a_context_error_ends_that_context_and_the_session_goes_on() {
    let tts = MockTts::default();
    let error = ProviderError::server(500, "mock: synthesis failed");
    tts.set_faults(FaultPlan::none().at(
        0,
        Fault::FailAfter {
            items: 2,
            error: error.clone(),
        },
    ));
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let start = Instant::now();
    speak(&session, ctx(0), "a long enough text").await;
    let events = until_end(&mut session, start).await;
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[2],
        (
            190,
            TtsEvent::Error {
                ctx: Some(ctx(0)),
                error: error.clone()
            }
        )
    );
    assert!(error.is_retryable());
    speak(&session, ctx(1), "ok").await;
    let next = until_end(&mut session, Instant::now()).await;
    assert_eq!(next.last().unwrap().1, TtsEvent::Done { ctx: ctx(1) });
}

#[tokio::test(start_paused = true)]
async fn a_refused_context_fails_at_once() {
    let tts = MockTts::default();
    let error = ProviderError::protocol("mock: unknown voice");
    tts.set_faults(FaultPlan::none().at(0, Fault::Refuse(error.clone())));
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let start = Instant::now();
    speak(&session, ctx(0), "hello").await;
    let events = until_end(&mut session, start).await;
    assert_eq!(
        events,
        [(
            0,
            TtsEvent::Error {
                ctx: Some(ctx(0)),
                error
            }
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_connection_ends_the_session() {
    let tts = MockTts::default();
    tts.set_faults(FaultPlan::none().at(0, Fault::DisconnectAfter { items: 1 }));
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    speak(&session, ctx(0), "hello there").await;
    let events = until_end(&mut session, Instant::now()).await;
    let (_, TtsEvent::Error { ctx: None, error }) = &events[1] else {
        panic!("{events:?}")
    };
    assert_eq!(error.kind(), ErrorKind::Disconnected);
    assert!(error.is_retryable());
    assert_eq!(session.recv().await, Some(TtsEvent::Closed));
    assert_eq!(session.recv().await, None);
    assert!(session.sender().is_closed());
}

#[tokio::test(start_paused = true)]
async fn a_stalled_context_is_silent_until_cancelled() {
    let tts = MockTts::default();
    tts.set_faults(FaultPlan::none().at(0, Fault::StallAfter { items: 0 }));
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    speak(&session, ctx(0), "hello").await;
    let waited = tokio::time::timeout(Duration::from_secs(10), session.recv()).await;
    assert!(waited.is_err(), "a stalled context must not speak");
    session.sender().cancel(ctx(0));
    tokio::task::yield_now().await;
    assert_eq!(tts.stats().contexts_cancelled, 1);
}

#[tokio::test(start_paused = true)]
async fn a_slow_first_byte_is_scaled() {
    let tts = MockTts::default();
    tts.set_faults(FaultPlan::none().at(
        0,
        Fault::SlowStart {
            factor: 3.0,
            extra_ms: 0,
        },
    ));
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let start = Instant::now();
    speak(&session, ctx(0), "hi").await;
    let events = until_end(&mut session, start).await;
    assert_eq!(events[0].0, 450);
}
