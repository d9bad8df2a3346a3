//! The local STT recognises while the caller speaks: a pause's partial is sent
//! as an interim and, when only quiet audio follows it, is the final at once
//! without another recognition; speech after the partials is recognised at
//! the finalize with the last partial's tokens as the draft.

mod support_local_stt;

use brisvox_providers::local::{LocalStt, LocalSttOptions};
use brisvox_providers::{SttConfig, SttEvent, SttEvents, SttProvider};
use support_local_stt::{
    FakeRecognizer, Reply, final_text, frame, next_event, send_frames, word_tokens,
};

async fn next_interim(events: &mut SttEvents) -> String {
    match next_event(events).await {
        SttEvent::Interim { text } => text,
        other => panic!("expected an interim, got {other:?}"),
    }
}

#[tokio::test]
async fn a_pause_s_partial_is_the_final_when_only_quiet_audio_follows() {
    let fake = FakeRecognizer::new(|_| Reply::Text("hello there".into()));
    let mut options = LocalSttOptions::default();
    options.partial_every_ms = 60_000; // pauses only
    let stt = LocalStt::new(fake.clone(), options).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();

    send_frames(&sender, 50, &frame(16_000, 8_000)).await; // 1 s of "speech"
    send_frames(&sender, 5, &frame(16_000, 0)).await; // 100 ms of quiet: a pause
    assert_eq!(next_interim(&mut events).await, "hello there");
    send_frames(&sender, 5, &frame(16_000, 30)).await; // the VAD's hangover, quiet
    sender.finalize().await.unwrap();
    assert_eq!(final_text(next_event(&mut events).await), "hello there");

    let calls = fake.calls();
    assert_eq!(
        calls.len(),
        1,
        "the partial was the only recognition: {calls:?}"
    );
    assert!(calls[0].len >= 16_000 + 3 * 320, "it covered the speech");
    let stats = stt.stats();
    assert_eq!((stats.partials, stats.from_partial), (1, 1), "{stats:?}");
}

#[tokio::test]
async fn speech_after_the_partials_is_recognised_with_the_last_partial_as_the_draft() {
    let fake = FakeRecognizer::new(|i| {
        Reply::Tokens(
            [
                "he was not an",
                "he was not an ill",
                "he was not an ill disposed",
            ][i.min(2)]
            .into(),
        )
    });
    let mut options = LocalSttOptions::default();
    options.partial_every_ms = 500;
    let stt = LocalStt::new(fake.clone(), options).unwrap();
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let speech = frame(16_000, 8_000);

    send_frames(&sender, 25, &speech).await; // 0.5 s: the first cadence partial
    assert_eq!(next_interim(&mut events).await, "he was not an");
    send_frames(&sender, 25, &speech).await; // 0.5 s more: the second
    assert_eq!(next_interim(&mut events).await, "he was not an ill");
    send_frames(&sender, 10, &speech).await; // more speech, then the VAD stop
    sender.finalize().await.unwrap();
    assert_eq!(
        final_text(next_event(&mut events).await),
        "he was not an ill disposed"
    );

    let calls = fake.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls[0].draft.is_empty(), "the first partial has no draft");
    assert_eq!(calls[1].draft, word_tokens("he was not an"));
    assert_eq!(calls[2].draft, word_tokens("he was not an ill"));
    assert_eq!(
        calls[2].len,
        60 * 320,
        "the final recognises the whole utterance"
    );
    let stats = stt.stats();
    assert_eq!(
        (stats.partials, stats.with_draft, stats.from_partial),
        (2, 1, 0),
        "{stats:?}"
    );
}
