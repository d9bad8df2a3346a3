//! The real `brisvox serve`: failed token and signature checks are counted
//! per source address across routes (a wrong `/call` token, `/metrics`
//! without its token, an unsigned Twilio webhook, a carrier stream whose
//! parameters lack the route token); at `[server.failed_auth] max_failures`
//! the address gets 429 with `Retry-After` before any route's work, even
//! with the right token, while another address with the right token still
//! gets its call. Loopback is not exempt by default: the clients are
//! 127.0.0.2 and 127.0.0.1. No model files needed (energy VAD, no turn model).

mod common;

use std::net::{IpAddr, SocketAddr};

use brisvox_transport::Carrier;
use common::carrier::{FakeCarrier, test_format};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::Response;

const AGENT: &str = r#"
[vad]
detector = "energy"
[turn]
analyzer = "always_complete"
[server.auth.call]
token = "${BV_CALL_TOKEN}"
accept = "bearer"
[server.auth.exotel]
token = "${BV_EXOTEL_TOKEN}"
[server.auth.metrics]
token = "${BV_METRICS_TOKEN}"
[server.failed_auth]
max_failures = 4
block_s = 600
[telephony.twilio]
auth_token = "${BV_TWILIO_AUTH_TOKEN}"
[telephony.exotel]
"#;

/// A TCP connection to `server` from the local address `from`.
async fn connect_from(from: &str, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("a socket");
    let local = SocketAddr::new(from.parse::<IpAddr>().expect("an address"), 0);
    socket.bind(local).expect("loopback addresses bind");
    socket.connect(server).await.expect("the server accepts")
}

/// A websocket upgrade to `path` from `from` with an optional bearer token:
/// the HTTP answer (101 when upgraded), and the socket when upgraded.
async fn upgrade(
    from: &str,
    server: SocketAddr,
    path: &str,
    bearer: Option<&str>,
) -> (Response<Option<Vec<u8>>>, Option<common::Ws>) {
    let mut req = format!("ws://{server}{path}")
        .into_client_request()
        .unwrap();
    if let Some(t) = bearer {
        let value = format!("Bearer {t}").parse().unwrap();
        req.headers_mut().insert("Authorization", value);
    }
    let stream = connect_from(from, server).await;
    let stream = tokio_tungstenite::MaybeTlsStream::Plain(stream);
    match tokio_tungstenite::client_async(req, stream).await {
        Ok((ws, resp)) => (resp, Some(ws)),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => (*resp, None),
        Err(e) => panic!("the upgrade to {path} failed without an HTTP answer: {e}"),
    }
}

/// One HTTP/1.1 request (`Connection: close`) from `from`; the status.
async fn request(from: &str, server: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut s = connect_from(from, server).await;
    let req = format!(
        "{head} HTTP/1.1\r\nHost: {server}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(common::WAIT, s.read_to_end(&mut buf))
        .await
        .expect("the server answers")
        .unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    (text[9..12].parse().unwrap(), text)
}

/// The value of a counter in `/metrics` text.
fn counter(metrics: &str, name: &str) -> u64 {
    (metrics.lines())
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} in /metrics:\n{metrics}"))
}

#[tokio::test]
async fn an_address_with_too_many_failures_is_refused_and_others_are_not() {
    let agent = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(agent.path(), AGENT).unwrap();
    let env = [
        ("BV_CALL_TOKEN", "call-secret"),
        ("BV_EXOTEL_TOKEN", "exotel-secret"),
        ("BV_METRICS_TOKEN", "metrics-secret"),
        ("BV_TWILIO_AUTH_TOKEN", "twilio-auth"),
    ];
    let path = agent.path().to_str().unwrap();
    let server = common::binary::start_server_with(&["--agent", path], &env, None);
    let addr = server.addr;
    let bad = "127.0.0.2";

    // Four failures of different kinds from one address.
    let (resp, _) = upgrade(bad, addr, "/call", Some("wrong")).await;
    assert_eq!(resp.status(), 401, "a wrong /call token");
    assert_eq!(request(bad, addr, "GET /metrics", "").await.0, 401);
    let unsigned = request(bad, addr, "POST /twilio/voice", "CallSid=CA1").await;
    assert_eq!(unsigned.0, 403, "an unsigned Twilio webhook");
    let (resp, ws) = upgrade(bad, addr, "/exotel", None).await;
    assert_eq!(resp.status(), 101, "the token may come in the stream");
    let ws = ws.expect("upgraded");
    let mut exotel = FakeCarrier::new(ws, Carrier::Exotel, test_format(Carrier::Exotel));
    exotel.open(serde_json::json!({"lang": "en"})).await;
    assert_eq!(
        exotel.until_close().await,
        Some(1008),
        "no token in the stream"
    );

    // The fifth attempt is refused before the route looks at it, right
    // token or not.
    let (resp, _) = upgrade(bad, addr, "/call", Some("call-secret")).await;
    assert_eq!(resp.status(), 429);
    let retry: u64 = (resp.headers().get("retry-after"))
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=600).contains(&retry), "Retry-After {retry}");
    let body: serde_json::Value =
        serde_json::from_slice(resp.body().as_deref().unwrap_or_default()).unwrap();
    assert_eq!(body["code"], "too_many_auth_failures", "{body}");
    let (status, _) = request(bad, addr, "GET /metrics?token=metrics-secret", "").await;
    assert_eq!(status, 429, "every guarded route");
    assert_eq!(
        request(bad, addr, "GET /healthz", "").await.0,
        200,
        "health stays open"
    );

    // Another address with the right token still gets its call.
    let (resp, ws) = upgrade("127.0.0.1", addr, "/call", Some("call-secret")).await;
    assert_eq!(resp.status(), 101);
    drop(ws);
    let (status, text) = request("127.0.0.1", addr, "GET /metrics?token=metrics-secret", "").await;
    assert_eq!(status, 200);
    assert_eq!(counter(&text, "brisvox_auth_failures_total"), 4);
    assert_eq!(counter(&text, "brisvox_auth_rate_limited_total"), 2);
}
