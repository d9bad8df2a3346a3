//! The real `brisvox serve` binary (mock providers, the real Silero VAD and
//! Smart Turn models) answers a WebRTC caller: a str0m peer
//! (`brisvox_testkit::webrtc::Caller`) posts its SDP offer to `/webrtc/offer`,
//! connects over loopback UDP (ICE, DTLS-SRTP, SCTP), plays a recorded
//! utterance as Opus in real time and receives the bot's speech on the audio
//! track and the `/call` protocol's events on the data channel; `end` on the
//! data channel ends it.
//!
//! Needs the model files: skipped with a message when they are missing, failed
//! when `CI` is set.

mod common;

use std::time::{Duration, Instant};

use brisvox_testkit::webrtc::{Caller, signal};
use common::binary::{fixture, models_present};

/// The whole exchange must be over well within this.
const CALL_LIMIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_webrtc_caller_gets_a_spoken_answer_and_events() {
    if !models_present(false) {
        return;
    }
    let (server, _agent) = common::binary::start_mock_server();
    let mut caller = Caller::on_loopback().await.expect("a caller");
    let answer = signal(server.addr, "/webrtc/offer", &caller.offer, "webrtc-e2e-1")
        .await
        .expect("an answer");
    // As `/call`'s `started` says them: the mock server's providers.
    assert_eq!(answer["providers"]["stt"], "mock", "{answer}");
    assert_eq!(answer["mock"], true);
    caller
        .accept(answer["sdp"].as_str().expect("sdp"))
        .expect("answer accepted");

    let deadline = Instant::now() + CALL_LIMIT;
    caller
        .talk_until_answered(&fixture("librivox_0880"), deadline)
        .await
        .expect("an answer heard");
    assert_eq!(caller.final_transcript(), Some("mock transcript 1"));
    // The turn was answered, and its metrics say so: a response latency.
    let metrics = caller.event("turn_metrics").expect("metrics");
    let latency = metrics["response_latency_ms"].as_f64();
    assert!(latency.is_some_and(|ms| ms > 0.0), "{metrics}");

    assert_eq!(caller.end(deadline).await.expect("end"), "client_end");
    common::wait_metric(server.addr, "brisvox_calls_total{outcome=\"client_end\"} 1").await;
}
