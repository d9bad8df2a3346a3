//! Plivo and Telnyx calls set up as docs/telephony/plivo.md and telnyx.md
//! say: the answer webhooks (`/plivo/answer`, `/telnyx/texml`) check the
//! carrier's signature (Plivo `X-Plivo-Signature-V3` with the auth token,
//! Telnyx `telnyx-signature-ed25519` with the account's public key) and
//! answer with the XML that streams the call here, the caller, the callee,
//! the configured parameters and the route token passed the carrier's way;
//! the stream opened as that XML says is answered. Forged, stale or unsigned
//! requests are refused; without signature checks the route token is asked.

mod common;

use std::sync::Arc;

use base64::Engine as _;
use brisvox_server::handler::EchoCallHandler;
use brisvox_transport::Carrier;
use brisvox_transport::carrier::control::form_encode;
use brisvox_transport::carrier::emulator::ServerCommand;
use brisvox_transport::plivo_answer::signature_v3;
use common::carrier::{FakeCarrier, Heard, test_format};
use ring::rand::SystemRandom;
use ring::signature::{Ed25519KeyPair, KeyPair};

/// The environment: alphanumeric secrets (Plivo's extraHeaders take no others).
fn env(name: &str) -> Option<String> {
    Some(format!("tok{}", name.replace('_', "")))
}

fn agent(telnyx_public_key: &str) -> String {
    format!(
        r#"
[server.auth.plivo]
token = "${{PLIVO_STREAM_TOKEN}}"
[server.auth.telnyx]
token = "${{TELNYX_STREAM_TOKEN}}"
[telephony]
public_url = "https://bot.example.com"
parameters = {{ agent = "support" }}
[telephony.plivo]
auth_id = "MA0123"
auth_token = "${{PLIVO_AUTH_TOKEN}}"
[telephony.telnyx]
public_key = "{telnyx_public_key}"
codec = "PCMA"
"#
    )
}

const CALL: [(&str, &str); 3] = [
    ("CallUUID", "c-1"),
    ("From", "+15550100"),
    ("To", "+15550199"),
];

fn form() -> Vec<(String, String)> {
    CALL.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn body() -> String {
    let pairs: Vec<(&str, String)> = CALL.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    form_encode(&pairs)
}

/// A stream opened as the answer said (parameters as the carrier passes
/// them) is answered with audio.
async fn stream_is_answered(
    addr: std::net::SocketAddr,
    carrier: Carrier,
    params: serde_json::Value,
) {
    let ws = common::connect(addr, &format!("/{}", carrier.as_str())).await;
    let mut fake = FakeCarrier::new(ws, carrier, test_format(carrier));
    fake.open(params).await;
    for n in 0..10 {
        let f = fake.frame(true, n);
        fake.media(&f).await;
    }
    loop {
        match fake.next().await {
            Heard::Command(ServerCommand::Play(_)) => break,
            Heard::Command(_) => {}
            Heard::Closed(code) => panic!("closed ({code:?}) instead of answering"),
        }
    }
}

#[tokio::test]
async fn plivo_answers_a_signed_call_with_a_bidirectional_stream() {
    let srv = common::server_with_env(
        &agent(&format!("{}=", "A".repeat(43))),
        Arc::new(EchoCallHandler),
        &env,
    )
    .await;
    let addr = srv.local_addr();
    let url = "https://bot.example.com/plivo/answer";
    let post = |sig: String, nonce: &'static str| async move {
        let headers = [
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("X-Plivo-Signature-V3", sig.as_str()),
            ("X-Plivo-Signature-V3-Nonce", nonce),
        ];
        common::post(addr, "/plivo/answer", &headers, &body()).await
    };
    let token = "tokPLIVOAUTHTOKEN";
    let forged = signature_v3("another account", "POST", url, &form(), "n1");
    assert_eq!(post(forged, "n1").await.0, 403, "forged");
    let other_nonce = signature_v3(token, "POST", url, &form(), "n1");
    assert_eq!(post(other_nonce, "n2").await.0, 403, "another nonce");
    let (status, xml) = post(signature_v3(token, "POST", url, &form(), "n1"), "n1").await;
    assert_eq!(status, 200, "{xml}");
    assert_eq!(
        xml,
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Stream bidirectional="true" keepCallAlive="true" contentType="audio/x-mulaw;rate=8000" extraHeaders="agent=support,from=15550100,to=15550199,token=tokPLIVOSTREAMTOKEN">wss://bot.example.com/plivo</Stream></Response>"#
    );
    // Plivo hands extraHeaders to the stream's start; the token is checked there.
    let params = brisvox_transport::plivo::parse_extra_headers(
        "agent=support,from=15550100,to=15550199,token=tokPLIVOSTREAMTOKEN",
    );
    stream_is_answered(addr, Carrier::Plivo, params.into()).await;
    srv.drain(std::time::Duration::from_millis(100)).await;
}

#[tokio::test]
async fn telnyx_answers_a_signed_call_with_texml() {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let srv = common::server_with_env(
        &agent(&b64.encode(pair.public_key().as_ref())),
        Arc::new(EchoCallHandler),
        &env,
    )
    .await;
    let addr = srv.local_addr();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let post = |ts: u64, signed_body: String| {
        let sig = b64.encode(pair.sign(format!("{ts}|{signed_body}").as_bytes()).as_ref());
        async move {
            let ts = ts.to_string();
            let headers = [
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("telnyx-signature-ed25519", sig.as_str()),
                ("telnyx-timestamp", ts.as_str()),
            ];
            common::post(addr, "/telnyx/texml", &headers, &body()).await
        }
    };
    assert_eq!(post(now, "From=%2B1".into()).await.0, 403, "another body");
    assert_eq!(post(now - 3600, body()).await.0, 403, "stale");
    let (status, xml) = post(now, body()).await;
    assert_eq!(status, 200, "{xml}");
    assert_eq!(
        xml,
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://bot.example.com/telnyx" bidirectionalMode="rtp" bidirectionalCodec="PCMA"><Parameter name="agent" value="support"/><Parameter name="from" value="+15550100"/><Parameter name="to" value="+15550199"/><Parameter name="token" value="tokTELNYXSTREAMTOKEN"/></Stream></Connect></Response>"#
    );
    let params = serde_json::json!({"agent": "support", "token": "tokTELNYXSTREAMTOKEN"});
    stream_is_answered(addr, Carrier::Telnyx, params).await;
    srv.drain(std::time::Duration::from_millis(100)).await;
}

#[tokio::test]
async fn without_signature_checks_the_route_token_is_asked() {
    let toml = "[server.auth.plivo]\ntoken = \"${T}\"\naccept = \"bearer_or_query\"\n\
                [server.auth.telnyx]\ntoken = \"${T}\"\naccept = \"bearer_or_query\"\n\
                [telephony.plivo]\n[telephony.telnyx]\n";
    let srv = common::server_with_env(toml, Arc::new(EchoCallHandler), &env).await;
    let addr = srv.local_addr();
    for path in ["/plivo/answer", "/telnyx/texml"] {
        assert_eq!(
            common::post(addr, path, &[], &body()).await.0,
            401,
            "{path}"
        );
        let with = format!("{path}?token=tokT");
        assert_eq!(
            common::post(addr, &with, &[], &body()).await.0,
            200,
            "{path}"
        );
    }
    let none = common::server_with_env("", Arc::new(EchoCallHandler), &env).await;
    for path in ["/plivo/answer", "/telnyx/texml"] {
        assert_eq!(
            common::post(none.local_addr(), path, &[], &body()).await.0,
            404,
            "{path}"
        );
    }
    srv.drain(std::time::Duration::from_millis(100)).await;
    none.drain(std::time::Duration::from_millis(100)).await;
}
