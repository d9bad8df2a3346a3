//! Hang-up and transfer requests, one per carrier, as each REST API documents
//! them (method, path, auth, body); the Vonage JWT verifies with the
//! application's public key and carries the documented claims.

use base64::Engine as _;
use brisvox_transport::carrier::control::{
    CallAction, CallControl, ControlError, HttpMethod, TransferTarget,
};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
use serde_json::{Value, json};

const KEY: &str = include_str!("fixtures/vonage_test_key.pem");
const PUBLIC_DER: &[u8] = include_bytes!("fixtures/vonage_test_key.pub.der");

fn header<'a>(r: &'a brisvox_transport::carrier::control::HttpRequest, name: &str) -> &'a str {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

fn body(r: &brisvox_transport::carrier::control::HttpRequest) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

fn transfer(to: &str) -> CallAction {
    CallAction::Transfer(TransferTarget::parse(to).unwrap())
}

#[test]
fn twilio_transfer_updates_the_call_with_dial_twiml() {
    let c = CallControl::Twilio {
        api_base: "https://api.twilio.com".into(),
        account_sid: "AC123".into(),
        auth_token: "secret".into(),
    };
    let r = c
        .request("CA456", &transfer("sip:desk@pbx.example"), 0, "")
        .unwrap();
    assert_eq!(r.method, HttpMethod::Post);
    assert_eq!(
        r.url,
        "https://api.twilio.com/2010-04-01/Accounts/AC123/Calls/CA456.json"
    );
    let form = String::from_utf8(r.body).unwrap();
    assert!(form.starts_with("Twiml=%3C%3Fxml"), "{form}");
    assert!(
        form.contains("%3CSip%3Esip%3Adesk%40pbx.example%3C%2FSip%3E"),
        "{form}"
    );
}

#[test]
fn telnyx_hangs_up_and_transfers_with_a_bearer_key() {
    let c = CallControl::Telnyx {
        api_base: "https://api.telnyx.com".into(),
        api_key: "KEY".into(),
    };
    let r = c.request("v3:abc", &CallAction::HangUp, 0, "").unwrap();
    assert_eq!(
        r.url,
        "https://api.telnyx.com/v2/calls/v3:abc/actions/hangup"
    );
    assert_eq!(header(&r, "Authorization"), "Bearer KEY");
    assert_eq!(body(&r), json!({}));
    let r = c.request("v3:abc", &transfer("+15550199"), 0, "").unwrap();
    assert_eq!(
        r.url,
        "https://api.telnyx.com/v2/calls/v3:abc/actions/transfer"
    );
    assert_eq!(body(&r), json!({"to": "+15550199"}));
}

#[test]
fn vonage_uses_a_signed_application_jwt() {
    let c = CallControl::vonage("https://api.nexmo.com", "app-1", KEY).unwrap();
    let r = c
        .request("uuid-1", &CallAction::HangUp, 1_700_000_000, "n-1")
        .unwrap();
    assert_eq!(r.method, HttpMethod::Put);
    assert_eq!(r.url, "https://api.nexmo.com/v1/calls/uuid-1");
    assert_eq!(body(&r), json!({"action": "hangup"}));
    let jwt = header(&r, "Authorization").strip_prefix("Bearer ").unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let head: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(head, json!({"alg": "RS256", "typ": "JWT"}));
    let claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(
        claims,
        json!({"application_id": "app-1", "iat": 1_700_000_000u64, "exp": 1_700_000_300u64, "jti": "n-1"})
    );
    let signed = format!("{}.{}", parts[0], parts[1]);
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, PUBLIC_DER)
        .verify(signed.as_bytes(), &b64.decode(parts[2]).unwrap())
        .expect("the JWT verifies with the application's public key");

    let r = c
        .request("uuid-1", &transfer("+447700900000"), 1, "n-2")
        .unwrap();
    assert_eq!(
        body(&r),
        json!({"action": "transfer", "destination": {"type": "ncco", "ncco": [
            {"action": "connect", "endpoint": [{"type": "phone", "number": "447700900000"}]}]}})
    );
}

#[test]
fn a_call_without_an_id_cannot_be_addressed() {
    let c = CallControl::Telnyx {
        api_base: "x".into(),
        api_key: "k".into(),
    };
    assert_eq!(
        c.request("", &CallAction::HangUp, 0, ""),
        Err(ControlError::NoCallId)
    );
}
