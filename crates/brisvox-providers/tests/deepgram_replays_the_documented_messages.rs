//! Deepgram's own documented examples (tests/fixtures/vendors/deepgram): the
//! adapter produces the documented Finalize, KeepAlive and CloseStream
//! messages and accepts the documented SpeechStarted, Results (shown without
//! `type` on the Endpointing page), UtteranceEnd and the CloseStream
//! Metadata. After Deepgram's endpointing ended the utterance a Finalize may
//! get no `from_finalize` reply ("not guaranteed if there is no significant
//! amount of audio data to process"): the adapter answers it itself after the
//! short idle wait, not the long one (set to a minute here, so a wait for it
//! would outlast the test's patience: no wall-clock bound needed).

mod support_deepgram;
mod support_fixtures;

use std::time::Duration;

use brisvox_providers::deepgram::{DeepgramStt, DeepgramSttOptions};
use brisvox_providers::{SttConfig, SttEvent, SttProvider, WordTiming};
use serde_json::Value;
use support_deepgram::{FakeWs, Got, PATIENCE, counting_frames};

async fn next(events: &mut brisvox_providers::SttEvents) -> SttEvent {
    tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("no event in time")
        .expect("session ended")
}

/// The next text message from the client, as JSON (audio skipped).
async fn next_text(conn: &mut support_deepgram::FakeConn) -> Value {
    loop {
        match conn.recv().await {
            Got::Text(t) => return serde_json::from_str(&t).unwrap(),
            Got::Audio(_) => continue,
            Got::Closed => panic!("closed"),
        }
    }
}

#[tokio::test]
async fn the_documented_exchange_in_order() {
    let mut fake = FakeWs::start().await;
    let mut options = DeepgramSttOptions::default();
    options.url = format!("{}/v1/listen", fake.base);
    options.keepalive_interval = Duration::from_millis(200);
    options.finalize_timeout = Duration::from_secs(60);
    options.keyterms = vec!["brisvox".into(), "Smart Turn".into()];
    let stt = DeepgramStt::new("dg-key", options);
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    // Nova-3 vocabulary goes out as `keyterm` (https://developers.deepgram.com/docs/keyterms).
    assert!(
        conn.uri.contains("keyterm=brisvox&keyterm=Smart%20Turn"),
        "{}",
        conn.uri
    );
    assert!(!conn.uri.contains("keywords"));

    for frame in counting_frames(0, 2) {
        sender.send_audio(&frame).unwrap();
    }
    let fixture = |name| support_fixtures::text("deepgram", name);
    conn.send_text(fixture("speech_started_response.json"))
        .await;
    assert_eq!(next(&mut events).await, SttEvent::SpeechStarted);
    conn.send_text(fixture("endpointing_results_response.json"))
        .await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Interim {
            text: "another big".into()
        }
    );
    conn.send_text(fixture("utterance_end_response.json")).await;
    assert_eq!(next(&mut events).await, SttEvent::UtteranceEnd);

    // Deepgram's endpointing ended the utterance: the Finalize goes out as
    // documented and, unanswered, is answered empty after the idle wait.
    sender.finalize().await.unwrap();
    assert_eq!(
        next_text(&mut conn).await,
        support_fixtures::json("deepgram", "finalize_request.json")
    );
    // Within PATIENCE, so after the short idle wait, not the minute-long one.
    assert_eq!(
        next(&mut events).await,
        SttEvent::Final {
            text: String::new(),
            confidence: None,
            from_finalize: true
        }
    );

    // Idle: the documented KeepAlive.
    assert_eq!(
        next_text(&mut conn).await,
        support_fixtures::json("deepgram", "keep_alive_request.json")
    );

    // Close: the documented CloseStream, then the documented Metadata.
    sender.close().await.unwrap();
    let close = support_fixtures::json("deepgram", "close_stream_request.json");
    loop {
        let got = next_text(&mut conn).await;
        if got == close {
            break;
        }
        assert_eq!(
            got,
            support_fixtures::json("deepgram", "keep_alive_request.json")
        );
    }
    conn.send_text(fixture("close_stream_metadata_response.json"))
        .await;
    conn.close(1000, "").await;
    assert_eq!(next(&mut events).await, SttEvent::Closed);
}

#[tokio::test]
async fn a_final_carries_its_word_times_first() {
    let mut fake = FakeWs::start().await;
    let mut options = DeepgramSttOptions::default();
    options.url = format!("{}/v1/listen", fake.base);
    let stt = DeepgramStt::new("dg-key", options);
    let (sender, mut events) = stt.connect(SttConfig::default()).await.unwrap().split();
    let mut conn = fake.accept().await;
    sender.send_audio(&counting_frames(0, 1)[0]).unwrap();
    let mut results = support_fixtures::json("deepgram", "endpointing_results_response.json");
    results["is_final"] = Value::Bool(true);
    conn.send_text(results.to_string()).await;
    assert_eq!(
        next(&mut events).await,
        SttEvent::Words(vec![
            WordTiming {
                word: "another".into(),
                start_ms: 297,
                end_ms: 797
            },
            WordTiming {
                word: "big".into(),
                start_ms: 852,
                end_ms: 1040
            },
        ])
    );
    assert!(
        matches!(next(&mut events).await, SttEvent::Final { ref text, .. } if text == "another big")
    );
}
