//! The local STT adapter's failures and limits: a recognizer error or panic
//! answers that utterance with an error and the session goes on; an utterance
//! over the cap keeps its end; a full queue refuses the newest utterance with
//! a retryable error; a dropped session's queued utterances are skipped; a
//! language the recognizer does not know is refused at connect; bad options
//! are refused.

mod support_local_stt;

use brisvox_providers::local::{LocalStt, LocalSttError};
use brisvox_providers::{ErrorKind, SttConfig, SttEvent, SttProvider};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use brisvox_testkit::{PATIENCE, eventually_async};
use support_local_stt::{
    FakeRecognizer, Reply, final_text, frame, next_event, no_partials, send_frames,
};

fn error_of(event: SttEvent) -> brisvox_providers::ProviderError {
    match event {
        SttEvent::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failed_or_panicking_recognition_is_an_error_and_the_session_goes_on() {
    let fake = FakeRecognizer::new(|i| match i {
        0 => Reply::Fail("model exploded"),
        1 => Reply::Panic,
        _ => Reply::Text("fine again".into()),
    });
    let stt = LocalStt::new(fake.clone(), no_partials()).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    for _ in 0..3 {
        send_frames(&sender, 5, &frame(16_000, 100)).await;
        sender.finalize().await.unwrap();
    }
    let first = error_of(next_event(&mut events).await);
    assert_eq!(first.kind(), ErrorKind::Server);
    assert!(first.to_string().contains("model exploded"), "{first}");
    let second = error_of(next_event(&mut events).await);
    assert!(second.to_string().contains("panicked"), "{second}");
    // The thread survived the panic.
    assert_eq!(final_text(next_event(&mut events).await), "fine again");
    assert_eq!(stt.stats().failed, 2);
}

#[tokio::test]
async fn an_utterance_over_the_cap_keeps_its_last_seconds() {
    let fake = FakeRecognizer::numbering();
    let mut options = no_partials();
    options.max_utterance_ms = 1_000;
    let stt = LocalStt::new(fake.clone(), options).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    send_frames(&sender, 100, &frame(16_000, 100)).await; // 2 s: the first 1 s is dropped
    send_frames(&sender, 10, &frame(16_000, 9_000)).await; // the loud end is kept
    sender.finalize().await.unwrap();
    assert_eq!(final_text(next_event(&mut events).await), "utterance 1");
    let call = &fake.calls()[0];
    assert_eq!(call.len, 16_000);
    assert!((call.peak - 9_000.0 / 32_768.0).abs() < 1e-6);
    assert_eq!(stt.stats().truncated, 1);
}

#[tokio::test]
async fn a_full_queue_refuses_the_newest_utterance_with_a_retryable_error() {
    let (fake, release) = FakeRecognizer::gated();
    let mut options = no_partials();
    options.queue_capacity = 1;
    let stt = LocalStt::new(fake.clone(), options).unwrap();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(stt.connect(SttConfig::default()).await.unwrap().split());
    }
    // Session 0 is taken by the thread (held at the gate), session 1 waits in
    // the queue, session 2 finds it full.
    for (i, (sender, _)) in sessions.iter().enumerate() {
        send_frames(sender, 5, &frame(16_000, 100)).await;
        sender.finalize().await.unwrap();
        if i == 0 {
            // The thread takes the first job and waits at the gate, so the
            // queue's one slot is free again.
            fake.wait_entered(1).await;
        }
    }
    let refused = error_of(next_event(&mut sessions[2].1).await);
    assert!(refused.is_retryable(), "{refused}");
    assert!(refused.to_string().contains("busy"), "{refused}");
    release.send(()).unwrap();
    release.send(()).unwrap();
    assert_eq!(
        final_text(next_event(&mut sessions[0].1).await),
        "utterance 1"
    );
    assert_eq!(
        final_text(next_event(&mut sessions[1].1).await),
        "utterance 2"
    );
    assert_eq!(stt.stats().busy, 1);
}

#[tokio::test]
async fn a_dropped_session_s_queued_utterances_are_skipped() {
    let (fake, release) = FakeRecognizer::gated();
    let stt = LocalStt::new(fake.clone(), no_partials()).unwrap();
    let (sender_a, mut events_a) = stt.connect(SttConfig::default()).await.unwrap().split();
    let without_b = alive_tasks();
    let (sender_b, events_b) = stt.connect(SttConfig::default()).await.unwrap().split();
    send_frames(&sender_a, 5, &frame(16_000, 100)).await;
    sender_a.finalize().await.unwrap();
    fake.wait_entered(1).await; // the thread holds A's job
    send_frames(&sender_b, 5, &frame(16_000, 100)).await;
    sender_b.finalize().await.unwrap();
    // The session counts the utterance and queues its job in one step.
    eventually_async(PATIENCE, "B's utterance is queued", || async {
        stt.stats().utterances == 2
    })
    .await;
    drop(events_b); // the call ends
    drop(sender_b);
    // B's session task ends, which closes its queued job's reply channel.
    until_alive_tasks(without_b, "B's session task ends").await;
    release.send(()).unwrap();
    let _ = release.send(());
    assert_eq!(final_text(next_event(&mut events_a).await), "utterance 1");
    // The thread reaches B's job and skips it.
    eventually_async(PATIENCE, "B's job is skipped", || async {
        stt.stats().skipped == 1
    })
    .await;
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn a_language_the_recognizer_does_not_know_is_refused_at_connect() {
    let stt = LocalStt::new(FakeRecognizer::english_only(), no_partials()).unwrap();
    let mut config = SttConfig::default();
    config.language = Some("tr".into());
    let error = stt.connect(config).await.unwrap_err();
    assert!(error.to_string().contains("\"tr\""), "{error}");
    let mut config = SttConfig::default();
    config.language = Some("en".into());
    assert!(stt.connect(config).await.is_ok());
}

#[test]
fn bad_options_are_refused() {
    for (threads, queue, max_ms, option) in [
        (0, 8, 30_000, "threads"),
        (1, 0, 30_000, "queue_capacity"),
        (1, 8, 10, "max_utterance_ms"),
    ] {
        let mut options = no_partials();
        options.threads = threads;
        options.queue_capacity = queue;
        options.max_utterance_ms = max_ms;
        match LocalStt::new(FakeRecognizer::numbering(), options) {
            Err(LocalSttError::BadOption { option: o, .. }) => assert_eq!(o, option),
            other => panic!("expected BadOption for {option}, got {other:?}"),
        }
    }
}
