//! A Twilio stream (the recorded-shape fixture) over /twilio: the caller's
//! audio reaches the handler as 16 kHz frames and comes back as Twilio `media`
//! (base64 mu-law 8 kHz, the stream's `streamSid`) with `mark`s; `stop` ends
//! the call cleanly.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::{Seen, send_text};

const FIXTURE: &str = include_str!("../../brisvox-transport/tests/fixtures/twilio_session.json");

#[tokio::test]
async fn fixture_stream_round_trip() {
    let srv = common::server().await;
    let mut ws = common::connect(srv.local_addr(), "/twilio").await;
    let doc: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    let msgs = doc["messages"].as_array().unwrap();
    let (before_stop, stop) = msgs.split_at(msgs.len() - 1);
    for m in before_stop {
        send_text(&mut ws, &m.to_string()).await;
    }
    let (mut media_bytes, mut marks) = (0, 0);
    // 200 ms in; the resamplers hold back a little, so expect most of it back.
    while media_bytes < 1200 {
        let Seen::Event(ev) = common::next(&mut ws).await else {
            panic!("Twilio gets JSON text only")
        };
        assert_eq!(ev["streamSid"], "MZ18ad3ab5a668481ce02b83e7395059f0");
        match ev["event"].as_str().unwrap() {
            "media" => {
                let payload = ev["media"]["payload"].as_str().unwrap();
                media_bytes += base64::engine::general_purpose::STANDARD
                    .decode(payload)
                    .unwrap()
                    .len();
            }
            "mark" => {
                assert!(ev["mark"]["name"].as_str().unwrap().starts_with("bv-"));
                marks += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(
        marks >= 1,
        "a mark follows every {} frames",
        brisvox_server::MARK_EVERY_FRAMES
    );
    send_text(&mut ws, &stop[0].to_string()).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
    common::wait_metric(
        srv.local_addr(),
        "brisvox_calls_total{outcome=\"client_end\"} 1",
    )
    .await;
    srv.drain(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn bad_twilio_input_closes_with_a_code() {
    let srv = common::server().await;
    let addr = srv.local_addr();
    let doc: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    let start = doc["messages"][1].to_string();
    let wrong_format = start.replace("audio/x-mulaw", "audio/l16");
    let huge = format!(
        r#"{{"event":"connected","protocol":"{}"}}"#,
        "x".repeat(100_000)
    );
    let cases: [(Vec<String>, Option<Vec<u8>>, u16); 5] = [
        (vec![huge], None, 1009),
        (vec!["not json".into()], None, 1002),
        (vec![wrong_format], None, 1003),
        (vec![], Some(vec![1, 2, 3]), 1003),
        (vec![start.clone(), start], None, 1002),
    ];
    for (texts, binary, close) in cases {
        let mut ws = common::connect(addr, "/twilio").await;
        for t in &texts {
            send_text(&mut ws, t).await;
        }
        if let Some(b) = binary {
            common::send_binary(&mut ws, b).await;
        }
        let (events, code) = common::until_close(&mut ws).await;
        assert_eq!(code, Some(close), "{texts:?}");
        assert!(
            events.is_empty(),
            "no JSON errors towards Twilio: {events:?}"
        );
    }
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"protocol_error\"} 5").await;
    srv.drain(Duration::from_secs(1)).await;
}
