//! A client that closes the websocket mid-call (a close frame, no `end`;
//! Plivo and Vonage close this way, with no stop message) gets the server's
//! close frame back, as RFC 6455 section 5.5.1 asks, before the TCP
//! connection ends: the closing handshake completes instead of the server
//! dropping the connection.

mod common;

use std::sync::Arc;

use brisvox_server::handler::EchoCallHandler;
use brisvox_transport::Carrier;
use common::carrier::{FakeCarrier, test_format};
use common::{START_PCM16, WAIT, Ws, send_binary, send_text};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

const KEY: &str = include_str!("../../brisvox-transport/tests/fixtures/vonage_test_key.pem");

/// Plivo and Vonage enabled, their REST APIs never reached in this test.
const CARRIERS: &str = r#"
[telephony.plivo]
auth_id = "MA0123"
auth_token = "${PLIVO_AUTH_TOKEN}"
[telephony.vonage]
application_id = "app-1"
private_key = "${VONAGE_PRIVATE_KEY}"
"#;

#[tokio::test]
async fn the_close_handshake_completes_on_call() {
    let srv = common::server_with("", Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    let mut ws = common::connect(addr, "/call").await;
    send_text(&mut ws, START_PCM16).await;
    assert_eq!(common::next_event(&mut ws).await["type"], "started");
    send_binary(&mut ws, vec![7; 640]).await;
    close_and_expect_the_reply(&mut ws).await;
    srv.drain(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn the_close_handshake_completes_on_carrier_routes() {
    // Plivo and Vonage end a call by closing the socket, with no stop message.
    for carrier in [Carrier::Plivo, Carrier::Vonage] {
        let srv = common::server_with_env(CARRIERS, Arc::new(EchoCallHandler), &|name| {
            Some(match name {
                "VONAGE_PRIVATE_KEY" => KEY.to_owned(),
                other => format!("tok-{other}"),
            })
        })
        .await;
        let addr = srv.local_addr();
        let path = format!("/{}", carrier.as_str());
        let ws = common::connect(addr, &path).await;
        let mut fake = FakeCarrier::new(ws, carrier, test_format(carrier));
        fake.open(serde_json::json!({})).await;
        let frame = fake.frame(true, 0);
        fake.media(&frame).await;
        common::wait_metric(addr, "brisvox_active_calls 1").await;
        close_and_expect_the_reply(&mut fake.ws).await;
        common::wait_metric(addr, "brisvox_active_calls 0").await;
        srv.drain(std::time::Duration::from_secs(1)).await;
    }
}

/// Sends a close frame and reads until the stream ends: the server's close
/// frame must come (after whatever it had queued), and the stream must end
/// cleanly, never with a reset.
async fn close_and_expect_the_reply(ws: &mut Ws) {
    ws.send(Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "bye".into(),
    })))
    .await
    .expect("the close frame is sent");
    let mut closed_with = None;
    loop {
        let msg = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("the server ends the connection in time");
        match msg {
            Some(Ok(Message::Close(frame))) => closed_with = Some(frame),
            Some(Ok(_)) => continue,
            None => break,
            Some(Err(e)) => panic!("the connection ended without the closing handshake: {e}"),
        }
    }
    assert!(
        closed_with.is_some(),
        "the server answered the close with a close frame"
    );
}
