//! The built-in `transfer_call` tool ends a phone call by handing it over:
//! a caller on a carrier route speaks, the (mock) model calls `transfer_call`
//! with one of the agent file's destinations, the configured `say` is heard,
//! the stream closes and the carrier's REST API is asked to transfer the
//! call, against a local fake of that API checking method, path, auth and
//! body: Twilio (`<Dial>` TwiML), Telnyx (`actions/transfer` to a SIP URI),
//! Vonage (an NCCO `connect`), Plivo (the call sent to a one-time URL of
//! this server, which answers Plivo's signed fetch with the `<Dial>`; when
//! Plivo refuses the transfer, the call is hung up instead). Exotel has no
//! REST access at all: its transfer is counted `unsupported`.
//! `brisvox_call_control_total` and `brisvox_calls_total` count each.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use brisvox_engine::{EngineEvent, EventObserver};
use brisvox_transport::Carrier;
use brisvox_transport::carrier::emulator::ServerCommand;
use brisvox_transport::plivo_answer::signature_v3;
use common::carrier::{FakeCarrier, Heard, test_format};
use common::rest::{FakeApi, Received, fake_api};
use futures_util::SinkExt;
use tokio_tungstenite::tungstenite::Message;

/// The text the bot handed to the TTS, in order.
#[derive(Default)]
struct BotText(Mutex<Vec<String>>);

impl EventObserver for BotText {
    fn observe(&self, event: &EngineEvent) {
        if let EngineEvent::BotText { text, .. } = event {
            self.0.lock().unwrap().push(text.clone());
        }
    }
}

fn agent(carrier: Carrier, base: &str) -> String {
    let access = match carrier {
        Carrier::Twilio => {
            "account_sid = \"AC0123\"\nauth_token = \"${TW}\"\nvalidate_signature = false"
        }
        Carrier::Telnyx => "api_key = \"${TELNYX_KEY}\"",
        Carrier::Plivo => "auth_id = \"MA0123\"\nauth_token = \"${PLIVO}\"",
        Carrier::Vonage => "application_id = \"app-1\"\nprivate_key = \"${VONAGE_KEY}\"",
        _ => "",
    };
    let api_base = if access.is_empty() {
        String::new()
    } else {
        format!("api_base = \"{base}\"")
    };
    format!(
        r#"
[llm.mock]
first_token_ms = 20
token_interval_ms = 5
tool_calls = [{{ when_heard = "mock transcript", tool = "transfer_call", arguments = '{{"destination":"{dest}"}}' }}]

[telephony.{name}]
{access}
{api_base}

[telephony.transfer]
say = "Please hold."
destinations = [
  {{ name = "sales", to = "+15550100", description = "New orders." }},
  {{ name = "desk", to = "sip:desk@pbx.example.com", description = "Anything else." }},
]
"#,
        dest = if carrier == Carrier::Telnyx {
            "desk"
        } else {
            "sales"
        },
        name = carrier.as_str(),
    )
}

/// Speaks (600 ms of tone, then silence) in real time, echoing marks, until
/// the server closes the stream; returns its close code.
async fn speak_until_closed(fake: &mut FakeCarrier) -> Option<u16> {
    let deadline = tokio::time::Instant::now() + common::WAIT;
    for n in 0.. {
        assert!(tokio::time::Instant::now() < deadline, "the call went on");
        let media = fake.emu.media(&fake.frame(n < 30, n));
        let msg = match media {
            brisvox_transport::Outbound::Text(t) => Message::text(t),
            brisvox_transport::Outbound::Binary(b) => Message::binary(b),
        };
        // The server may already be closing: what it did not read is moot.
        let _ = fake.ws.send(msg).await;
        let until = tokio::time::Instant::now() + Duration::from_millis(20);
        while let Ok(heard) = tokio::time::timeout_at(until, fake.next()).await {
            match heard {
                Heard::Closed(code) => return code,
                Heard::Command(ServerCommand::Mark(name)) => {
                    let echo = fake.emu.mark_echo(&name);
                    let _ = fake.ws.send(into_message(echo)).await;
                }
                Heard::Command(_) => {}
            }
        }
    }
    unreachable!()
}

fn into_message(out: brisvox_transport::Outbound) -> Message {
    match out {
        brisvox_transport::Outbound::Text(t) => Message::text(t),
        brisvox_transport::Outbound::Binary(b) => Message::binary(b),
    }
}

/// A call of `carrier` the model transfers; the bot's text and the server.
async fn transferred_call(
    carrier: Carrier,
    api: &FakeApi,
) -> (Arc<BotText>, brisvox_server::serve::RunningServer) {
    let said = Arc::new(BotText::default());
    let toml = agent(carrier, &api.base());
    let srv = common::engine_server_with_env("", &toml, Some(said.clone()), &env).await;
    let ws = common::connect(srv.local_addr(), &format!("/{}", carrier.as_str())).await;
    let mut fake = FakeCarrier::with_ids(ws, carrier, test_format(carrier), "call-7");
    fake.open(serde_json::json!({})).await;
    // The caller streams to the end, so its own write may meet the closed
    // socket before it reads the close frame: then there is no code to see.
    let code = speak_until_closed(&mut fake).await;
    assert!(matches!(code, None | Some(1000)), "closed with {code:?}");
    common::wait_metric(
        srv.local_addr(),
        "brisvox_calls_total{outcome=\"transferred\"} 1",
    )
    .await;
    (said, srv)
}

const VONAGE_KEY: &str = include_str!("../../brisvox-transport/tests/fixtures/vonage_test_key.pem");

fn env(name: &str) -> Option<String> {
    Some(match name {
        "VONAGE_KEY" => VONAGE_KEY.to_owned(),
        other => format!("tok-{other}"),
    })
}

fn basic(user: &str, password: &str) -> String {
    let raw = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The form field `name` of the request's body, decoded.
fn form_field(req: &Received, name: &str) -> String {
    let body = req.body_text();
    let value = body
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
        .unwrap_or_default()
        .replace('+', " ");
    let bytes = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twilio_dials_the_destination_after_the_say() {
    let mut api = fake_api(200).await;
    let (said, srv) = transferred_call(Carrier::Twilio, &api).await;
    let req = api.next().await;
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/2010-04-01/Accounts/AC0123/Calls/call-7.json");
    assert_eq!(req.header("authorization"), basic("AC0123", "tok-TW"));
    assert_eq!(
        form_field(&req, "Twiml"),
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Dial>+15550100</Dial></Response>"#
    );
    let text = said.0.lock().unwrap().join(" ");
    assert!(text.ends_with("Please hold."), "the say came last: {text}");
    common::wait_metric(
        srv.local_addr(),
        "brisvox_call_control_total{action=\"transfer\",carrier=\"twilio\",result=\"ok\"} 1",
    )
    .await;
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telnyx_transfers_to_a_sip_uri() {
    let mut api = fake_api(200).await;
    let (_said, srv) = transferred_call(Carrier::Telnyx, &api).await;
    let req = api.next().await;
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v2/calls/call-7/actions/transfer");
    assert_eq!(req.header("authorization"), "Bearer tok-TELNYX_KEY");
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(body, serde_json::json!({"to": "sip:desk@pbx.example.com"}));
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vonage_connects_the_number_by_ncco() {
    let mut api = fake_api(204).await;
    let (_said, srv) = transferred_call(Carrier::Vonage, &api).await;
    let req = api.next().await;
    assert_eq!(req.method, "PUT");
    assert_eq!(req.path, "/v1/calls/call-7");
    assert!(req.header("authorization").starts_with("Bearer ey"));
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"action": "transfer", "destination": {"type": "ncco", "ncco": [
            {"action": "connect", "endpoint": [{"type": "phone", "number": "15550100"}]}
        ]}})
    );
    srv.drain(Duration::from_millis(100)).await;
}

/// Plivo's fetch of `path` on the server at `addr`, with the call's
/// parameters as its form, signed with `auth_token` as Plivo signs it (the
/// URL it was given: no public_url, so the host the stream was opened on).
async fn plivo_fetch(addr: std::net::SocketAddr, path: &str, auth_token: &str) -> (u16, String) {
    let form = vec![("CallUUID".to_owned(), "call-7".to_owned())];
    let url = format!("https://{addr}{path}");
    let sig = signature_v3(auth_token, "POST", &url, &form, "n-1");
    let headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("X-Plivo-Signature-V3", sig.as_str()),
        ("X-Plivo-Signature-V3-Nonce", "n-1"),
    ];
    common::post(addr, path, &headers, "CallUUID=call-7").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plivo_sends_the_call_to_the_dial_it_serves_once() {
    let mut api = fake_api(202).await;
    let (_said, srv) = transferred_call(Carrier::Plivo, &api).await;
    let req = api.next().await;
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/Account/MA0123/Call/call-7/")
    );
    assert_eq!(req.header("authorization"), basic("MA0123", "tok-PLIVO"));
    assert_eq!(req.header("content-type"), "application/json");
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        (&body["legs"], &body["aleg_method"]),
        (&"aleg".into(), &"POST".into())
    );
    // No public_url: the base is the host the stream was opened on.
    let addr = srv.local_addr();
    let url = body["aleg_url"].as_str().unwrap().to_owned();
    let token = url
        .strip_prefix(&format!("https://{addr}/plivo/transfer/"))
        .unwrap_or_else(|| panic!("the XML is not served here: {url}"));
    assert_eq!(token.len(), 32, "{token}");
    let path = format!("/plivo/transfer/{token}");
    let forged = plivo_fetch(addr, &path, "another account").await;
    assert_eq!(forged.0, 403, "a forged fetch");
    let (status, xml) = plivo_fetch(addr, &path, "tok-PLIVO").await;
    assert_eq!(status, 200, "{xml}");
    assert_eq!(
        xml,
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Number>+15550100</Number></Dial></Response>"#
    );
    let again = plivo_fetch(addr, &path, "tok-PLIVO").await;
    assert_eq!(again.0, 404, "the token is spent");
    let guessed = plivo_fetch(addr, "/plivo/transfer/0123", "tok-PLIVO").await;
    assert_eq!(guessed.0, 404, "no other destination is served");
    common::wait_metric(
        addr,
        "brisvox_call_control_total{action=\"transfer\",carrier=\"plivo\",result=\"ok\"} 1",
    )
    .await;
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_plivo_refuses_hangs_the_call_up_instead() {
    let mut api = fake_api(500).await;
    let (_said, srv) = transferred_call(Carrier::Plivo, &api).await;
    let transfer = api.next().await;
    assert_eq!(transfer.method, "POST");
    let body: serde_json::Value = serde_json::from_slice(&transfer.body).unwrap();
    let url = body["aleg_url"].as_str().unwrap().to_owned();
    let req = api.next().await;
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("DELETE", "/v1/Account/MA0123/Call/call-7/"),
        "the caller is not left with nobody"
    );
    let metrics = common::wait_metric(
        srv.local_addr(),
        "brisvox_call_control_total{action=\"hang_up\",carrier=\"plivo\",result=\"refused\"} 1",
    )
    .await;
    assert!(
        metrics.contains(
            "brisvox_call_control_total{action=\"transfer\",carrier=\"plivo\",result=\"refused\"} 1"
        ),
        "{metrics}"
    );
    // The refused transfer's XML is not served.
    let path = url
        .split_once("/plivo/")
        .map(|(_, p)| format!("/plivo/{p}"))
        .unwrap();
    let fetch = plivo_fetch(srv.local_addr(), &path, "tok-PLIVO").await;
    assert_eq!(fetch.0, 404);
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exotel_has_no_rest_transfer() {
    let api = fake_api(200).await;
    let (_said, srv) = transferred_call(Carrier::Exotel, &api).await;
    common::wait_metric(
        srv.local_addr(),
        "brisvox_call_control_total{action=\"transfer\",carrier=\"exotel\",result=\"unsupported\"} 1",
    )
    .await;
    srv.drain(Duration::from_millis(100)).await;
}
