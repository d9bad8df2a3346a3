//! The state every route shares: the agent, the call handler, admission,
//! metrics, the decoder limits, the drain signal, the carriers' REST access
//! and the failed-auth limiter.

use std::sync::Arc;

use brisvox_transport::DecoderLimits;
use brisvox_transport::brisvox_ws::DEFAULT_MAX_TEXT_BYTES;
use tokio::sync::watch;

use crate::admission::Admission;
use crate::agent::AgentSettings;
use crate::carrier_control::CarrierControls;
use crate::handler::CallHandler;
use crate::metrics::ServerMetrics;
use crate::telemetry::Telemetry;

/// State shared by every route.
pub struct AppState {
    /// The agent.
    pub agent: Arc<AgentSettings>,
    /// Runs each call.
    pub handler: Arc<dyn CallHandler>,
    /// Admission control.
    pub admission: Arc<Admission>,
    /// Metrics.
    pub metrics: ServerMetrics,
    /// Where each call's trace goes, when tracing is on.
    pub telemetry: Option<Telemetry>,
    /// Size limits of the brisvox decoder.
    pub limits: DecoderLimits,
    /// Turns true when running calls must end (drain grace over).
    pub end_calls: watch::Receiver<bool>,
    /// The carriers' REST access (`[telephony.*]`).
    pub controls: CarrierControls,
    /// Plivo transfers waiting for Plivo to fetch their XML.
    pub plivo_transfers: crate::plivo_transfer::PendingTransfers,
    /// Failed auth attempts per source address (`[server.failed_auth]`).
    pub auth_limiter: crate::auth_limit::AuthLimiter,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("admission", &self.admission)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Decoder limits from `[server] max_message_bytes`.
    pub fn limits_for(agent: &AgentSettings) -> DecoderLimits {
        let max = agent.server.max_message_bytes;
        DecoderLimits {
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES.min(max),
            max_binary_bytes: max,
            max_pending_audio_bytes: max + 1920,
        }
    }

    /// The websocket's own limit: above ours, so that our decoder sees an
    /// oversized message and answers with an `error` event; far above it the
    /// socket layer cuts the connection.
    pub(crate) fn socket_limit(&self) -> usize {
        2 * self.limits.max_binary_bytes.max(self.limits.max_text_bytes) + 64 * 1024
    }
}
