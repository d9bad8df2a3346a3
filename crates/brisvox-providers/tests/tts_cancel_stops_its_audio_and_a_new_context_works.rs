//! A barge-in cancel retires a TTS context at once: no audio of it is yielded
//! afterwards, not even audio queued before the cancel, and the next context
//! of the same session speaks normally.

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::mock::MockTts;
use brisvox_providers::{ContextId, SendError, TtsConfig, TtsEvent, TtsProvider};

#[tokio::test(start_paused = true)]
async fn cancelled_audio_is_never_yielded_and_the_next_context_speaks() {
    let tts = MockTts::default();
    let mut session = tts.connect(TtsConfig::default()).await.unwrap();
    let sender = session.sender().clone();
    let old = ContextId::new(Epoch(1), 0);
    sender.start_context(old).await.unwrap();
    sender
        .send_text(old, "A long answer that would take seconds to speak.")
        .await
        .unwrap();
    sender.flush(old).await.unwrap();
    assert!(matches!(session.recv().await, Some(TtsEvent::Audio { ctx, .. }) if ctx == old));
    // The engine falls behind for 200 ms: about ten chunks pile up in the queue.
    tokio::time::sleep(Duration::from_millis(200)).await;
    sender.cancel(old);
    assert!(!session.sender().is_closed());
    let stale = tokio::time::timeout(Duration::from_secs(5), session.recv()).await;
    assert!(
        stale.is_err(),
        "nothing of the cancelled context may come out: {stale:?}"
    );
    assert_eq!(tts.stats().contexts_cancelled, 1);

    let new = ContextId::new(Epoch(2), 1);
    sender.start_context(new).await.unwrap();
    sender.send_text(new, "Yes?").await.unwrap();
    sender.flush(new).await.unwrap();
    let mut chunks = 0;
    loop {
        match session.recv().await.unwrap() {
            TtsEvent::Audio { ctx, .. } => {
                assert_eq!(ctx, new);
                chunks += 1;
            }
            TtsEvent::Done { ctx } => {
                assert_eq!(ctx, new);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        chunks, 6,
        "4 characters at 60 ms = 240 ms = 6 chunks of 40 ms"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_or_older_context_cannot_be_used_again() {
    let tts = MockTts::default();
    let session = tts.connect(TtsConfig::default()).await.unwrap();
    let sender = session.sender();
    let first = ContextId::new(Epoch(1), 0);
    sender.start_context(first).await.unwrap();
    sender.cancel(first);
    assert_eq!(
        sender.send_text(first, "late").await,
        Err(SendError::StaleContext(first))
    );
    assert_eq!(
        sender.flush(first).await,
        Err(SendError::StaleContext(first))
    );
    assert_eq!(
        sender.start_context(first).await,
        Err(SendError::StaleContext(first))
    );
    let older = ContextId::new(Epoch::ZERO, 5);
    assert_eq!(
        sender.start_context(older).await,
        Err(SendError::StaleContext(older))
    );
    sender
        .start_context(ContextId::new(Epoch(1), 1))
        .await
        .unwrap();
}
