//! TwiML the server answers with: `<Connect><Stream>` for an incoming call,
//! `<Dial>` for a transfer.
//!
//! A `<Stream>` URL takes no query string (Twilio drops it); values for the
//! stream go in `<Parameter name value>` children and arrive in the `start`
//! message's `customParameters`. Twilio limits each parameter's name and value
//! together to 500 characters.
//! Reference: <https://www.twilio.com/docs/voice/twiml/stream> and
//! <https://www.twilio.com/docs/voice/twiml/dial>.

use crate::carrier::control::TransferTarget;

/// Longest `<Parameter>` name and value together, in characters.
pub const MAX_PARAMETER_CHARS: usize = 500;

/// Why TwiML could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TwimlError {
    /// A parameter longer than Twilio takes.
    #[error("parameter {name:?}: name and value are {chars} characters, Twilio takes at most 500")]
    ParameterTooLong {
        /// The parameter's name (at most 64 characters).
        name: String,
        /// Its name and value length, in characters.
        chars: usize,
    },
    /// A stream URL that is not `wss://` (Twilio only connects to wss) or
    /// that carries a query string.
    #[error("stream url {url:?} must be wss:// without a query string")]
    BadStreamUrl {
        /// The URL given.
        url: String,
    },
}

/// `<Response><Connect><Stream url>` with one `<Parameter>` per pair, in order.
pub fn connect_stream(url: &str, parameters: &[(String, String)]) -> Result<String, TwimlError> {
    if !url.starts_with("wss://") || url.contains('?') {
        return Err(TwimlError::BadStreamUrl {
            url: url.chars().take(200).collect(),
        });
    }
    let mut xml = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><Response><Connect>"#);
    xml.push_str(&format!(r#"<Stream url="{}">"#, escape(url)));
    for (name, value) in parameters {
        let chars = name.chars().count() + value.chars().count();
        if chars > MAX_PARAMETER_CHARS {
            return Err(TwimlError::ParameterTooLong {
                name: name.chars().take(64).collect(),
                chars,
            });
        }
        xml.push_str(&format!(
            r#"<Parameter name="{}" value="{}"/>"#,
            escape(name),
            escape(value)
        ));
    }
    xml.push_str("</Stream></Connect></Response>");
    Ok(xml)
}

/// `<Response><Dial>` to a number or a SIP URI: what a call is updated with
/// to transfer it.
pub fn dial(target: &TransferTarget) -> String {
    let inner = match target {
        TransferTarget::Number(n) => escape(n),
        TransferTarget::Sip(uri) => format!("<Sip>{}</Sip>", escape(uri)),
    };
    format!(r#"<?xml version="1.0" encoding="UTF-8"?><Response><Dial>{inner}</Dial></Response>"#)
}

/// `s` with the five XML special characters escaped (attribute-safe).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_twiml_carries_escaped_parameters() {
        let xml = connect_stream(
            "wss://bot.example/twilio",
            &[
                ("caller".into(), "+15550100".into()),
                ("note".into(), r#"a "b" & <c>"#.into()),
            ],
        )
        .unwrap();
        assert_eq!(
            xml,
            concat!(
                r#"<?xml version="1.0" encoding="UTF-8"?><Response><Connect>"#,
                r#"<Stream url="wss://bot.example/twilio">"#,
                r#"<Parameter name="caller" value="+15550100"/>"#,
                r#"<Parameter name="note" value="a &quot;b&quot; &amp; &lt;c&gt;"/>"#,
                "</Stream></Connect></Response>"
            )
        );
    }

    #[test]
    fn query_strings_and_long_parameters_are_refused() {
        assert!(matches!(
            connect_stream("wss://bot.example/twilio?token=x", &[]),
            Err(TwimlError::BadStreamUrl { .. })
        ));
        assert!(matches!(
            connect_stream("https://bot.example/twilio", &[]),
            Err(TwimlError::BadStreamUrl { .. })
        ));
        let long = ("k".to_owned(), "v".repeat(500));
        assert!(matches!(
            connect_stream("wss://b/t", &[long]),
            Err(TwimlError::ParameterTooLong { chars: 501, .. })
        ));
    }

    #[test]
    fn dial_to_a_number_or_sip() {
        assert!(
            dial(&TransferTarget::Number("+15550199".into()))
                .ends_with("<Response><Dial>+15550199</Dial></Response>")
        );
        assert!(
            dial(&TransferTarget::Sip("sip:desk@pbx.example".into()))
                .ends_with("<Dial><Sip>sip:desk@pbx.example</Sip></Dial></Response>")
        );
    }
}
