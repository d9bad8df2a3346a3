//! `X-Twilio-Signature` against Twilio's published example values: auth token
//! `12345`, URL `https://mycompany.com/myapp.php?foo=1&bar=2` and the POST
//! parameters of a voice webhook, as in Twilio's security page and the test
//! vectors of its SDKs (twilio-python `tests/unit/test_request_validator.py`).

use brisvox_transport::twilio::signature::{compute_signature, validate};

const TOKEN: &str = "12345";
const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";

fn params() -> Vec<(String, String)> {
    [
        ("CallSid", "CA1234567890ABCDE"),
        ("Digits", "1234"),
        ("From", "+14158675309"),
        ("To", "+18005551212"),
        ("Caller", "+14158675309"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

#[test]
fn the_documented_signature() {
    assert_eq!(
        compute_signature(TOKEN, URL, &params()),
        "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    );
    assert!(validate(
        TOKEN,
        URL,
        &params(),
        "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    ));
}

#[test]
fn parameter_order_does_not_matter_but_every_parameter_does() {
    let mut reversed = params();
    reversed.reverse();
    assert!(validate(
        TOKEN,
        URL,
        &reversed,
        "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    ));
    let mut changed = params();
    changed[1].1 = "1235".into();
    assert!(!validate(
        TOKEN,
        URL,
        &changed,
        "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    ));
    assert!(!validate(
        TOKEN,
        URL,
        &params()[1..],
        "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    ));
}

#[test]
fn repeated_names_sort_by_value() {
    let p = [
        ("Sid", "CA123"),
        ("SidAccount", "AC123"),
        ("Digits", "5678"),
        ("Digits", "1234"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    assert_eq!(
        compute_signature(TOKEN, URL, &p),
        "IK+Dwps556ElfBT0I3Rgjkr1wJU="
    );
}

#[test]
fn the_default_port_may_be_added_or_dropped() {
    // Signed by Twilio with ":443" (the SDK's vector), validated without it.
    assert!(validate(
        TOKEN,
        URL,
        &params(),
        "kvajT1Ptam85bY51eRf/AJRuM3w="
    ));
    // Signed without a port, received with one.
    let with_port = URL.replace(".com", ".com:1234");
    assert!(validate(
        TOKEN,
        &with_port,
        &params(),
        "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    ));
    let http = URL.replace("https", "http");
    assert!(validate(
        TOKEN,
        &http,
        &params(),
        "0ZXoZLH/DfblKGATFgpif+LLRf4="
    ));
}

#[test]
fn a_stream_upgrade_signs_the_url_alone() {
    let url = "wss://bot.example.com/twilio";
    let sig = compute_signature(TOKEN, url, &[]);
    assert!(validate(TOKEN, url, &[], &sig));
    assert!(validate(
        TOKEN,
        "wss://bot.example.com:443/twilio",
        &[],
        &sig
    ));
    assert!(!validate(
        TOKEN,
        "wss://bot.example.com/twilio?x=1",
        &[],
        &sig
    ));
}
