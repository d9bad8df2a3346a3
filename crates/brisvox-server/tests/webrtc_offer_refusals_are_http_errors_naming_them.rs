//! `POST /webrtc/offer` refuses cleanly, as docs/WEBRTC.md says: 401 without
//! the call token or with a wrong one; 415 for a body not sent as JSON; 400
//! with an `error` event for a request or SDP it cannot use; 503 with an
//! `error` event when the server is full, draining, or has no free UDP port
//! in `[server.webrtc] udp_ports`. A refused offer holds no call slot.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use brisvox_server::handler::EchoCallHandler;
use brisvox_testkit::eventually_some_async;
use brisvox_testkit::webrtc::Caller;

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn offer_body(sdp: &str) -> String {
    serde_json::json!({"type": "offer", "sdp": sdp, "call_id": "refusals-1"}).to_string()
}

/// A real client's offer (the caller is never connected).
async fn valid_offer() -> String {
    let caller = Caller::on_loopback().await.expect("a caller");
    offer_body(&caller.offer)
}

async fn post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &str) -> u16 {
    common::post(addr, path, headers, body).await.0
}

/// Posts to `/webrtc/offer`; returns the status and the `error` event's code.
async fn refused(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (status, body) = common::post(addr, "/webrtc/offer", headers, body).await;
    let ev: serde_json::Value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("HTTP {status}: not an error event ({e}): {body}"));
    assert_eq!(ev["type"], "error", "{ev}");
    assert!(
        ev["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{ev}"
    );
    (status, ev["code"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn without_the_call_token_the_offer_is_a_401() {
    let agent = "[server.auth.call]\ntoken = \"${CALL_TOKEN}\"\naccept = \"bearer_or_query\"\n";
    let srv = common::server_with(agent, Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    let offer = valid_offer().await;
    assert_eq!(post(addr, "/webrtc/offer", &[JSON], &offer).await, 401);
    let wrong = [JSON, ("Authorization", "Bearer wrong")];
    assert_eq!(post(addr, "/webrtc/offer", &wrong, &offer).await, 401);
    assert_eq!(
        post(addr, "/webrtc/offer?token=wrong", &[JSON], &offer).await,
        401
    );
    let right = [JSON, ("Authorization", "Bearer tok-CALL_TOKEN")];
    assert_eq!(post(addr, "/webrtc/offer", &right, &offer).await, 200);
    let query = "/webrtc/offer?token=tok-CALL_TOKEN";
    assert_eq!(post(addr, query, &[JSON], &offer).await, 200);
    srv.drain(Duration::ZERO).await;
}

#[tokio::test]
async fn a_request_the_server_cannot_use_is_a_400_or_415_naming_it() {
    let srv = common::server_with("[limits]\nmax_calls = 1\n", Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    let offer = valid_offer().await;
    for content_type in [
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
    ] {
        let headers = [("Content-Type", content_type)];
        assert_eq!(
            refused(addr, &headers, &offer).await,
            (415, "unsupported_media_type".to_owned()),
            "{content_type}"
        );
    }
    assert_eq!(
        refused(addr, &[], &offer).await,
        (415, "unsupported_media_type".to_owned()),
        "no content type"
    );
    let bad_sdp = offer_body("v=0\r\nthis is not an offer\r\n");
    for (body, code) in [
        ("{", "malformed_json"),
        (r#"{"call_id":"a"}"#, "malformed_json"),
        (r#"{"sdp":"v=0","call_id":"a","extra":1}"#, "malformed_json"),
        (r#"{"sdp":"v=0","call_id":""}"#, "invalid_field"),
        (
            r#"{"sdp":"v=0","call_id":"a","type":"answer"}"#,
            "invalid_field",
        ),
        (bad_sdp.as_str(), "bad_offer"),
    ] {
        assert_eq!(
            refused(addr, &[JSON], body).await,
            (400, code.to_owned()),
            "{body}"
        );
    }
    let huge = offer_body(&"a".repeat(70 * 1024));
    assert_eq!(
        refused(addr, &[JSON], &huge).await,
        (400, "message_too_large".to_owned())
    );
    // None of them kept the one call slot.
    assert_eq!(
        common::get(addr, "/readyz").await,
        (200, "ready\n".to_owned())
    );
    srv.drain(Duration::ZERO).await;
}

#[tokio::test]
async fn a_full_or_draining_server_is_a_503_naming_why() {
    let srv = common::server_with("[limits]\nmax_calls = 1\n", Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    // The first call holds the one slot from its answer on (it never connects).
    assert_eq!(
        post(addr, "/webrtc/offer", &[JSON], &valid_offer().await).await,
        200
    );
    assert_eq!(
        refused(addr, &[JSON], &valid_offer().await).await,
        (503, "server_full".to_owned())
    );
    let (end_tx, end_rx) = tokio::sync::oneshot::channel::<()>();
    let plan = brisvox_server::serve::DrainPlan {
        admit_for: Duration::ZERO,
        grace: Duration::from_secs(3600),
    };
    let drain = tokio::spawn(srv.drain_with(plan, async move {
        let _ = end_rx.await;
    }));
    let offer = valid_offer().await;
    let code = eventually_some_async(common::WAIT, "an offer refused as draining", || async {
        let (status, code) = refused(addr, &[JSON], &offer).await;
        assert_eq!(status, 503, "{code}");
        // `server_full` until the drain's admitting step (zero long) is over.
        (code != "server_full").then_some(code)
    })
    .await;
    assert_eq!(code, "server_draining");
    // The drain ends the call that never connected.
    end_tx.send(()).unwrap();
    let report = tokio::time::timeout(common::WAIT, drain)
        .await
        .expect("the drain ends the unconnected call")
        .unwrap();
    assert_eq!(report.calls_at_start, 1);
}

#[tokio::test]
async fn no_free_udp_port_is_a_503_naming_it() {
    // The range's one port is taken by someone else.
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let agent = format!(
        "[limits]\nmax_calls = 1\n[server.webrtc]\nudp_ports = [{port}, {port}]\nudp_ip = \"127.0.0.1\"\n"
    );
    let srv = common::server_with(&agent, Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    assert_eq!(
        refused(addr, &[JSON], &valid_offer().await).await,
        (503, "no_udp_port".to_owned())
    );
    // The refused call gave its one slot back.
    assert_eq!(
        common::get(addr, "/readyz").await,
        (200, "ready\n".to_owned())
    );
    drop(taken);
    assert_eq!(
        post(addr, "/webrtc/offer", &[JSON], &valid_offer().await).await,
        200
    );
    srv.drain(Duration::ZERO).await;
}
