//! Plivo transfers: Plivo's Transfer Call API does not take a destination,
//! it makes the live call fetch its next XML from a URL (`aleg_url`). So a
//! transfer on a Plivo call registers its destination here under a fresh
//! unguessable token, asks Plivo to transfer the call to
//! `{public base}/plivo/transfer/{token}`
//! ([`brisvox_transport::carrier::control::CallControl::plivo_transfer`]),
//! and that route answers Plivo's fetch with the `<Dial>` of the registered
//! destination ([`brisvox_transport::plivo_answer::dial_xml`]), once: the
//! token is taken on the first answer and forgotten after [`TOKEN_TTL`].
//! The route serves no other destination than one the server registered,
//! and checks Plivo's signature like `/plivo/answer` does
//! ([`crate::carrier_http`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use brisvox_transport::carrier::control::TransferTarget;
use ring::rand::{SecureRandom, SystemRandom};

/// How long a registered transfer waits for Plivo's fetch.
pub const TOKEN_TTL: Duration = Duration::from_secs(60);

/// The route Plivo fetches a transfer's XML from, before the token.
pub const TRANSFER_PATH: &str = "/plivo/transfer/";

/// Destinations registered for Plivo's fetch, by token.
#[derive(Debug, Default)]
pub struct PendingTransfers {
    pending: Mutex<HashMap<String, (TransferTarget, Instant)>>,
}

impl PendingTransfers {
    /// Registers `target` at `now`; returns its token (32 hex digits, 128
    /// random bits), or `None` when the system has no randomness to give.
    pub fn register(&self, target: TransferTarget, now: Instant) -> Option<String> {
        let mut bytes = [0u8; 16];
        SystemRandom::new().fill(&mut bytes).ok()?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut pending = self.lock();
        pending.retain(|_, (_, at)| now.saturating_duration_since(*at) < TOKEN_TTL);
        pending.insert(token.clone(), (target, now));
        Some(token)
    }

    /// The destination registered under `token`, if it is there and younger
    /// than [`TOKEN_TTL`] at `now`; the token is gone afterwards.
    pub fn take(&self, token: &str, now: Instant) -> Option<TransferTarget> {
        let (target, at) = self.lock().remove(token)?;
        (now.saturating_duration_since(at) < TOKEN_TTL).then_some(target)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (TransferTarget, Instant)>> {
        // A panic elsewhere while holding the lock leaves a map still whole.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number() -> TransferTarget {
        TransferTarget::Number("+15550199".into())
    }

    #[test]
    fn a_token_gives_its_destination_once() {
        let p = PendingTransfers::default();
        let t0 = Instant::now();
        let token = p.register(number(), t0).unwrap();
        assert_eq!(token.len(), 32);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(p.take("0123", t0), None);
        assert_eq!(p.take(&token, t0 + Duration::from_secs(1)), Some(number()));
        assert_eq!(p.take(&token, t0 + Duration::from_secs(1)), None);
    }

    #[test]
    fn tokens_differ_and_expire() {
        let p = PendingTransfers::default();
        let t0 = Instant::now();
        let a = p.register(number(), t0).unwrap();
        let b = p.register(number(), t0).unwrap();
        assert_ne!(a, b);
        assert_eq!(p.take(&a, t0 + TOKEN_TTL), None, "expired");
        // Registering later forgets the expired ones.
        let _c = p.register(number(), t0 + TOKEN_TTL).unwrap();
        assert_eq!(p.lock().len(), 1);
        assert!(!p.lock().contains_key(&b));
    }
}
