//! When the server ends a carrier call (here the handler: the agent hangs up
//! when the caller presses `#`), the stream closes and the phone call is hung
//! up through the carrier's REST API, against a local fake of that API that
//! checks the documented method, path, auth and body: Twilio, Telnyx, Plivo
//! and Vonage (whose JWT must verify with the application's public key). A
//! call the caller ended is not hung up again, and a refusing API is counted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use brisvox_engine::{CallEnd, CallSource, Control, Inbound};
use brisvox_server::handler::{CallFuture, CallHandler, CallStart, RouteEdge};
use brisvox_transport::Carrier;
use common::carrier::{FakeCarrier, test_format};
use common::rest::{FakeApi, Received, fake_api};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

const KEY: &str = include_str!("../../brisvox-transport/tests/fixtures/vonage_test_key.pem");
const PUBLIC_DER: &[u8] =
    include_bytes!("../../brisvox-transport/tests/fixtures/vonage_test_key.pub.der");

/// Ends the call (as an agent would) when the caller presses `#`.
struct HangsUpOnHash;

impl CallHandler for HangsUpOnHash {
    fn run_call(&self, _start: CallStart, mut edge: RouteEdge) -> CallFuture {
        Box::pin(async move {
            while let Some(item) = edge.source.recv().await {
                if let Inbound::Control {
                    control: Control::Dtmf { digit },
                    ..
                } = item
                    && digit.as_char() == '#'
                {
                    return Ok(CallEnd::Requested);
                }
            }
            Ok(CallEnd::Hangup)
        })
    }
}

fn env(name: &str) -> Option<String> {
    Some(match name {
        "VONAGE_KEY" => KEY.to_owned(),
        other => format!("tok-{other}"),
    })
}

fn agent(carrier: Carrier, base: &str) -> String {
    let table = match carrier {
        Carrier::Twilio => {
            "account_sid = \"AC0123\"\nauth_token = \"${TW}\"\nvalidate_signature = false"
        }
        Carrier::Telnyx => "api_key = \"${TELNYX_KEY}\"",
        Carrier::Plivo => "auth_id = \"MA0123\"\nauth_token = \"${PLIVO}\"",
        Carrier::Vonage => "application_id = \"app-1\"\nprivate_key = \"${VONAGE_KEY}\"",
        Carrier::Exotel => "",
    };
    format!(
        "[telephony.{}]\n{table}\napi_base = \"{base}\"\n",
        carrier.as_str()
    )
}

/// Runs a call that the agent hangs up; returns the request the API got.
async fn hung_up_call(carrier: Carrier, api: &mut FakeApi) -> Received {
    let toml = agent(carrier, &api.base());
    let srv = common::server_with_env(&toml, Arc::new(HangsUpOnHash), &env).await;
    let addr = srv.local_addr();
    let mut fake = open_call(addr, carrier, "call-1").await;
    let key = fake.emu.dtmf('#');
    fake.send(key).await;
    assert_eq!(fake.until_close().await, Some(1000));
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"completed\"} 1").await;
    let req = api.next().await;
    srv.drain(Duration::from_millis(100)).await;
    req
}

/// A started call of `carrier` with the id `call_id`, caller audio sent.
async fn open_call(addr: std::net::SocketAddr, carrier: Carrier, call_id: &str) -> FakeCarrier {
    let ws = common::connect(addr, &format!("/{}", carrier.as_str())).await;
    let mut fake = FakeCarrier::with_ids(ws, carrier, test_format(carrier), call_id);
    fake.open(serde_json::json!({})).await;
    for n in 0..3 {
        let f = fake.frame(true, n);
        fake.media(&f).await;
    }
    fake
}

fn basic(user: &str, password: &str) -> String {
    let raw = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

#[tokio::test]
async fn twilio_completes_the_call() {
    let mut api = fake_api(200).await;
    let req = hung_up_call(Carrier::Twilio, &mut api).await;
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/2010-04-01/Accounts/AC0123/Calls/call-1.json");
    assert_eq!(req.header("authorization"), basic("AC0123", "tok-TW"));
    assert_eq!(
        req.header("content-type"),
        "application/x-www-form-urlencoded"
    );
    assert_eq!(req.body_text(), "Status=completed");
}

#[tokio::test]
async fn telnyx_hangs_up_by_call_control_id() {
    let mut api = fake_api(200).await;
    let req = hung_up_call(Carrier::Telnyx, &mut api).await;
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v2/calls/call-1/actions/hangup");
    assert_eq!(req.header("authorization"), "Bearer tok-TELNYX_KEY");
    assert_eq!(req.body_text(), "{}");
}

#[tokio::test]
async fn plivo_deletes_the_call() {
    let mut api = fake_api(204).await;
    let req = hung_up_call(Carrier::Plivo, &mut api).await;
    assert_eq!(req.method, "DELETE");
    assert_eq!(req.path, "/v1/Account/MA0123/Call/call-1/");
    assert_eq!(req.header("authorization"), basic("MA0123", "tok-PLIVO"));
}

#[tokio::test]
async fn vonage_puts_a_hangup_with_a_signed_jwt() {
    let mut api = fake_api(204).await;
    let req = hung_up_call(Carrier::Vonage, &mut api).await;
    assert_eq!(req.method, "PUT");
    assert_eq!(req.path, "/v1/calls/call-1");
    assert_eq!(req.body_text(), r#"{"action":"hangup"}"#);
    let jwt = req.header("authorization").strip_prefix("Bearer ").unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let claims: serde_json::Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["application_id"], "app-1");
    let signed = format!("{}.{}", parts[0], parts[1]);
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, PUBLIC_DER)
        .verify(signed.as_bytes(), &b64.decode(parts[2]).unwrap())
        .expect("the JWT verifies with the application's public key");
}

#[tokio::test]
async fn a_call_the_caller_ended_is_not_hung_up_again() {
    let mut api = fake_api(200).await;
    let toml = agent(Carrier::Telnyx, &api.base());
    let srv = common::server_with_env(&toml, Arc::new(HangsUpOnHash), &env).await;
    let addr = srv.local_addr();
    let mut first = open_call(addr, Carrier::Telnyx, "ended-by-caller").await;
    let stop = first.emu.stop().expect("Telnyx sends stop");
    first.send(stop).await;
    assert_eq!(first.until_close().await, Some(1000));
    common::wait_metric(addr, "brisvox_calls_total{outcome=\"client_end\"} 1").await;
    let mut second = open_call(addr, Carrier::Telnyx, "ended-by-agent").await;
    let key = second.emu.dtmf('#');
    second.send(key).await;
    assert_eq!(second.until_close().await, Some(1000));
    let req = api.next().await;
    assert_eq!(
        req.path, "/v2/calls/ended-by-agent/actions/hangup",
        "the first request is for the call the agent ended"
    );
    srv.drain(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_refusing_api_is_counted() {
    let mut api = fake_api(401).await;
    let toml = agent(Carrier::Telnyx, &api.base());
    let srv = common::server_with_env(&toml, Arc::new(HangsUpOnHash), &env).await;
    let addr = srv.local_addr();
    let mut fake = open_call(addr, Carrier::Telnyx, "call-1").await;
    let key = fake.emu.dtmf('#');
    fake.send(key).await;
    assert_eq!(fake.until_close().await, Some(1000));
    api.next().await;
    common::wait_metric(
        addr,
        "brisvox_call_control_total{action=\"hang_up\",carrier=\"telnyx\",result=\"refused\"} 1",
    )
    .await;
    srv.drain(Duration::from_millis(100)).await;
}
