//! `[telephony]`: the phone carriers' routes, the webhooks that answer their
//! calls, and their REST access (hang-up when the server ends a call).
//!
//! `/twilio` is always served; the other carriers' routes (`/telnyx`,
//! `/plivo`, `/vonage`, `/exotel`) only when their table is present (an empty
//! table is enough), so that a server never opens a route nobody configured.
//! A carrier's REST access is configured when all of its credentials are
//! given; some but not all is an error naming the missing key.

use std::collections::BTreeMap;

use brisvox_transport::carrier::control::{
    PLIVO_API_BASE, TELNYX_API_BASE, TWILIO_API_BASE, VONAGE_API_BASE, parse_rsa_pem,
};
use brisvox_transport::{Carrier, plivo_answer, telnyx_answer};
use serde::{Deserialize, Serialize};

use super::AgentError;
use super::providers::EnvLookup;
use super::transfer::TransferSettings;
use crate::secret::SecretSetting;

/// `[telephony]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelephonySettings {
    /// The server's public base URL as the carriers reach it
    /// (`https://bot.example.com`): the stream URLs the answer webhooks hand
    /// out and the URL Twilio's signatures cover. Unset: taken from each
    /// request's `Host` and `X-Forwarded-Proto` (https when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// Parameters every stream set up by an answer webhook carries (Twilio
    /// `<Parameter>`s, Vonage endpoint headers); they become the call's metadata.
    pub parameters: BTreeMap<String, String>,
    /// When the server ends a call (the agent hung up, the idle guard, the
    /// call's length limit, a drain), hang the phone call up through the
    /// carrier's REST API too, where its access is configured.
    pub hang_up_on_end: bool,
    /// `[telephony.twilio]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub twilio: Option<TwilioSettings>,
    /// `[telephony.telnyx]`: serves `/telnyx`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telnyx: Option<TelnyxSettings>,
    /// `[telephony.plivo]`: serves `/plivo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plivo: Option<PlivoSettings>,
    /// `[telephony.vonage]`: serves `/vonage` and `/vonage/answer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vonage: Option<VonageSettings>,
    /// `[telephony.exotel]`: serves `/exotel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exotel: Option<ExotelSettings>,
    /// `[telephony.transfer]`: offers the model the built-in `transfer_call`
    /// tool on phone calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer: Option<TransferSettings>,
}

impl Default for TelephonySettings {
    fn default() -> Self {
        Self {
            public_url: None,
            parameters: BTreeMap::new(),
            hang_up_on_end: true,
            twilio: None,
            telnyx: None,
            plivo: None,
            vonage: None,
            exotel: None,
            transfer: None,
        }
    }
}

/// `[telephony.twilio]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TwilioSettings {
    /// The account SID (`AC…`), for the REST API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_sid: Option<String>,
    /// The account's auth token, `"${TWILIO_AUTH_TOKEN}"`: checks
    /// `X-Twilio-Signature` on `/twilio` and `/twilio/voice`, and signs REST calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<SecretSetting>,
    /// Refuse requests without a valid `X-Twilio-Signature` (needs `auth_token`).
    pub validate_signature: bool,
    /// The REST API's base URL.
    pub api_base: String,
}

impl Default for TwilioSettings {
    fn default() -> Self {
        Self {
            account_sid: None,
            auth_token: None,
            validate_signature: true,
            api_base: TWILIO_API_BASE.to_owned(),
        }
    }
}

/// `[telephony.telnyx]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelnyxSettings {
    /// The API key (v2), `"${TELNYX_API_KEY}"`, for the Call Control API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<SecretSetting>,
    /// The REST API's base URL.
    pub api_base: String,
    /// The account's public key (base64, Mission Control "Public Key"):
    /// checks `telnyx-signature-ed25519` on `/telnyx/texml`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// Refuse `/telnyx/texml` requests without a valid signature (needs `public_key`).
    pub validate_signature: bool,
    /// The codec `/telnyx/texml` asks for: `PCMU` or `PCMA` (A-law).
    pub codec: String,
}

impl Default for TelnyxSettings {
    fn default() -> Self {
        Self {
            api_key: None,
            api_base: TELNYX_API_BASE.to_owned(),
            public_key: None,
            validate_signature: true,
            codec: "PCMU".to_owned(),
        }
    }
}

/// `[telephony.plivo]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlivoSettings {
    /// The auth ID (`MA…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_id: Option<String>,
    /// The auth token, `"${PLIVO_AUTH_TOKEN}"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<SecretSetting>,
    /// The REST API's base URL.
    pub api_base: String,
    /// Refuse `/plivo/answer` requests without a valid `X-Plivo-Signature-V3`
    /// (checked when `auth_token` is set).
    pub validate_signature: bool,
    /// The `contentType` `/plivo/answer` asks for.
    pub content_type: String,
}

impl Default for PlivoSettings {
    fn default() -> Self {
        Self {
            auth_id: None,
            auth_token: None,
            api_base: PLIVO_API_BASE.to_owned(),
            validate_signature: true,
            content_type: plivo_answer::CONTENT_TYPES[0].to_owned(),
        }
    }
}

/// Rates Vonage streams linear PCM at, in Hz.
pub const VONAGE_RATES_HZ: [u32; 2] = [8000, 16000];

/// `[telephony.vonage]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VonageSettings {
    /// The Voice application's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    /// The application's private key (PEM), `"${VONAGE_PRIVATE_KEY}"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key: Option<SecretSetting>,
    /// The REST API's base URL.
    pub api_base: String,
    /// The rate `/vonage/answer` asks for (8000 or 16000 Hz).
    pub sample_rate_hz: u32,
}

impl Default for VonageSettings {
    fn default() -> Self {
        Self {
            application_id: None,
            private_key: None,
            api_base: VONAGE_API_BASE.to_owned(),
            sample_rate_hz: 16000,
        }
    }
}

/// `[telephony.exotel]` (Exotel has no REST hang-up for a Voicebot stream:
/// the table only serves the route).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExotelSettings {}

impl TelephonySettings {
    /// True when `carrier`'s websocket route is served.
    pub fn route_enabled(&self, carrier: Carrier) -> bool {
        match carrier {
            Carrier::Twilio => true,
            Carrier::Telnyx => self.telnyx.is_some(),
            Carrier::Plivo => self.plivo.is_some(),
            Carrier::Vonage => self.vonage.is_some(),
            Carrier::Exotel => self.exotel.is_some(),
        }
    }

    /// The Plivo auth token when `/plivo/answer` signatures must be checked.
    pub fn plivo_signature_token(&self) -> Option<&str> {
        let p = self.plivo.as_ref().filter(|p| p.validate_signature)?;
        p.auth_token.as_ref()?.secret().map(|s| s.expose())
    }

    /// The Telnyx public key when `/telnyx/texml` signatures must be checked.
    pub fn telnyx_signature_key(&self) -> Option<Vec<u8>> {
        let t = self.telnyx.as_ref().filter(|t| t.validate_signature)?;
        telnyx_answer::public_key(t.public_key.as_deref()?).ok()
    }

    /// The Twilio auth token when signatures must be checked.
    pub fn twilio_signature_token(&self) -> Option<&str> {
        let t = self.twilio.as_ref().filter(|t| t.validate_signature)?;
        t.auth_token.as_ref()?.secret().map(|s| s.expose())
    }

    pub(super) fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        if let Some(url) = &self.public_url {
            let ok = (url.starts_with("https://") || url.starts_with("http://"))
                && !url.contains(['?', '#']);
            if !ok {
                return Err(AgentError::invalid(
                    "telephony.public_url",
                    url,
                    "an https:// (or http://) base URL without query, like https://bot.example.com",
                ));
            }
        }
        if let Some(t) = &mut self.twilio {
            t.check(env)?;
        }
        if let Some(t) = &mut self.telnyx {
            resolve(&mut t.api_key, "telephony.telnyx.api_key", env)?;
            t.check()?;
        }
        if let Some(p) = &mut self.plivo {
            resolve(&mut p.auth_token, "telephony.plivo.auth_token", env)?;
            if !plivo_answer::CONTENT_TYPES.contains(&p.content_type.as_str()) {
                return Err(AgentError::invalid(
                    "telephony.plivo.content_type",
                    &p.content_type,
                    &plivo_answer::CONTENT_TYPES.join(", "),
                ));
            }
            both(
                p.auth_id.is_some(),
                p.auth_token.is_some(),
                "telephony.plivo.auth_id",
                "telephony.plivo.auth_token",
            )?;
        }
        if let Some(v) = &mut self.vonage {
            v.check(env)?;
        }
        if let Some(t) = &self.transfer {
            t.check()?;
        }
        Ok(())
    }
}

impl TwilioSettings {
    fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        resolve(&mut self.auth_token, "telephony.twilio.auth_token", env)?;
        if self.validate_signature && self.auth_token.is_none() && self.account_sid.is_some() {
            return Err(AgentError::invalid(
                "telephony.twilio.auth_token",
                "(unset)",
                "the account's auth token, to check X-Twilio-Signature and call the REST API",
            ));
        }
        Ok(())
    }
}

impl TelnyxSettings {
    fn check(&self) -> Result<(), AgentError> {
        if !telnyx_answer::CODECS.contains(&self.codec.as_str()) {
            return Err(AgentError::invalid(
                "telephony.telnyx.codec",
                &self.codec,
                "PCMU or PCMA",
            ));
        }
        if let Some(key) = &self.public_key
            && telnyx_answer::public_key(key).is_err()
        {
            return Err(AgentError::invalid(
                "telephony.telnyx.public_key",
                key,
                "the account's public key: base64 of 32 bytes",
            ));
        }
        Ok(())
    }
}

impl VonageSettings {
    fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        if !VONAGE_RATES_HZ.contains(&self.sample_rate_hz) {
            return Err(AgentError::invalid(
                "telephony.vonage.sample_rate_hz",
                self.sample_rate_hz,
                "8000 or 16000",
            ));
        }
        resolve(&mut self.private_key, "telephony.vonage.private_key", env)?;
        both(
            self.application_id.is_some(),
            self.private_key.is_some(),
            "telephony.vonage.application_id",
            "telephony.vonage.private_key",
        )?;
        if let Some(pem) = self.private_key_pem() {
            parse_rsa_pem(&pem).map_err(|e| {
                AgentError::invalid(
                    "telephony.vonage.private_key",
                    "<redacted>",
                    &format!("the application's PEM private key ({e})"),
                )
            })?;
        }
        Ok(())
    }

    /// The private key's PEM text (an environment variable may hold it with
    /// `\n` written out; those become line breaks).
    pub fn private_key_pem(&self) -> Option<String> {
        let raw = self.private_key.as_ref()?.secret()?.expose();
        Some(raw.replace("\\n", "\n"))
    }
}

fn resolve(
    setting: &mut Option<SecretSetting>,
    key: &str,
    env: EnvLookup<'_>,
) -> Result<(), AgentError> {
    if let Some(s) = setting {
        s.resolve(key, env)?;
    }
    Ok(())
}

/// Both keys or neither: one alone is an error naming the other.
fn both(a: bool, b: bool, key_a: &str, key_b: &str) -> Result<(), AgentError> {
    let missing = match (a, b) {
        (true, false) => key_b,
        (false, true) => key_a,
        _ => return Ok(()),
    };
    Err(AgentError::invalid(
        missing,
        "(unset)",
        &format!("set together with {}", if a { key_a } else { key_b }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        Some(format!("v-{name}"))
    }

    #[test]
    fn only_twilio_is_served_by_default() {
        let t = TelephonySettings::default();
        assert!(t.route_enabled(Carrier::Twilio));
        assert!(!t.route_enabled(Carrier::Telnyx));
        assert!(t.hang_up_on_end);
    }

    #[test]
    fn half_credentials_name_the_missing_key() {
        let mut t = TelephonySettings {
            plivo: Some(PlivoSettings {
                auth_id: Some("MA1".into()),
                ..PlivoSettings::default()
            }),
            ..TelephonySettings::default()
        };
        let err = t.check(&env).unwrap_err().to_string();
        assert!(err.contains("telephony.plivo.auth_token"), "{err}");
    }

    #[test]
    fn a_public_url_with_a_query_is_refused() {
        let mut t = TelephonySettings {
            public_url: Some("https://a.example/?x=1".into()),
            ..TelephonySettings::default()
        };
        assert!(t.check(&env).is_err());
    }
}
