//! Plivo's answer webhook: the `X-Plivo-Signature-V3` check and the
//! `<Stream>` XML that sends the call's audio to this server.
//!
//! **Signature (V3).** Plivo signs each request to an answer URL with the
//! account's (or subaccount's) auth token: `X-Plivo-Signature-V3` is the
//! base64 of HMAC-SHA256(auth token, `<signed URL>.<nonce>`), the nonce in
//! `X-Plivo-Signature-V3-Nonce`. The signed URL is the request's
//! `scheme://host/path`, then for a GET its query parameters sorted by name
//! (`?a=1&b=2`); for a POST with parameters, `?` and the sorted query (with
//! a `.` after it when there is one), then each POST parameter's name and
//! value, sorted by name, with no separators. The header may hold several
//! signatures separated by commas (a rotated token): one match is enough.
//! References: <https://www.plivo.com/docs/voice/concepts/signature-validation>
//! and Plivo's server SDKs (`validate_v3_signature`), whose construction this
//! follows.
//!
//! **XML.** `<Response><Stream bidirectional="true" keepCallAlive="true"
//! contentType=…  extraHeaders=…>wss://…</Stream></Response>`: a
//! bidirectional stream (`audioTrack` inbound, the default, as Plivo requires
//! for bidirectional streams) that holds the call while it lasts. Plivo
//! allows only `[A-Za-z0-9]` in `extraHeaders` keys and values, at most 512
//! bytes. Reference: <https://docs.plivo.com/docs/voice/xml/audiostream>.
//!
//! **Transfer XML.** Plivo transfers a live call by making it fetch new XML
//! from a URL (the Transfer Call API's `aleg_url`,
//! <https://www.plivo.com/docs/voice/api/call/transfer-a-call>); what the
//! server answers there is [`dial_xml`]: `<Response><Dial><Number>` for a
//! number, `<User>` for a SIP URI
//! (<https://www.plivo.com/docs/voice/xml/dial/>,
//! <https://www.plivo.com/docs/voice/xml/dial/user/>). Plivo signs that
//! fetch like any request to the server's URLs
//! (<https://docs.plivo.com/docs/voice/xml/request/validation>).

use base64::Engine as _;
use ring::hmac;

use crate::carrier::control::TransferTarget;
use crate::twilio::twiml::escape;

/// The header Plivo puts its V3 signature(s) in.
pub const SIGNATURE_V3_HEADER: &str = "X-Plivo-Signature-V3";
/// The header holding the nonce the V3 signature covers.
pub const SIGNATURE_V3_NONCE_HEADER: &str = "X-Plivo-Signature-V3-Nonce";
/// Longest `extraHeaders` value Plivo takes, in bytes.
pub const MAX_EXTRA_HEADERS_BYTES: usize = 512;

/// The `contentType`s a bidirectional Plivo stream takes.
pub const CONTENT_TYPES: [&str; 3] = [
    "audio/x-mulaw;rate=8000",
    "audio/x-l16;rate=8000",
    "audio/x-l16;rate=16000",
];

/// Why the `<Stream>` XML could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlivoXmlError {
    /// An `extraHeaders` key or value with a character Plivo refuses.
    #[error("extraHeaders {key:?}: Plivo allows only A-Z, a-z and 0-9")]
    BadHeader {
        /// The key (at most 64 characters).
        key: String,
    },
    /// More than Plivo takes.
    #[error("extraHeaders is {bytes} bytes, Plivo takes at most 512")]
    HeadersTooLong {
        /// Its length.
        bytes: usize,
    },
    /// Not a `wss://` URL, or a `contentType` Plivo does not stream in.
    #[error("{what} {value:?} is not one Plivo streams to")]
    Bad {
        /// `url` or `contentType`.
        what: &'static str,
        /// The value given (at most 200 characters).
        value: String,
    },
}

/// The answer XML streaming the call to `url` in `content_type`, with
/// `extra_headers` (each key and value `[A-Za-z0-9]` only).
pub fn stream_xml(
    url: &str,
    content_type: &str,
    extra_headers: &[(String, String)],
) -> Result<String, PlivoXmlError> {
    let bad = |what, value: &str| PlivoXmlError::Bad {
        what,
        value: value.chars().take(200).collect(),
    };
    if !url.starts_with("wss://") {
        return Err(bad("url", url));
    }
    if !CONTENT_TYPES.contains(&content_type) {
        return Err(bad("contentType", content_type));
    }
    let alnum = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
    let mut headers = Vec::with_capacity(extra_headers.len());
    for (key, value) in extra_headers {
        if !alnum(key) || !(value.is_empty() || alnum(value)) {
            return Err(PlivoXmlError::BadHeader {
                key: key.chars().take(64).collect(),
            });
        }
        headers.push(format!("{key}={value}"));
    }
    let headers = headers.join(",");
    if headers.len() > MAX_EXTRA_HEADERS_BYTES {
        return Err(PlivoXmlError::HeadersTooLong {
            bytes: headers.len(),
        });
    }
    let extra = if headers.is_empty() {
        String::new()
    } else {
        format!(r#" extraHeaders="{headers}""#)
    };
    Ok(format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Stream bidirectional="true" keepCallAlive="true" contentType="{}"{extra}>{}</Stream></Response>"#,
        escape(content_type),
        escape(url),
    ))
}

/// The XML that connects the call to `target`: `<Dial><Number>` for a
/// number, `<Dial><User>` for a SIP URI.
pub fn dial_xml(target: &TransferTarget) -> String {
    let inner = match target {
        TransferTarget::Number(n) => format!("<Number>{}</Number>", escape(n)),
        TransferTarget::Sip(uri) => format!("<User>{}</User>", escape(uri)),
    };
    format!(r#"<?xml version="1.0" encoding="UTF-8"?><Response><Dial>{inner}</Dial></Response>"#)
}

/// The V3 signature Plivo computes for a request: `method` (`GET` or
/// `POST`), the full `url` it requested (query included), the POST
/// parameters (decoded; empty for a GET) and the nonce.
pub fn signature_v3(
    auth_token: &str,
    method: &str,
    url: &str,
    post_params: &[(String, String)],
    nonce: &str,
) -> String {
    let data = format!("{}.{nonce}", signed_url(method, url, post_params));
    let key = hmac::Key::new(hmac::HMAC_SHA256, auth_token.as_bytes());
    let tag = hmac::sign(&key, data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
}

/// True when `header` (the `X-Plivo-Signature-V3` value, maybe several
/// signatures separated by commas) holds Plivo's signature of the request.
pub fn validate_v3(
    auth_token: &str,
    method: &str,
    url: &str,
    post_params: &[(String, String)],
    nonce: &str,
    header: &str,
) -> bool {
    let data = format!("{}.{nonce}", signed_url(method, url, post_params));
    let key = hmac::Key::new(hmac::HMAC_SHA256, auth_token.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD;
    header
        .split(',')
        .filter_map(|s| b64.decode(s.trim()).ok())
        .any(|tag| hmac::verify(&key, data.as_bytes(), &tag).is_ok())
}

/// The URL part of the signed data (see the module docs).
fn signed_url(method: &str, url: &str, post_params: &[(String, String)]) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let base = base.split('#').next().unwrap_or(base);
    let mut pairs = crate::form::parse(query);
    pairs.sort();
    let query: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let query = query.join("&");
    let post = !method.eq_ignore_ascii_case("GET") && !post_params.is_empty();
    if !post {
        return if query.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{query}")
        };
    }
    let mut params = post_params.to_vec();
    params.sort();
    let params: String = params.iter().map(|(k, v)| format!("{k}{v}")).collect();
    let dot = if query.is_empty() { "" } else { "." };
    format!("{base}?{query}{dot}{params}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_signed_url_follows_plivos_construction() {
        let post = p(&[
            ("To", "15550199"),
            ("From", "15550100"),
            ("CallUUID", "c-1"),
        ]);
        assert_eq!(
            signed_url("POST", "https://a.example/plivo/answer", &post),
            "https://a.example/plivo/answer?CallUUIDc-1From15550100To15550199"
        );
        assert_eq!(
            signed_url("POST", "https://a.example/x?b=2&a=1", &post),
            "https://a.example/x?a=1&b=2.CallUUIDc-1From15550100To15550199"
        );
        assert_eq!(
            signed_url("GET", "https://a.example/x?b=2&a=%2B1", &[]),
            "https://a.example/x?a=+1&b=2"
        );
        assert_eq!(
            signed_url("POST", "https://a.example/x", &[]),
            "https://a.example/x"
        );
    }

    #[test]
    fn the_signature_is_the_hmac_sha256_of_url_and_nonce() {
        // Computed apart from this code: base64(HMAC-SHA256(token, signed URL + "." + nonce)).
        let post = p(&[
            ("To", "15550199"),
            ("From", "15550100"),
            ("CallUUID", "abc-1"),
        ]);
        let url = "https://bot.example.com/plivo/answer";
        assert_eq!(
            signature_v3("MAtok", "POST", url, &post, "12345"),
            "W2IlZLq8ZtwXB5MCafxQXiugJdS6cHQ3KjaFDSRqv3Y="
        );
    }

    #[test]
    fn a_signature_validates_and_a_forged_one_does_not() {
        let post = p(&[("From", "15550100")]);
        let url = "https://a.example/plivo/answer";
        let sig = signature_v3("tok", "POST", url, &post, "n1");
        assert!(validate_v3("tok", "POST", url, &post, "n1", &sig));
        assert!(validate_v3(
            "tok",
            "POST",
            url,
            &post,
            "n1",
            &format!("x,{sig}")
        ));
        assert!(!validate_v3("tok", "POST", url, &post, "n2", &sig));
        assert!(!validate_v3("other", "POST", url, &post, "n1", &sig));
        assert!(!validate_v3(
            "tok",
            "POST",
            url,
            &p(&[("From", "1")]),
            "n1",
            &sig
        ));
    }

    #[test]
    fn the_stream_xml_is_bidirectional_and_headers_are_checked() {
        let xml = stream_xml(
            "wss://a.example/plivo",
            "audio/x-mulaw;rate=8000",
            &p(&[("from", "15550100"), ("token", "abc123")]),
        )
        .unwrap();
        assert_eq!(
            xml,
            r#"<?xml version="1.0" encoding="UTF-8"?><Response><Stream bidirectional="true" keepCallAlive="true" contentType="audio/x-mulaw;rate=8000" extraHeaders="from=15550100,token=abc123">wss://a.example/plivo</Stream></Response>"#
        );
        let bad = stream_xml(
            "wss://a/p",
            "audio/x-mulaw;rate=8000",
            &p(&[("from", "+1555")]),
        );
        assert!(matches!(bad, Err(PlivoXmlError::BadHeader { .. })));
        assert!(stream_xml("https://a/p", "audio/x-mulaw;rate=8000", &[]).is_err());
        assert!(stream_xml("wss://a/p", "audio/x-alaw;rate=8000", &[]).is_err());
    }

    #[test]
    fn the_transfer_xml_dials_a_number_or_a_sip_user() {
        let number = dial_xml(&TransferTarget::Number("+15550199".into()));
        assert_eq!(
            number,
            r#"<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Number>+15550199</Number></Dial></Response>"#
        );
        let sip = dial_xml(&TransferTarget::Sip("sip:desk@pbx.example?a=1&b=2".into()));
        assert!(
            sip.ends_with("<Dial><User>sip:desk@pbx.example?a=1&amp;b=2</User></Dial></Response>"),
            "{sip}"
        );
    }
}
