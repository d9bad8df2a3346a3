//! Call control over each carrier's REST API, as requests to send (sans-IO).
//!
//! Hanging up or transferring a call is not part of any media stream: it is a
//! REST call to the carrier, naming the call by the id the stream's start gave
//! ([`super::StreamStart::call_id`]). [`CallControl::request`] builds that
//! request (method, URL, headers, body); the server sends it with its HTTP
//! client. The API base URL is configurable so tests run against a local fake.
//!
//! | carrier | hang up | transfer | auth |
//! |---|---|---|---|
//! | Twilio | `POST /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json`, `Status=completed` | same, `Twiml=<Response><Dial>…` | Basic (account SID, auth token) |
//! | Telnyx | `POST /v2/calls/{call_control_id}/actions/hangup` | `POST …/actions/transfer`, `{"to": …}` | Bearer API key |
//! | Plivo | `DELETE /v1/Account/{auth_id}/Call/{call_uuid}/` | `POST` the same, `{"legs":"aleg","aleg_url":…}`: the call fetches its next XML from a URL the server serves ([`CallControl::plivo_transfer`]) | Basic (auth ID, auth token) |
//! | Vonage | `PUT /v1/calls/{uuid}`, `{"action":"hangup"}` | same, `{"action":"transfer","destination":{"type":"ncco",…}}` | Bearer JWT (RS256, application key) |
//! | Exotel | none: closing the Voicebot socket ends the applet and the call flow goes on | a Connect applet after the Voicebot applet | — |
//!
//! References: Twilio <https://www.twilio.com/docs/voice/api/call-resource#update-a-call-resource>;
//! Telnyx <https://developers.telnyx.com/api-reference/call-commands/hangup-call> and
//! <https://developers.telnyx.com/api-reference/call-commands/transfer-call>;
//! Plivo <https://www.plivo.com/docs/voice/api/call/hang-up-a-call> and
//! <https://www.plivo.com/docs/voice/api/call/transfer-a-call>;
//! Vonage <https://developer.vonage.com/en/api/voice#updateCall> and
//! <https://developer.vonage.com/en/getting-started/concepts/authentication#json-web-tokens>.

use std::sync::Arc;

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::json;

use super::Carrier;

/// Twilio's REST API.
pub const TWILIO_API_BASE: &str = "https://api.twilio.com";
/// Telnyx's REST API.
pub const TELNYX_API_BASE: &str = "https://api.telnyx.com";
/// Plivo's REST API.
pub const PLIVO_API_BASE: &str = "https://api.plivo.com";
/// Vonage's Voice API.
pub const VONAGE_API_BASE: &str = "https://api.nexmo.com";

/// Lifetime of a Vonage JWT, in seconds.
pub const VONAGE_JWT_TTL_S: u64 = 300;

/// Where to transfer a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferTarget {
    /// A phone number, E.164 (`+` and 3 to 20 digits).
    Number(String),
    /// A SIP URI (`sip:` or `sips:`).
    Sip(String),
}

impl TransferTarget {
    /// A number (`+15550199`) or a SIP URI (`sip:desk@pbx.example`).
    pub fn parse(s: &str) -> Result<Self, ControlError> {
        let s = s.trim();
        let sip = (s.starts_with("sip:") || s.starts_with("sips:"))
            && s.len() > 5
            && s.len() <= 256
            && !s
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || "<>\"".contains(c));
        if sip {
            return Ok(Self::Sip(s.to_owned()));
        }
        let digits = s.strip_prefix('+').unwrap_or(s);
        if (3..=20).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(Self::Number(format!("+{digits}")));
        }
        Err(ControlError::InvalidTarget {
            target: s.chars().take(64).collect(),
        })
    }
}

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallAction {
    /// End it.
    HangUp,
    /// Connect the caller elsewhere (the stream ends).
    Transfer(TransferTarget),
}

impl CallAction {
    /// The action's name, for messages (`hang up`, `transfer`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::HangUp => "hang up",
            Self::Transfer(_) => "transfer",
        }
    }
}

/// Why a call-control request could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// Not a number or SIP URI.
    #[error("transfer target {target:?} is neither an E.164 number nor a sip: URI")]
    InvalidTarget {
        /// The target given (at most 64 characters).
        target: String,
    },
    /// The carrier's API does not offer this action.
    #[error("{carrier} has no REST {action}")]
    Unsupported {
        /// The carrier's name.
        carrier: &'static str,
        /// The action.
        action: &'static str,
    },
    /// No call id (the stream's start named none).
    #[error("the call has no id to address it by")]
    NoCallId,
    /// The Vonage private key could not be read.
    #[error("the Vonage private key is not a PEM RSA key: {detail}")]
    BadKey {
        /// What was wrong.
        detail: String,
    },
    /// Signing the Vonage JWT failed.
    #[error("signing the Vonage JWT failed")]
    Signing,
}

/// An HTTP method a request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// POST.
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
}

/// An HTTP request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Method.
    pub method: HttpMethod,
    /// Full URL.
    pub url: String,
    /// Headers (name, value), `Authorization` and `Content-Type` among them.
    pub headers: Vec<(String, String)>,
    /// Body (empty for none).
    pub body: Vec<u8>,
}

/// A carrier account's REST access.
#[derive(Clone)]
#[non_exhaustive]
pub enum CallControl {
    /// Twilio: account SID and auth token.
    Twilio {
        /// API base URL ([`TWILIO_API_BASE`] in production).
        api_base: String,
        /// `AC…`.
        account_sid: String,
        /// The auth token.
        auth_token: String,
    },
    /// Telnyx: API key.
    Telnyx {
        /// API base URL ([`TELNYX_API_BASE`]).
        api_base: String,
        /// The API key (v2).
        api_key: String,
    },
    /// Plivo: auth ID and token.
    Plivo {
        /// API base URL ([`PLIVO_API_BASE`]).
        api_base: String,
        /// `MA…`.
        auth_id: String,
        /// The auth token.
        auth_token: String,
    },
    /// Vonage: application id and its private key.
    Vonage {
        /// API base URL ([`VONAGE_API_BASE`]).
        api_base: String,
        /// The Voice application's id.
        application_id: String,
        /// Its private key, parsed.
        key: Arc<RsaKeyPair>,
    },
}

impl std::fmt::Debug for CallControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials stay out of logs.
        f.debug_struct("CallControl")
            .field("carrier", &self.carrier().as_str())
            .field("api_base", &self.api_base())
            .finish_non_exhaustive()
    }
}

impl CallControl {
    /// Vonage access from the application id and its PEM private key
    /// (PKCS#8 `PRIVATE KEY`, as Vonage issues it, or PKCS#1 `RSA PRIVATE KEY`).
    pub fn vonage(
        api_base: &str,
        application_id: &str,
        private_key_pem: &str,
    ) -> Result<Self, ControlError> {
        Ok(Self::Vonage {
            api_base: api_base.to_owned(),
            application_id: application_id.to_owned(),
            key: Arc::new(parse_rsa_pem(private_key_pem)?),
        })
    }

    /// The carrier.
    pub fn carrier(&self) -> Carrier {
        match self {
            Self::Twilio { .. } => Carrier::Twilio,
            Self::Telnyx { .. } => Carrier::Telnyx,
            Self::Plivo { .. } => Carrier::Plivo,
            Self::Vonage { .. } => Carrier::Vonage,
        }
    }

    fn api_base(&self) -> &str {
        match self {
            Self::Twilio { api_base, .. }
            | Self::Telnyx { api_base, .. }
            | Self::Plivo { api_base, .. }
            | Self::Vonage { api_base, .. } => api_base.trim_end_matches('/'),
        }
    }

    /// The request that performs `action` on the call `call_id`. `now_unix_s`
    /// and `nonce` (unique per request) stamp the Vonage JWT; other carriers
    /// ignore them.
    pub fn request(
        &self,
        call_id: &str,
        action: &CallAction,
        now_unix_s: u64,
        nonce: &str,
    ) -> Result<HttpRequest, ControlError> {
        if call_id.is_empty() {
            return Err(ControlError::NoCallId);
        }
        let base = self.api_base();
        let id = path_segment(call_id);
        match self {
            Self::Twilio {
                account_sid,
                auth_token,
                ..
            } => Ok(twilio(base, account_sid, auth_token, &id, action)),
            Self::Telnyx { api_key, .. } => Ok(telnyx(base, api_key, &id, action)),
            Self::Plivo {
                auth_id,
                auth_token,
                ..
            } => plivo(base, auth_id, auth_token, &id, action),
            Self::Vonage {
                application_id,
                key,
                ..
            } => {
                let jwt = vonage_jwt(application_id, key, now_unix_s, nonce)?;
                Ok(vonage(base, &jwt, &id, action))
            }
        }
    }

    /// Plivo's transfer of the call `call_id`: the call's A leg fetches its
    /// next XML from `xml_url` (POST, signed by Plivo), which the server
    /// answers with the `<Dial>` of the destination
    /// ([`crate::plivo_answer::dial_xml`]). Plivo's API takes a target only
    /// through such a URL, so [`CallControl::request`] refuses a Plivo
    /// [`CallAction::Transfer`]; other carriers have no such request.
    pub fn plivo_transfer(
        &self,
        call_id: &str,
        xml_url: &str,
    ) -> Result<HttpRequest, ControlError> {
        let Self::Plivo {
            auth_id,
            auth_token,
            ..
        } = self
        else {
            return Err(ControlError::Unsupported {
                carrier: self.carrier().as_str(),
                action: "transfer to an XML URL",
            });
        };
        if call_id.is_empty() {
            return Err(ControlError::NoCallId);
        }
        let body = json!({"legs": "aleg", "aleg_url": xml_url, "aleg_method": "POST"});
        Ok(HttpRequest {
            method: HttpMethod::Post,
            url: plivo_call_url(self.api_base(), auth_id, &path_segment(call_id)),
            headers: vec![
                ("Authorization".into(), basic_auth(auth_id, auth_token)),
                ("Content-Type".into(), "application/json".into()),
            ],
            body: body.to_string().into_bytes(),
        })
    }
}

fn plivo_call_url(base: &str, auth_id: &str, call: &str) -> String {
    format!("{base}/v1/Account/{}/Call/{call}/", path_segment(auth_id))
}

fn twilio(base: &str, sid: &str, token: &str, call: &str, action: &CallAction) -> HttpRequest {
    let form = match action {
        CallAction::HangUp => vec![("Status", "completed".to_owned())],
        CallAction::Transfer(target) => vec![("Twiml", crate::twilio::twiml::dial(target))],
    };
    HttpRequest {
        method: HttpMethod::Post,
        url: format!(
            "{base}/2010-04-01/Accounts/{}/Calls/{call}.json",
            path_segment(sid)
        ),
        headers: vec![
            ("Authorization".into(), basic_auth(sid, token)),
            (
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            ),
        ],
        body: form_encode(&form).into_bytes(),
    }
}

fn telnyx(base: &str, key: &str, call: &str, action: &CallAction) -> HttpRequest {
    let (verb, body) = match action {
        CallAction::HangUp => ("hangup", json!({})),
        CallAction::Transfer(TransferTarget::Number(n) | TransferTarget::Sip(n)) => {
            ("transfer", json!({"to": n}))
        }
    };
    HttpRequest {
        method: HttpMethod::Post,
        url: format!("{base}/v2/calls/{call}/actions/{verb}"),
        headers: vec![
            ("Authorization".into(), format!("Bearer {key}")),
            ("Content-Type".into(), "application/json".into()),
        ],
        body: body.to_string().into_bytes(),
    }
}

fn plivo(
    base: &str,
    id: &str,
    token: &str,
    call: &str,
    action: &CallAction,
) -> Result<HttpRequest, ControlError> {
    if !matches!(action, CallAction::HangUp) {
        return Err(ControlError::Unsupported {
            carrier: "plivo",
            action: action.name(),
        });
    }
    Ok(HttpRequest {
        method: HttpMethod::Delete,
        url: plivo_call_url(base, id, call),
        headers: vec![("Authorization".into(), basic_auth(id, token))],
        body: Vec::new(),
    })
}

fn vonage(base: &str, jwt: &str, call: &str, action: &CallAction) -> HttpRequest {
    let body = match action {
        CallAction::HangUp => json!({"action": "hangup"}),
        CallAction::Transfer(target) => {
            let endpoint = match target {
                // Vonage numbers are E.164 without the plus.
                TransferTarget::Number(n) => {
                    json!({"type": "phone", "number": n.trim_start_matches('+')})
                }
                TransferTarget::Sip(uri) => json!({"type": "sip", "uri": uri}),
            };
            json!({"action": "transfer", "destination": {"type": "ncco",
                "ncco": [{"action": "connect", "endpoint": [endpoint]}]}})
        }
    };
    HttpRequest {
        method: HttpMethod::Put,
        url: format!("{base}/v1/calls/{call}"),
        headers: vec![
            ("Authorization".into(), format!("Bearer {jwt}")),
            ("Content-Type".into(), "application/json".into()),
        ],
        body: body.to_string().into_bytes(),
    }
}

/// A Vonage application JWT (RS256): `application_id`, `iat`, `exp`, `jti`.
pub fn vonage_jwt(
    application_id: &str,
    key: &RsaKeyPair,
    now_unix_s: u64,
    nonce: &str,
) -> Result<String, ControlError> {
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let header = b64(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = json!({
        "application_id": application_id,
        "iat": now_unix_s,
        "exp": now_unix_s + VONAGE_JWT_TTL_S,
        "jti": nonce,
    });
    let signing_input = format!("{header}.{}", b64(claims.to_string().as_bytes()));
    let mut sig = vec![0; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        signing_input.as_bytes(),
        &mut sig,
    )
    .map_err(|_| ControlError::Signing)?;
    Ok(format!("{signing_input}.{}", b64(&sig)))
}

/// An RSA private key from PEM (PKCS#8 or PKCS#1).
pub fn parse_rsa_pem(pem: &str) -> Result<RsaKeyPair, ControlError> {
    let bad = |detail: &str| ControlError::BadKey {
        detail: detail.to_owned(),
    };
    let pkcs8 = pem.contains("-----BEGIN PRIVATE KEY-----");
    let pkcs1 = pem.contains("-----BEGIN RSA PRIVATE KEY-----");
    if !pkcs8 && !pkcs1 {
        return Err(bad("no BEGIN PRIVATE KEY or BEGIN RSA PRIVATE KEY line"));
    }
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| bad("the key body is not base64"))?;
    let parsed = if pkcs8 {
        RsaKeyPair::from_pkcs8(&der)
    } else {
        RsaKeyPair::from_der(&der)
    };
    parsed.map_err(|e| bad(&e.to_string()))
}

fn basic_auth(user: &str, password: &str) -> String {
    let raw = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// `s` with every byte outside RFC 3986's unreserved set and `:` percent-encoded.
fn path_segment(s: &str) -> String {
    percent_encode(
        s,
        |b| b.is_ascii_alphanumeric() || b"-._~:".contains(&b),
        false,
    )
}

/// `application/x-www-form-urlencoded` of `pairs`.
pub fn form_encode(pairs: &[(&str, String)]) -> String {
    let enc = |s: &str| {
        percent_encode(
            s,
            |b| b.is_ascii_alphanumeric() || b"*-._".contains(&b),
            true,
        )
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn percent_encode(s: &str, keep: impl Fn(u8) -> bool, space_as_plus: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if keep(b) {
            out.push(b as char);
        } else if b == b' ' && space_as_plus {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn twilio_control() -> CallControl {
        CallControl::Twilio {
            api_base: "http://127.0.0.1:9/".into(),
            account_sid: "AC1".into(),
            auth_token: "tok".into(),
        }
    }

    #[test]
    fn targets_are_numbers_or_sip_uris() {
        assert_eq!(
            TransferTarget::parse("+15550199"),
            Ok(TransferTarget::Number("+15550199".into()))
        );
        assert_eq!(
            TransferTarget::parse("15550199"),
            Ok(TransferTarget::Number("+15550199".into()))
        );
        assert!(matches!(
            TransferTarget::parse("sip:desk@pbx.example"),
            Ok(TransferTarget::Sip(_))
        ));
        for bad in [
            "",
            "+1",
            "call me",
            "sip:",
            "sip:a b",
            "http://x",
            "+1555-0199",
        ] {
            assert!(TransferTarget::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn twilio_hang_up_is_a_form_post_with_basic_auth() {
        let r = twilio_control()
            .request("CA9", &CallAction::HangUp, 0, "")
            .unwrap();
        assert_eq!(r.method, HttpMethod::Post);
        assert_eq!(
            r.url,
            "http://127.0.0.1:9/2010-04-01/Accounts/AC1/Calls/CA9.json"
        );
        assert_eq!(r.body, b"Status=completed");
        assert!(
            r.headers
                .contains(&("Authorization".into(), "Basic QUMxOnRvaw==".into()))
        );
    }

    #[test]
    fn ids_cannot_escape_their_path_segment() {
        let r = twilio_control()
            .request("../x?y", &CallAction::HangUp, 0, "")
            .unwrap();
        assert!(r.url.ends_with("/Calls/..%2Fx%3Fy.json"), "{}", r.url);
        assert_eq!(
            twilio_control().request("", &CallAction::HangUp, 0, ""),
            Err(ControlError::NoCallId)
        );
    }

    #[test]
    fn form_encoding_follows_the_html_rules() {
        assert_eq!(
            form_encode(&[("Twiml", "<Dial>+1 2</Dial>".into())]),
            "Twiml=%3CDial%3E%2B1+2%3C%2FDial%3E"
        );
    }

    #[test]
    fn plivo_has_no_rest_transfer() {
        let c = CallControl::Plivo {
            api_base: "http://x".into(),
            auth_id: "MA1".into(),
            auth_token: "t".into(),
        };
        let t = CallAction::Transfer(TransferTarget::Number("+15550199".into()));
        assert!(matches!(
            c.request("u", &t, 0, ""),
            Err(ControlError::Unsupported { .. })
        ));
        let r = c.request("u-1", &CallAction::HangUp, 0, "").unwrap();
        assert_eq!(
            (r.method, r.url.as_str()),
            (HttpMethod::Delete, "http://x/v1/Account/MA1/Call/u-1/")
        );
    }

    #[test]
    fn plivo_transfers_to_an_xml_url() {
        let c = CallControl::Plivo {
            api_base: "http://x/".into(),
            auth_id: "MA1".into(),
            auth_token: "t".into(),
        };
        let r = c
            .plivo_transfer("u/1", "https://bot.example/plivo/transfer/abc")
            .unwrap();
        assert_eq!(
            (r.method, r.url.as_str()),
            (HttpMethod::Post, "http://x/v1/Account/MA1/Call/u%2F1/")
        );
        assert!(
            r.headers
                .contains(&("Authorization".into(), basic_auth("MA1", "t")))
        );
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            body,
            json!({"legs": "aleg", "aleg_url": "https://bot.example/plivo/transfer/abc", "aleg_method": "POST"})
        );
        assert_eq!(
            c.plivo_transfer("", "https://a/b"),
            Err(ControlError::NoCallId)
        );
        assert!(matches!(
            twilio_control().plivo_transfer("CA1", "https://a/b"),
            Err(ControlError::Unsupported { .. })
        ));
    }

    #[test]
    fn a_bad_vonage_key_is_refused() {
        assert!(matches!(
            CallControl::vonage("http://x", "app", "not a key"),
            Err(ControlError::BadKey { .. })
        ));
        let garbled = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(matches!(
            CallControl::vonage("http://x", "app", garbled),
            Err(ControlError::BadKey { .. })
        ));
    }
}
