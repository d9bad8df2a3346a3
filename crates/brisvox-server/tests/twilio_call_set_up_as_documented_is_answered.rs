//! A Twilio call set up as docs/telephony/twilio.md says: signatures checked
//! with the account's auth token, the voice webhook `/twilio/voice` answering
//! with `<Connect><Stream>` (no query string; the caller, the callee, the
//! configured parameters and the route token as `<Parameter>`s), Twilio
//! opening the stream with its signature and the parameters in
//! `customParameters`. The stream is answered with media and marks; requests
//! without a valid signature, and a stream without the token, are refused.

mod common;

use std::sync::Arc;
use std::time::Duration;

use brisvox_server::handler::EchoCallHandler;
use brisvox_transport::Carrier;
use brisvox_transport::carrier::control::form_encode;
use brisvox_transport::carrier::emulator::ServerCommand;
use brisvox_transport::twilio::signature::compute_signature;
use common::carrier::{FakeCarrier, Heard, test_format};

const AGENT: &str = r#"
[server.auth.twilio]
token = "${TWILIO_STREAM_TOKEN}"
[telephony]
parameters = { agent = "support" }
[telephony.twilio]
account_sid = "AC0123"
auth_token = "${TWILIO_AUTH_TOKEN}"
"#;

/// The auth token as the tests' environment resolves it.
const AUTH_TOKEN: &str = "tok-TWILIO_AUTH_TOKEN";

/// `(name, value)` of every `<Parameter>` and the `<Stream url>` of `twiml`.
fn read_twiml(twiml: &str) -> (String, Vec<(String, String)>) {
    let attr = |s: &str, name: &str| {
        let start = s.find(&format!("{name}=\"")).expect("attribute") + name.len() + 2;
        s[start..start + s[start..].find('"').expect("closing quote")].to_owned()
    };
    let url = attr(twiml, "url");
    let params = twiml
        .split("<Parameter ")
        .skip(1)
        .map(|p| (attr(p, "name"), attr(p, "value")))
        .collect();
    (url, params)
}

async fn voice_webhook(addr: std::net::SocketAddr, signed: bool) -> (u16, String) {
    let form: Vec<(String, String)> = [
        ("CallSid", "CA0001"),
        ("From", "+15550100"),
        ("To", "+15550199"),
        ("AccountSid", "AC0123"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let url = format!("https://{addr}/twilio/voice");
    let sig = if signed {
        compute_signature(AUTH_TOKEN, &url, &form)
    } else {
        compute_signature("another account", &url, &form)
    };
    let pairs: Vec<(&str, String)> = form.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("X-Twilio-Signature", sig.as_str()),
    ];
    common::post(addr, "/twilio/voice", &headers, &form_encode(&pairs)).await
}

#[tokio::test]
async fn the_documented_setup_answers_the_call() {
    let srv = common::server_with(AGENT, Arc::new(EchoCallHandler)).await;
    let addr = srv.local_addr();

    assert_eq!(voice_webhook(addr, false).await.0, 403, "forged webhook");
    let (status, twiml) = voice_webhook(addr, true).await;
    assert_eq!(status, 200, "{twiml}");
    let (url, params) = read_twiml(&twiml);
    assert_eq!(url, format!("wss://{addr}/twilio"), "no query string");
    for want in [
        ("agent", "support"),
        ("from", "+15550100"),
        ("to", "+15550199"),
        ("token", "tok-TWILIO_STREAM_TOKEN"),
    ] {
        assert!(
            params.contains(&(want.0.to_owned(), want.1.to_owned())),
            "{want:?} in {params:?}"
        );
    }

    // Twilio signs the stream's upgrade with the URL it opens, a GET.
    let path = url.strip_prefix(&format!("wss://{addr}")).unwrap();
    assert_eq!(common::connect_with(addr, path, &[]).await.err(), Some(403));
    let forged = compute_signature("another account", &url, &[]);
    let forged = [("X-Twilio-Signature", forged.as_str())];
    assert_eq!(
        common::connect_with(addr, path, &forged).await.err(),
        Some(403)
    );
    let sig = compute_signature(AUTH_TOKEN, &url, &[]);
    let signed = [("X-Twilio-Signature", sig.as_str())];

    let ws = common::connect_with(addr, path, &signed)
        .await
        .expect("101");
    let mut twilio = FakeCarrier::new(ws, Carrier::Twilio, test_format(Carrier::Twilio));
    let custom: serde_json::Map<_, _> = params
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    twilio.open(custom.into()).await;
    for n in 0..15 {
        let f = twilio.frame(true, n);
        twilio.media(&f).await;
    }
    let (mut played_bytes, mut marks) = (0, 0);
    while played_bytes < 1600 || marks == 0 {
        match twilio.next().await {
            Heard::Command(ServerCommand::Play(audio)) => played_bytes += audio.len(),
            Heard::Command(ServerCommand::Mark(name)) => {
                marks += 1;
                let echo = twilio.emu.mark_echo(&name);
                twilio.send(echo).await;
            }
            other => panic!("{other:?}"),
        }
    }
    let stop = twilio.emu.stop().expect("Twilio sends stop");
    twilio.send(stop).await;
    assert_eq!(twilio.until_close().await, Some(1000));

    // The same stream without the token in its parameters is refused.
    let ws = common::connect_with(addr, path, &signed)
        .await
        .expect("101");
    let mut twilio = FakeCarrier::new(ws, Carrier::Twilio, test_format(Carrier::Twilio));
    twilio.open(serde_json::json!({"agent": "support"})).await;
    assert_eq!(twilio.until_close().await, Some(1008));
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"unauthorized\"} 1").await;
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"client_end\"} 1").await;
    srv.drain(Duration::from_millis(100)).await;
}
