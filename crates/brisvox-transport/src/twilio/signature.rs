//! `X-Twilio-Signature`: proof that a request came from Twilio.
//!
//! Twilio signs every webhook and every Media Streams websocket request with
//! the account's auth token: the header is the base64 of
//! HMAC-SHA1(auth token, the full URL Twilio requested (scheme, host, path and
//! query string) followed by each POST parameter's name and value, sorted by
//! name). A websocket upgrade is a GET, so its signature covers the URL alone.
//! Reference: <https://www.twilio.com/docs/usage/webhooks/webhooks-security>
//! and, for streams, <https://www.twilio.com/docs/global-infrastructure/firewall-configurations/media-streams-configuration>.
//!
//! Twilio's own validators try the URL both with and without the default
//! port (`:443` for https/wss, `:80` for http/ws), since a proxy may add or
//! drop it; [`validate`] does the same. The comparison is constant-time.

use base64::Engine as _;
use ring::hmac;

/// The header Twilio puts its signature in.
pub const SIGNATURE_HEADER: &str = "X-Twilio-Signature";

/// The signature Twilio computes for `url` and the POST `params` (name,
/// value pairs in any order; a name may repeat).
pub fn compute_signature(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let tag = hmac::sign(&key(auth_token), &signed_bytes(url, params));
    base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
}

/// True when `signature` (the header's value) is Twilio's signature of
/// `url` and `params` with `auth_token`, with or without the default port.
pub fn validate(auth_token: &str, url: &str, params: &[(String, String)], signature: &str) -> bool {
    let Ok(tag) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
        return false;
    };
    let key = key(auth_token);
    url_variants(url)
        .iter()
        .any(|u| hmac::verify(&key, &signed_bytes(u, params), &tag).is_ok())
}

fn key(auth_token: &str) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, auth_token.as_bytes())
}

fn signed_bytes(url: &str, params: &[(String, String)]) -> Vec<u8> {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut data = url.to_owned();
    for (name, value) in sorted {
        data.push_str(name);
        data.push_str(value);
    }
    data.into_bytes()
}

/// `url` as given, and with its default port added or removed.
fn url_variants(url: &str) -> Vec<String> {
    let mut out = vec![url.to_owned()];
    let Some((scheme, rest)) = url.split_once("://") else {
        return out;
    };
    let default_port = match scheme {
        "https" | "wss" => "443",
        "http" | "ws" => "80",
        _ => return out,
    };
    let (authority, tail) = rest
        .find(['/', '?'])
        .map_or((rest, ""), |i| rest.split_at(i));
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (authority, None),
    };
    match port {
        // With a port: also try without it (Twilio's SDKs strip any port).
        Some(_) => out.push(format!("{scheme}://{host}{tail}")),
        None => out.push(format!("{scheme}://{host}:{default_port}{tail}")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_variants_add_or_drop_the_port() {
        assert_eq!(
            url_variants("https://a.com/x?y=1"),
            ["https://a.com/x?y=1", "https://a.com:443/x?y=1"]
        );
        assert_eq!(
            url_variants("wss://a.com:8443/twilio"),
            ["wss://a.com:8443/twilio", "wss://a.com/twilio"]
        );
        assert_eq!(url_variants("not a url"), ["not a url"]);
    }

    #[test]
    fn a_wrong_or_garbled_signature_is_refused() {
        let sig = compute_signature("tok", "wss://a.com/twilio", &[]);
        assert!(validate("tok", "wss://a.com/twilio", &[], &sig));
        assert!(!validate("other", "wss://a.com/twilio", &[], &sig));
        assert!(!validate("tok", "wss://a.com/twilio2", &[], &sig));
        assert!(!validate("tok", "wss://a.com/twilio", &[], "not base64!"));
        assert!(!validate("tok", "wss://a.com/twilio", &[], ""));
    }
}
