//! A route with a token in `[server.auth]` refuses requests without it (401)
//! and accepts it where the agent file says (bearer header or query); a
//! carrier route defers a missing token to the stream's parameters.

mod common;

use std::sync::Arc;

use brisvox_server::handler::EchoCallHandler;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const AGENT: &str = r#"
[server.auth.call]
token = "${CALL_TOKEN}"
accept = "bearer"
[server.auth.twilio]
token = "${TWILIO_TOKEN}"
accept = "query"
[server.auth.metrics]
token = "${METRICS_TOKEN}"
"#;

async fn ws_status(addr: std::net::SocketAddr, path: &str, bearer: Option<&str>) -> u16 {
    let mut req = format!("ws://{addr}{path}").into_client_request().unwrap();
    if let Some(t) = bearer {
        req.headers_mut()
            .insert("Authorization", format!("Bearer {t}").parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((_, resp)) => resp.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn tokens_per_route() {
    // The test environment resolves ${NAME} to "tok-NAME".
    let srv = common::server_with(AGENT, Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();
    assert_eq!(ws_status(addr, "/call", None).await, 401);
    assert_eq!(ws_status(addr, "/call", Some("wrong")).await, 401);
    assert_eq!(
        ws_status(addr, "/call?token=tok-CALL_TOKEN", None).await,
        401,
        "bearer only"
    );
    assert_eq!(ws_status(addr, "/call", Some("tok-CALL_TOKEN")).await, 101);
    assert_eq!(
        ws_status(addr, "/twilio?token=wrong", None).await,
        401,
        "a wrong token on the upgrade"
    );
    // A carrier route upgrades without a token on the upgrade (or in a place
    // it does not accept): the stream's `token` parameter must then carry it
    // (carrier_token_as_a_stream_parameter.rs).
    assert_eq!(
        ws_status(addr, "/twilio", Some("tok-TWILIO_TOKEN")).await,
        101,
        "query only, else the stream parameter"
    );
    assert_eq!(
        ws_status(addr, "/twilio?token=tok-TWILIO_TOKEN", None).await,
        101
    );
    assert_eq!(common::get(addr, "/metrics").await.0, 401);
    assert_eq!(
        common::get(addr, "/metrics?token=tok-METRICS_TOKEN")
            .await
            .0,
        200
    );
    assert_eq!(
        common::get(addr, "/healthz").await.0,
        200,
        "health stays open"
    );
    srv.drain(std::time::Duration::from_millis(100)).await;
}
