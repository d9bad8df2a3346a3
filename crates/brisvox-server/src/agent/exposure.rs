//! Safe by default: a server that would spend the operator's money for anyone
//! who finds its port does not start.
//!
//! The rule ([`check_exposure`], run by `brisvox serve` before anything else):
//!
//! 1. A provider is **paid** when it is selected and reaches a vendor over the
//!    network: Deepgram, Cartesia, ElevenLabs, Deepgram Aura, and the
//!    OpenAI-compatible LLM and transcription endpoints, unless the endpoint's
//!    host is a loopback address (a local server costs nothing). Mock and local
//!    providers are never paid.
//! 2. A call route (`/call`, `/twilio`) is **open** when `[server.auth]` gives
//!    it no token.
//! 3. The server is **exposed** when it listens on an address that is not a
//!    loopback address (`0.0.0.0`, a public or private interface).
//! 4. Exposed, with a paid provider and an open call route: refused, naming the
//!    routes, the providers and the two ways to allow it, unless the operator
//!    allowed it explicitly (`[server] allow_unauthenticated_calls = true` or
//!    `brisvox serve --allow-unauthenticated-calls`); then the check returns the
//!    [`OpenExposure`] for the caller to log loudly at startup.

use std::net::{IpAddr, SocketAddr};

use super::{AgentSettings, LlmProvider, SttProvider, TtsProvider};

/// The agent-file key that allows open call routes with paid providers on a
/// non-loopback address.
pub const ALLOW_UNAUTHENTICATED_CALLS_KEY: &str = "server.allow_unauthenticated_calls";

/// The command-line flag that does the same.
pub const ALLOW_UNAUTHENTICATED_CALLS_FLAG: &str = "--allow-unauthenticated-calls";

/// A server that lets anyone reach paid providers, as the operator allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenExposure {
    /// The address it listens on.
    pub bind: SocketAddr,
    /// The paid providers (`stt deepgram`, `llm openai_compatible`).
    pub paid: Vec<String>,
    /// The call routes without a token (`/call`, `/twilio`).
    pub open_routes: Vec<&'static str>,
}

/// Why `brisvox serve` refused to start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExposureError {
    /// Paid providers behind open call routes on a non-loopback address.
    #[error(
        "refusing to serve on {bind}: the call routes {routes} accept calls without a token, and the agent uses \
         paid providers ({paid}), so anyone who finds the port can run up the providers' bill. \
         Give each call route a token ([server.auth.call] and [server.auth.twilio], \
         docs/AGENT_FILE.md), listen on a loopback address (--bind 127.0.0.1:8080), or, when \
         something in front of brisvox already authenticates callers, allow it explicitly with \
         `{ALLOW_UNAUTHENTICATED_CALLS_KEY} = true` in the agent file or \
         {ALLOW_UNAUTHENTICATED_CALLS_FLAG}"
    )]
    UnauthenticatedPaidCalls {
        /// The address.
        bind: SocketAddr,
        /// The open routes, comma separated.
        routes: String,
        /// The paid providers, comma separated.
        paid: String,
    },
}

/// Applies the rule of the module doc. `Ok(None)`: nothing to say; `Ok(Some)`:
/// allowed explicitly, to be logged loudly; `Err`: refuse to start.
/// `allow_flag` is the command-line flag; the agent-file key is read from
/// `settings`.
pub fn check_exposure(
    settings: &AgentSettings,
    bind: SocketAddr,
    allow_flag: bool,
) -> Result<Option<OpenExposure>, ExposureError> {
    let paid = settings.paid_providers();
    let open_routes = settings.open_call_routes();
    if is_loopback(bind.ip()) || paid.is_empty() || open_routes.is_empty() {
        return Ok(None);
    }
    if allow_flag || settings.server.allow_unauthenticated_calls {
        return Ok(Some(OpenExposure {
            bind,
            paid,
            open_routes,
        }));
    }
    Err(ExposureError::UnauthenticatedPaidCalls {
        bind,
        routes: open_routes.join(", "),
        paid: paid.join(", "),
    })
}

impl AgentSettings {
    /// The selected providers that bill per use (rule 1 of [`check_exposure`]),
    /// as `"<section> <provider>"`.
    pub fn paid_providers(&self) -> Vec<String> {
        let stt = match self.stt.provider {
            SttProvider::Deepgram => true,
            SttProvider::OpenaiTranscribe => self
                .stt
                .openai_transcribe
                .as_ref()
                .is_none_or(|t| !url_is_loopback(&t.base_url)),
            SttProvider::Mock | SttProvider::Local => false,
        };
        let llm = match self.llm.provider {
            LlmProvider::OpenaiCompatible => self
                .llm
                .openai_compatible
                .as_ref()
                .is_none_or(|o| !url_is_loopback(&o.base_url)),
            LlmProvider::Mock | LlmProvider::Local => false,
        };
        let tts = match self.tts.provider {
            TtsProvider::Cartesia | TtsProvider::Elevenlabs | TtsProvider::DeepgramAura => true,
            TtsProvider::Mock | TtsProvider::Local => false,
        };
        [
            (stt, "stt", self.stt.provider.as_str()),
            (llm, "llm", self.llm.provider.as_str()),
            (tts, "tts", self.tts.provider.as_str()),
        ]
        .into_iter()
        .filter(|(paid, _, _)| *paid)
        .map(|(_, section, provider)| format!("{section} {provider}"))
        .collect()
    }

    /// The call routes served without a token (rule 2 of [`check_exposure`]):
    /// `/twilio` counts as guarded when Twilio's signature is checked; the
    /// other carriers' routes count only when their `[telephony.*]` table
    /// serves them.
    pub fn open_call_routes(&self) -> Vec<&'static str> {
        use brisvox_transport::Carrier;
        let auth = &self.server.auth;
        let tel = &self.telephony;
        let carrier =
            |c: Carrier, token: &Option<super::RouteAuth>| tel.route_enabled(c) && token.is_none();
        [
            (auth.call.is_none(), "/call"),
            (
                auth.twilio.is_none() && tel.twilio_signature_token().is_none(),
                "/twilio",
            ),
            (carrier(Carrier::Telnyx, &auth.telnyx), "/telnyx"),
            (carrier(Carrier::Plivo, &auth.plivo), "/plivo"),
            (carrier(Carrier::Vonage, &auth.vonage), "/vonage"),
            (carrier(Carrier::Exotel, &auth.exotel), "/exotel"),
        ]
        .into_iter()
        .filter(|(open, _)| *open)
        .map(|(_, route)| route)
        .collect()
    }
}

/// True for 127.0.0.0/8, `::1` and an IPv4-mapped loopback address.
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// True when the URL's host is `localhost` or a loopback address. Anything it
/// cannot read counts as remote (paid).
fn url_is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(h, _)| h),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(is_loopback)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(toml: &str) -> AgentSettings {
        AgentSettings::from_toml_str(toml, &|n| Some(format!("value-of-{n}"))).unwrap()
    }

    const PAID: &str = r#"
        [stt]
        provider = "deepgram"
        [stt.deepgram]
        api_key = "${DG}"
    "#;

    fn public() -> SocketAddr {
        "0.0.0.0:8080".parse().unwrap()
    }

    #[test]
    fn loopback_urls_are_recognised() {
        for url in [
            "http://localhost:8000/v1",
            "http://127.0.0.1/v1",
            "http://127.3.2.1:9/",
            "http://[::1]:8000/v1",
            "http://user:pw@LOCALHOST:1",
        ] {
            assert!(url_is_loopback(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://10.0.0.5:8000/v1",
            "http://localhost.example.com/",
            "http://127.0.0.1.nip.io/",
            "",
            "::::",
        ] {
            assert!(!url_is_loopback(url), "{url}");
        }
    }

    #[test]
    fn paid_providers_are_the_remote_vendors() {
        assert!(settings("").paid_providers().is_empty());
        assert_eq!(settings(PAID).paid_providers(), ["stt deepgram"]);
        let local_llm = r#"
            [llm]
            provider = "openai_compatible"
            [llm.openai_compatible]
            model = "m"
            api_key = "${K}"
            base_url = "http://127.0.0.1:8000/v1"
        "#;
        assert!(settings(local_llm).paid_providers().is_empty());
        let remote = local_llm.replace("http://127.0.0.1:8000/v1", "https://openrouter.ai/api/v1");
        assert_eq!(
            settings(&remote).paid_providers(),
            ["llm openai_compatible"]
        );
    }

    #[test]
    fn paid_and_open_on_a_public_address_is_refused() {
        let err = check_exposure(&settings(PAID), public(), false).unwrap_err();
        let text = err.to_string();
        for needle in [
            "0.0.0.0:8080",
            "/call, /twilio",
            "stt deepgram",
            ALLOW_UNAUTHENTICATED_CALLS_KEY,
            ALLOW_UNAUTHENTICATED_CALLS_FLAG,
        ] {
            assert!(text.contains(needle), "{needle} missing from: {text}");
        }
    }

    #[test]
    fn loopback_mock_or_tokens_need_no_permission() {
        let loopback = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(check_exposure(&settings(PAID), loopback, false), Ok(None));
        let v6 = "[::1]:8080".parse().unwrap();
        assert_eq!(check_exposure(&settings(PAID), v6, false), Ok(None));
        assert_eq!(check_exposure(&settings(""), public(), false), Ok(None));
        let tokens = format!(
            "{PAID}\n[server.auth.call]\ntoken = \"${{T}}\"\n[server.auth.twilio]\ntoken = \"${{T}}\"\n"
        );
        assert_eq!(
            check_exposure(&settings(&tokens), public(), false),
            Ok(None)
        );
    }

    #[test]
    fn one_open_route_is_enough_to_refuse() {
        let call_only = format!("{PAID}\n[server.auth.call]\ntoken = \"${{T}}\"\n");
        let err = check_exposure(&settings(&call_only), public(), false).unwrap_err();
        assert!(err.to_string().contains("/twilio accept"), "{err}");
    }

    #[test]
    fn the_flag_or_the_key_allows_it_and_says_what_is_open() {
        let allowed = check_exposure(&settings(PAID), public(), true).unwrap();
        let want = OpenExposure {
            bind: public(),
            paid: vec!["stt deepgram".to_owned()],
            open_routes: vec!["/call", "/twilio"],
        };
        assert_eq!(allowed, Some(want.clone()));
        let key = format!("{PAID}\n[server]\nallow_unauthenticated_calls = true\n");
        assert_eq!(
            check_exposure(&settings(&key), public(), false),
            Ok(Some(want))
        );
    }
}
