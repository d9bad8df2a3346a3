//! The `[server]` section: where to listen, who may call, failed auth
//! attempts, message limits.

use serde::{Deserialize, Serialize};

use super::AgentError;
use super::policy::range;
use super::providers::EnvLookup;
use crate::secret::SecretSetting;

/// Where a route accepts its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenPlacement {
    /// `Authorization: Bearer <token>` only.
    Bearer,
    /// `?token=<token>` only (Twilio, browsers).
    Query,
    /// Either.
    #[default]
    BearerOrQuery,
}

/// One route's token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteAuth {
    /// The token, `"${BRISVOX_CALL_TOKEN}"`.
    pub token: SecretSetting,
    /// Where the client puts it.
    #[serde(default)]
    pub accept: TokenPlacement,
}

/// `[server.auth]`: a token per route; a route without one is open.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSettings {
    /// `/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<RouteAuth>,
    /// `/twilio` (and `/twilio/voice` when Twilio's signature is not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub twilio: Option<RouteAuth>,
    /// `/telnyx`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telnyx: Option<RouteAuth>,
    /// `/plivo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plivo: Option<RouteAuth>,
    /// `/vonage` and `/vonage/answer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vonage: Option<RouteAuth>,
    /// `/exotel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exotel: Option<RouteAuth>,
    /// `/metrics`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<RouteAuth>,
}

/// Default of `[server.webrtc] udp_ports`: a thousand calls' worth.
pub const DEFAULT_WEBRTC_UDP_PORTS: [u16; 2] = [50_000, 50_999];

/// `[server.webrtc]`: the UDP side of `/webrtc/offer` (docs/WEBRTC.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebRtcSettings {
    /// The UDP ports calls take, one per call: `[first, last]`.
    pub udp_ports: [u16; 2],
    /// The address the calls' UDP sockets bind to.
    pub udp_ip: std::net::IpAddr,
    /// The address clients are told to send to (the host's public address
    /// behind a 1:1 NAT). Unset: `udp_ip` when it is not `0.0.0.0`/`::`,
    /// else the address the client reached the HTTP server by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_ip: Option<std::net::IpAddr>,
}

impl Default for WebRtcSettings {
    fn default() -> Self {
        Self {
            udp_ports: DEFAULT_WEBRTC_UDP_PORTS,
            udp_ip: std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            public_ip: None,
        }
    }
}

impl WebRtcSettings {
    fn check(&self) -> Result<(), AgentError> {
        let [first, last] = self.udp_ports;
        if first < 1024 || first > last {
            return Err(AgentError::invalid(
                "server.webrtc.udp_ports",
                format!("[{first}, {last}]"),
                "[first, last] with 1024 <= first <= last <= 65535",
            ));
        }
        if let Some(ip) = self.public_ip
            && ip.is_unspecified()
        {
            return Err(AgentError::invalid(
                "server.webrtc.public_ip",
                ip,
                "an address clients can send to (not 0.0.0.0 or ::)",
            ));
        }
        Ok(())
    }
}

/// `[server.failed_auth]`: failed token or signature checks counted per
/// source address ([`crate::auth_limit`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailedAuthSettings {
    /// Failures within `window_s` that block an address; 0: no limit.
    pub max_failures: u32,
    /// The window failures are counted in, from an address's first, in seconds.
    pub window_s: u32,
    /// How long a blocked address is refused, in seconds.
    pub block_s: u32,
    /// Most addresses tracked at once.
    pub max_addresses: usize,
    /// Never count loopback addresses.
    pub exempt_loopback: bool,
}

impl Default for FailedAuthSettings {
    fn default() -> Self {
        use crate::auth_limit as d;
        Self {
            max_failures: d::DEFAULT_MAX_FAILURES,
            window_s: d::DEFAULT_WINDOW_S,
            block_s: d::DEFAULT_BLOCK_S,
            max_addresses: d::DEFAULT_MAX_ADDRESSES,
            exempt_loopback: false,
        }
    }
}

impl FailedAuthSettings {
    fn check(&self) -> Result<(), AgentError> {
        range(
            "server.failed_auth.max_failures",
            self.max_failures,
            0,
            10_000,
        )?;
        range("server.failed_auth.window_s", self.window_s, 1, 86_400)?;
        range("server.failed_auth.block_s", self.block_s, 1, 86_400)?;
        if !(16..=1_000_000).contains(&self.max_addresses) {
            return Err(AgentError::invalid(
                "server.failed_auth.max_addresses",
                self.max_addresses,
                "a whole number from 16 to 1000000",
            ));
        }
        Ok(())
    }

    /// The limiter's rules.
    pub fn rules(&self) -> crate::auth_limit::LimitRules {
        crate::auth_limit::LimitRules {
            max_failures: self.max_failures,
            window: std::time::Duration::from_secs(self.window_s.into()),
            block: std::time::Duration::from_secs(self.block_s.into()),
            max_addresses: self.max_addresses,
            exempt_loopback: self.exempt_loopback,
        }
    }
}

/// Default of `[server] drain_admit_s`, in seconds.
pub const DEFAULT_DRAIN_ADMIT_S: u32 = 5;

/// Largest `[server] drain_grace_s`: a day.
pub const MAX_DRAIN_GRACE_S: u32 = 86_400;

/// `[server]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Address to listen on (`--bind` overrides it).
    pub bind: String,
    /// Bound on one websocket message, in bytes (binary audio and text).
    pub max_message_bytes: usize,
    /// After a drain starts, how long running calls may go on before they are
    /// ended, in seconds. Unset: `limits.max_call_duration_s`, so a drain never
    /// cuts a call short of its own limit ([`super::AgentSettings::drain_grace_s`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_grace_s: Option<u32>,
    /// After a SIGTERM, how long new calls are still admitted while `/readyz`
    /// already says `draining`, in seconds: the time a load balancer needs to
    /// see the readiness change (Kubernetes endpoint propagation, HAProxy's
    /// health checks). Ctrl-c skips it.
    pub drain_admit_s: u32,
    /// Deadline for a connection's whole HTTP request head, in ms: a client
    /// sending its headers slower is disconnected (slow-header floods).
    pub header_read_timeout_ms: u32,
    /// Most sockets open at once (HTTP and websockets); unset: what the file
    /// limit leaves after 3 per call and 256 spare
    /// ([`crate::listener::max_connections_for`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<usize>,
    /// Tokens per route.
    pub auth: AuthSettings,
    /// Failed auth attempts per source address.
    pub failed_auth: FailedAuthSettings,
    /// WebRTC's UDP ports and addresses.
    pub webrtc: WebRtcSettings,
    /// Serve open call routes with paid providers on a non-loopback address
    /// (refused by default: [`super::exposure`]). For a server behind
    /// something that authenticates callers itself.
    pub allow_unauthenticated_calls: bool,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            bind: "0.0.0.0:8080".to_owned(),
            max_message_bytes: brisvox_transport::brisvox_ws::DEFAULT_MAX_BINARY_BYTES,
            drain_grace_s: None,
            drain_admit_s: DEFAULT_DRAIN_ADMIT_S,
            header_read_timeout_ms: crate::listener::DEFAULT_HEADER_READ_TIMEOUT_MS,
            max_connections: None,
            auth: AuthSettings::default(),
            failed_auth: FailedAuthSettings::default(),
            webrtc: WebRtcSettings::default(),
            allow_unauthenticated_calls: false,
        }
    }
}

impl ServerSettings {
    pub(super) fn check(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        if self.bind.parse::<std::net::SocketAddr>().is_err() {
            return Err(AgentError::invalid(
                "server.bind",
                &self.bind,
                "an IP address and port, like 0.0.0.0:8080",
            ));
        }
        if !(1024..=16 * 1024 * 1024).contains(&self.max_message_bytes) {
            return Err(AgentError::invalid(
                "server.max_message_bytes",
                self.max_message_bytes,
                "a whole number of bytes from 1024 to 16777216",
            ));
        }
        if let Some(grace) = self.drain_grace_s {
            range("server.drain_grace_s", grace, 0, MAX_DRAIN_GRACE_S)?;
        }
        range("server.drain_admit_s", self.drain_admit_s, 0, 300)?;
        range(
            "server.header_read_timeout_ms",
            self.header_read_timeout_ms,
            100,
            120_000,
        )?;
        if let Some(n) = self.max_connections
            && !(16..=1_000_000).contains(&n)
        {
            return Err(AgentError::invalid(
                "server.max_connections",
                n,
                "a whole number from 16 to 1000000",
            ));
        }
        self.webrtc.check()?;
        self.failed_auth.check()?;
        let routes = [
            (&mut self.auth.call, "server.auth.call.token"),
            (&mut self.auth.twilio, "server.auth.twilio.token"),
            (&mut self.auth.telnyx, "server.auth.telnyx.token"),
            (&mut self.auth.plivo, "server.auth.plivo.token"),
            (&mut self.auth.vonage, "server.auth.vonage.token"),
            (&mut self.auth.exotel, "server.auth.exotel.token"),
            (&mut self.auth.metrics, "server.auth.metrics.token"),
        ];
        for (route, key) in routes {
            if let Some(r) = route {
                r.token.resolve(key, env)?;
            }
        }
        Ok(())
    }
}
