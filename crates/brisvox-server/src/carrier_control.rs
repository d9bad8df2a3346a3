//! Call control through the carriers' REST APIs: the server's HTTP client
//! for the requests `brisvox_transport::carrier::control` builds.
//!
//! [`CarrierControls`] holds each configured carrier's access (from
//! `[telephony.*]`, built once at startup) and one HTTP client. A route calls
//! [`CarrierControls::perform`] after its call ended from the server's side:
//! off the media path (the call's slot is already free), bounded by
//! [`CONTROL_TIMEOUT`], its result logged and counted in
//! `brisvox_call_control_total{carrier, action, result}` (`action`:
//! `hang_up`, `transfer`; `result`: `ok`, `refused` (an error status),
//! `failed` (no answer), `unsupported` (no access configured, or an action
//! the carrier does not offer), `invalid` (a transfer target that is neither
//! a number nor a SIP URI, counted by the route)).

use std::time::Duration;

use brisvox_transport::Carrier;
use brisvox_transport::carrier::control::{
    CallAction, CallControl, ControlError, HttpMethod, HttpRequest,
};

use crate::agent::TelephonySettings;
use crate::metrics::ServerMetrics;

/// Bound on one call-control request, connection included.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call-control request did not succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlFailed {
    /// No REST access is configured for the carrier.
    #[error("no REST access is configured for {carrier}")]
    NotConfigured {
        /// The carrier.
        carrier: &'static str,
    },
    /// The request could not be built (no call id, an action the carrier lacks).
    #[error(transparent)]
    Build(#[from] ControlError),
    /// The carrier answered with an error status.
    #[error("the carrier answered {status}: {body}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The start of its body.
        body: String,
    },
    /// No answer (connection, timeout).
    #[error("the request failed: {detail}")]
    Failed {
        /// What the client said.
        detail: String,
    },
}

/// Each configured carrier's REST access and the client that sends requests.
#[derive(Debug, Clone, Default)]
pub struct CarrierControls {
    controls: Vec<CallControl>,
    client: reqwest::Client,
    hang_up_on_end: bool,
}

impl CarrierControls {
    /// The accesses `[telephony]` configures (the settings were checked).
    pub fn from_settings(t: &TelephonySettings) -> Result<Self, ControlError> {
        let mut controls = Vec::new();
        if let Some(tw) = &t.twilio
            && let (Some(sid), Some(token)) = (&tw.account_sid, secret(&tw.auth_token))
        {
            controls.push(CallControl::Twilio {
                api_base: tw.api_base.clone(),
                account_sid: sid.clone(),
                auth_token: token,
            });
        }
        if let Some(tx) = &t.telnyx
            && let Some(key) = secret(&tx.api_key)
        {
            controls.push(CallControl::Telnyx {
                api_base: tx.api_base.clone(),
                api_key: key,
            });
        }
        if let Some(p) = &t.plivo
            && let (Some(id), Some(token)) = (&p.auth_id, secret(&p.auth_token))
        {
            controls.push(CallControl::Plivo {
                api_base: p.api_base.clone(),
                auth_id: id.clone(),
                auth_token: token,
            });
        }
        if let Some(v) = &t.vonage
            && let (Some(app), Some(pem)) = (&v.application_id, v.private_key_pem())
        {
            controls.push(CallControl::vonage(&v.api_base, app, &pem)?);
        }
        let client = reqwest::Client::builder()
            .timeout(CONTROL_TIMEOUT)
            .build()
            .unwrap_or_default();
        Ok(Self {
            controls,
            client,
            hang_up_on_end: t.hang_up_on_end,
        })
    }

    /// The access for `carrier`, if configured.
    pub fn get(&self, carrier: Carrier) -> Option<&CallControl> {
        self.controls.iter().find(|c| c.carrier() == carrier)
    }

    /// True when a call of `carrier` the server ended is hung up by REST.
    pub fn hangs_up(&self, carrier: Carrier) -> bool {
        self.hang_up_on_end && self.get(carrier).is_some()
    }

    /// Performs `action` on `carrier`'s call `call_id`; counts the result.
    pub async fn perform(
        &self,
        metrics: &ServerMetrics,
        carrier: Carrier,
        call_id: &str,
        action: &CallAction,
    ) -> Result<(), ControlFailed> {
        let res = self.send(carrier, call_id, action).await;
        let name = match action {
            CallAction::HangUp => "hang_up",
            CallAction::Transfer(_) => "transfer",
        };
        Self::count(metrics, carrier, name, &res);
        res
    }

    /// Transfers the Plivo call `call_id` to the XML at `xml_url`
    /// ([`CallControl::plivo_transfer`]); counts the result as a transfer.
    pub async fn transfer_plivo(
        &self,
        metrics: &ServerMetrics,
        call_id: &str,
        xml_url: &str,
    ) -> Result<(), ControlFailed> {
        let res = match self.get(Carrier::Plivo) {
            None => Err(ControlFailed::NotConfigured { carrier: "plivo" }),
            Some(control) => match control.plivo_transfer(call_id, xml_url) {
                Ok(req) => self.send_request(req).await,
                Err(e) => Err(e.into()),
            },
        };
        Self::count(metrics, Carrier::Plivo, "transfer", &res);
        res
    }

    /// Counts and logs the result of `action` (`hang_up`, `transfer`).
    fn count(
        metrics: &ServerMetrics,
        carrier: Carrier,
        name: &str,
        res: &Result<(), ControlFailed>,
    ) {
        let result = match res {
            Ok(()) => "ok",
            Err(ControlFailed::Refused { .. }) => "refused",
            Err(ControlFailed::NotConfigured { .. } | ControlFailed::Build(_)) => "unsupported",
            Err(ControlFailed::Failed { .. }) => "failed",
        };
        metrics
            .call_control_total
            .with_label_values(&[carrier.as_str(), name, result])
            .inc();
        match res {
            Ok(()) => tracing::info!(
                carrier = carrier.as_str(),
                action = name,
                "call control done"
            ),
            Err(e) => {
                tracing::warn!(carrier = carrier.as_str(), action = name, error = %e, "call control failed")
            }
        }
    }

    async fn send(
        &self,
        carrier: Carrier,
        call_id: &str,
        action: &CallAction,
    ) -> Result<(), ControlFailed> {
        if carrier == Carrier::Exotel {
            // Exotel documents no REST call control for a Voicebot stream.
            return Err(ControlError::Unsupported {
                carrier: carrier.as_str(),
                action: action.name(),
            }
            .into());
        }
        let control = self.get(carrier).ok_or(ControlFailed::NotConfigured {
            carrier: carrier.as_str(),
        })?;
        let wall = crate::clock::wall_clock();
        let nonce = format!("{call_id}-{}", wall.as_nanos());
        let req = control.request(call_id, action, wall.as_secs(), &nonce)?;
        self.send_request(req).await
    }

    async fn send_request(&self, req: HttpRequest) -> Result<(), ControlFailed> {
        let method = match req.method {
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Put => reqwest::Method::PUT,
            HttpMethod::Delete => reqwest::Method::DELETE,
        };
        let mut builder = self.client.request(method, &req.url).body(req.body);
        for (name, value) in &req.headers {
            builder = builder.header(name, value);
        }
        let failed = |e: reqwest::Error| ControlFailed::Failed {
            detail: e.without_url().to_string(),
        };
        let resp = builder.send().await.map_err(failed)?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let body = resp.text().await.unwrap_or_default();
        Err(ControlFailed::Refused {
            status: status.as_u16(),
            body: body.chars().take(200).collect(),
        })
    }
}

fn secret(s: &Option<crate::secret::SecretSetting>) -> Option<String> {
    s.as_ref()?.secret().map(|v| v.expose().to_owned())
}
