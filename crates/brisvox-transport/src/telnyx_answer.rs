//! Telnyx's TeXML answer webhook: the `telnyx-signature-ed25519` check and
//! the `<Connect><Stream>` TeXML that sends the call's audio to this server.
//!
//! **Signature.** Telnyx signs its webhooks with the account's Ed25519 key:
//! `telnyx-signature-ed25519` is the base64 signature of
//! `<telnyx-timestamp>|<raw body>`, verified with the account's public key
//! (Mission Control, "Public Key", base64 of the 32 key bytes). A timestamp
//! more than [`MAX_SKEW_S`] away from now is refused (a replay).
//! Reference: <https://developers.telnyx.com/docs/development/sdk/python/webhooks>
//! (the SDKs verify `{timestamp}|{payload}` with the account's public key).
//!
//! **TeXML.** `<Response><Connect><Stream url bidirectionalMode="rtp"
//! bidirectionalCodec=…>` with one `<Parameter name value>` per stream
//! parameter (they arrive in the `start` message's `custom_parameters`): a
//! bidirectional RTP stream in PCMU or PCMA that holds the call while it
//! lasts, as Pipecat's Telnyx setup uses. Reference:
//! <https://developers.telnyx.com/docs/voice/programmable-voice/texml-verbs/stream>.

use base64::Engine as _;
use ring::signature::{ED25519, UnparsedPublicKey};

use crate::twilio::twiml::escape;

/// The header holding Telnyx's signature.
pub const SIGNATURE_HEADER: &str = "telnyx-signature-ed25519";
/// The header holding the signed timestamp (Unix seconds).
pub const TIMESTAMP_HEADER: &str = "telnyx-timestamp";
/// Largest distance between the signed timestamp and now, in seconds.
pub const MAX_SKEW_S: u64 = 300;
/// The codecs a bidirectional RTP stream takes here.
pub const CODECS: [&str; 2] = ["PCMU", "PCMA"];

/// Why a public key is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the Telnyx public key must be the base64 of 32 bytes")]
pub struct BadPublicKey;

/// The account's public key from its base64 text.
pub fn public_key(base64_text: &str) -> Result<Vec<u8>, BadPublicKey> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64_text.trim())
        .map_err(|_| BadPublicKey)?;
    if bytes.len() == 32 {
        Ok(bytes)
    } else {
        Err(BadPublicKey)
    }
}

/// True when `signature` (base64) signs `timestamp|body` with `key` and
/// `timestamp` is within [`MAX_SKEW_S`] of `now_unix_s`.
pub fn validate(
    key: &[u8],
    signature: &str,
    timestamp: &str,
    body: &[u8],
    now_unix_s: u64,
) -> bool {
    let Ok(ts) = timestamp.trim().parse::<u64>() else {
        return false;
    };
    if ts.abs_diff(now_unix_s) > MAX_SKEW_S {
        return false;
    }
    let Ok(sig) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
        return false;
    };
    let mut signed = Vec::with_capacity(timestamp.len() + 1 + body.len());
    signed.extend_from_slice(timestamp.trim().as_bytes());
    signed.push(b'|');
    signed.extend_from_slice(body);
    UnparsedPublicKey::new(&ED25519, key)
        .verify(&signed, &sig)
        .is_ok()
}

/// Why the TeXML could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TexmlError {
    /// Not a `wss://` URL, or a codec not in [`CODECS`].
    #[error("{what} {value:?} is not one Telnyx streams to")]
    Bad {
        /// `url` or `codec`.
        what: &'static str,
        /// The value (at most 200 characters).
        value: String,
    },
}

/// The TeXML streaming the call to `url` in `codec`, with `parameters`.
pub fn connect_stream(
    url: &str,
    codec: &str,
    parameters: &[(String, String)],
) -> Result<String, TexmlError> {
    let bad = |what, value: &str| TexmlError::Bad {
        what,
        value: value.chars().take(200).collect(),
    };
    if !url.starts_with("wss://") {
        return Err(bad("url", url));
    }
    if !CODECS.contains(&codec) {
        return Err(bad("codec", codec));
    }
    let mut xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="{}" bidirectionalMode="rtp" bidirectionalCodec="{codec}">"#,
        escape(url)
    );
    for (name, value) in parameters {
        xml.push_str(&format!(
            r#"<Parameter name="{}" value="{}"/>"#,
            escape(name),
            escape(value)
        ));
    }
    xml.push_str("</Stream></Connect></Response>");
    Ok(xml)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{Ed25519KeyPair, KeyPair};

    #[test]
    fn a_signed_body_validates_within_the_skew() {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let key = public_key(&b64.encode(pair.public_key().as_ref())).unwrap();
        let body = b"CallSid=v3%3Aabc&From=%2B15550100";
        let sig = b64.encode(
            pair.sign(b"1700000000|CallSid=v3%3Aabc&From=%2B15550100")
                .as_ref(),
        );
        assert!(validate(&key, &sig, "1700000000", body, 1_700_000_100));
        assert!(
            !validate(&key, &sig, "1700000000", body, 1_700_000_400),
            "too old"
        );
        assert!(
            !validate(&key, &sig, "1700000001", body, 1_700_000_100),
            "another timestamp"
        );
        assert!(!validate(
            &key,
            &sig,
            "1700000000",
            b"From=%2B1",
            1_700_000_100
        ));
        assert_eq!(public_key("AAAA"), Err(BadPublicKey));
    }

    #[test]
    fn the_texml_connects_a_bidirectional_stream_with_parameters() {
        let xml = connect_stream(
            "wss://a.example/telnyx",
            "PCMA",
            &[("from".into(), "+15550100".into())],
        )
        .unwrap();
        assert_eq!(
            xml,
            r#"<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://a.example/telnyx" bidirectionalMode="rtp" bidirectionalCodec="PCMA"><Parameter name="from" value="+15550100"/></Stream></Connect></Response>"#
        );
        assert!(connect_stream("wss://a/t", "OPUS", &[]).is_err());
    }
}
