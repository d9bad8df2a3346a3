//! A WebRTC call survives 5 % packet loss each way: the str0m caller of
//! `brisvox_testkit::webrtc` reaches the real `brisvox serve` binary through a
//! loopback UDP proxy of this test that drops 5 % of the datagrams in each
//! direction (seeded: ICE, DTLS, SCTP and RTP alike), and still connects, is
//! heard (the final transcript comes back), hears an answer (at least 500 ms
//! of audible bot audio) and ends as the caller asked, the server's `end`
//! event reaching the caller (the server waits for its acknowledgement,
//! resending it if lost); the server filled the caller's
//! lost frames (`brisvox_webrtc_filled_frames_total` > 0: Opus in-band FEC and
//! concealment).
//!
//! Needs the model files: skipped with a message when they are missing, failed
//! when `CI` is set.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_testkit::lossy_udp::{LossCounts, Way, lossy_proxy};
use brisvox_testkit::webrtc::{Caller, signal};
use common::binary::{fixture, models_present};

/// Datagrams dropped in each direction, in percent.
const LOSS_PERCENT: u8 = 5;

/// The whole exchange must be over well within this.
const CALL_LIMIT: Duration = Duration::from_secs(40);

/// Audible 20 ms bot frames the caller must hear: 500 ms of the answer.
const AUDIBLE_FLOOR: usize = 25;

/// The answer's one host candidate, and the answer with it replaced by `to`.
fn candidate(answer: &str) -> SocketAddr {
    let lines: Vec<&str> = answer
        .lines()
        .filter(|l| l.starts_with("a=candidate:"))
        .collect();
    assert_eq!(lines.len(), 1, "one candidate: {answer}");
    let fields: Vec<&str> = lines[0].split_whitespace().collect();
    format!("{}:{}", fields[4], fields[5])
        .parse()
        .expect("an address")
}

fn filled_frames(metrics: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("brisvox_webrtc_filled_frames_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the counter")
}

#[tokio::test]
async fn a_webrtc_call_survives_5_percent_loss_each_way() {
    if !models_present(false) {
        return;
    }
    let (server, _agent) = common::binary::start_mock_server();
    let mut caller = Caller::on_loopback().await.expect("a caller");
    let answer = signal(server.addr, "/webrtc/offer", &caller.offer, "webrtc-loss-1")
        .await
        .expect("an answer");
    let sdp = answer["sdp"].as_str().expect("sdp");
    let call_socket = candidate(sdp);
    let counts = Arc::new(LossCounts::default());
    let front = SocketAddr::from(([127, 0, 0, 1], 0));
    let (proxy, _task) = lossy_proxy(
        front,
        call_socket,
        LOSS_PERCENT,
        0x5eed_0005,
        counts.clone(),
    )
    .await
    .expect("the proxy");
    let from = format!(" {} {} typ host", call_socket.ip(), call_socket.port());
    let to = format!(" {} {} typ host", proxy.ip(), proxy.port());
    caller
        .accept(&sdp.replace(&from, &to))
        .expect("answer accepted");

    let deadline = Instant::now() + CALL_LIMIT;
    caller
        .talk_until_answered(&fixture("librivox_0880"), deadline)
        .await
        .expect("an answer heard");
    assert_eq!(caller.final_transcript(), Some("mock transcript 1"));
    // The whole answer, then the end.
    caller
        .run_until(deadline, "the answer's end", |c| {
            c.saw("bot_speaking_stopped")
        })
        .await
        .expect("bot_speaking_stopped");
    let audible = caller.audible_frames();
    assert!(audible >= AUDIBLE_FLOOR, "{audible} audible frames");
    // `end` both ways: a lost datagram of either is resent by SCTP, and the
    // server keeps the connection until the caller has acknowledged its
    // `end` event.
    let reason = caller.end(deadline).await.expect("the server's end");
    assert_eq!(reason, "client_end");
    let ended = "brisvox_calls_total{outcome=\"client_end\"} 1";
    let metrics = common::wait_metric(server.addr, ended).await;

    for (way, name) in [
        (Way::ToServer, "to the server"),
        (Way::ToClient, "to the caller"),
    ] {
        let (forwarded, dropped) = counts.get(way);
        // Seeded: about 5 % of a few hundred datagrams or more.
        assert!(
            forwarded > 200 && dropped > 0,
            "{name}: {forwarded} forwarded, {dropped} dropped"
        );
    }
    let filled = filled_frames(&metrics);
    assert!(filled > 0, "the server filled no lost frame:\n{metrics}");
    eprintln!(
        "to the server {:?}, to the caller {:?} (forwarded, dropped); {} audible bot frames; {filled} caller frames filled",
        counts.get(Way::ToServer),
        counts.get(Way::ToClient),
        caller.audible_frames()
    );
}
