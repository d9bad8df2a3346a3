//! Failed auth attempts, counted per source address (`[server.failed_auth]`).
//!
//! Every route that checks a token or a signature reports each refusal
//! (401, 403, or a carrier stream closed for a missing token) here, keyed on
//! the source: an IPv4 address, or an IPv6 address's /64 (one host usually
//! holds a whole /64). An address with `max_failures` failures within
//! `window` of its first is refused for `block` before any route's work
//! (`crate::gate`: HTTP 429 with `Retry-After`), whatever it offers then.
//!
//! Memory is bounded: at most `max_addresses` sources are tracked (one
//! [`Source`] and [`Entry`], 56 bytes, plus the hash table's own byte per
//! slot: under 1 MiB at the default 10,000). When the map is full, a new
//! source first clears the entries whose window or block has passed, then
//! evicts the one that would expire soonest.
//!
//! [`FailedAuth`] is the sans-IO core (every method takes `now`);
//! [`AuthLimiter`] holds it behind a lock on tokio's clock.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Default failures from one source that block it.
pub const DEFAULT_MAX_FAILURES: u32 = 10;
/// Default window the failures are counted in, from the first, in seconds.
pub const DEFAULT_WINDOW_S: u32 = 60;
/// Default time a blocked source stays refused, in seconds.
pub const DEFAULT_BLOCK_S: u32 = 300;
/// Default bound on the sources tracked at once.
pub const DEFAULT_MAX_ADDRESSES: usize = 10_000;

/// The limiter's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitRules {
    /// Failures within `window` that block a source; 0 turns the limiter off.
    pub max_failures: u32,
    /// How long failures count, from a source's first.
    pub window: Duration,
    /// How long a blocked source is refused.
    pub block: Duration,
    /// Most sources tracked at once.
    pub max_addresses: usize,
    /// Never count loopback sources (127.0.0.0/8, ::1).
    pub exempt_loopback: bool,
}

impl Default for LimitRules {
    fn default() -> Self {
        Self {
            max_failures: DEFAULT_MAX_FAILURES,
            window: Duration::from_secs(DEFAULT_WINDOW_S.into()),
            block: Duration::from_secs(DEFAULT_BLOCK_S.into()),
            max_addresses: DEFAULT_MAX_ADDRESSES,
            exempt_loopback: false,
        }
    }
}

/// Who failed: an IPv4 address, or an IPv6 address's first 64 bits
/// (IPv4-mapped IPv6 addresses count as their IPv4 address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// An IPv4 address.
    V4(Ipv4Addr),
    /// An IPv6 /64 prefix.
    V6Prefix(u64),
}

impl Source {
    /// The source `ip` counts as.
    pub fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self::V4(v4),
            IpAddr::V6(v6) => Self::V6Prefix((v6.to_bits() >> 64) as u64),
        }
    }
}

/// One source's failures.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Failures since `since`.
    failures: u32,
    /// The first failure of the window.
    since: Instant,
    /// Refused until then, once blocked.
    blocked_until: Option<Instant>,
}

impl Entry {
    fn new(now: Instant) -> Self {
        Self {
            failures: 0,
            since: now,
            blocked_until: None,
        }
    }

    /// When the entry stops mattering: its block's end, else its window's.
    fn expires(&self, rules: &LimitRules) -> Instant {
        self.blocked_until.unwrap_or(self.since + rules.window)
    }
}

/// A blocked source's refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked {
    /// How long the block lasts from now.
    pub retry_after: Duration,
}

impl Blocked {
    /// `retry_after` in whole seconds, rounded up (HTTP `Retry-After`).
    pub fn retry_after_secs(&self) -> u64 {
        let d = self.retry_after;
        (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
    }
}

/// The sans-IO limiter: the failures of each source within its window.
#[derive(Debug)]
pub struct FailedAuth {
    rules: LimitRules,
    entries: HashMap<Source, Entry>,
}

impl FailedAuth {
    /// An empty limiter with `rules`.
    pub fn new(rules: LimitRules) -> Self {
        Self {
            rules,
            entries: HashMap::new(),
        }
    }

    /// Whether `ip` is counted at all.
    fn applies(&self, ip: IpAddr) -> bool {
        self.rules.max_failures > 0
            && !(self.rules.exempt_loopback && ip.to_canonical().is_loopback())
    }

    /// `Err` when `ip` is blocked at `now`.
    pub fn check(&mut self, ip: IpAddr, now: Instant) -> Result<(), Blocked> {
        if !self.applies(ip) {
            return Ok(());
        }
        let source = Source::of(ip);
        let Some(entry) = self.entries.get(&source) else {
            return Ok(());
        };
        if now >= entry.expires(&self.rules) {
            self.entries.remove(&source);
            return Ok(());
        }
        match entry.blocked_until {
            Some(until) => Err(Blocked {
                retry_after: until - now,
            }),
            None => Ok(()),
        }
    }

    /// Counts a failed attempt from `ip` at `now`; `Some` when this failure
    /// blocks the source.
    pub fn failed(&mut self, ip: IpAddr, now: Instant) -> Option<Blocked> {
        if !self.applies(ip) {
            return None;
        }
        let source = Source::of(ip);
        if !self.entries.contains_key(&source) {
            self.make_room(now);
        }
        let rules = self.rules;
        let entry = self.entries.entry(source).or_insert(Entry::new(now));
        if now >= entry.expires(&rules) {
            *entry = Entry::new(now);
        }
        if entry.blocked_until.is_some() {
            // A request let through before the block began.
            return None;
        }
        entry.failures += 1;
        if entry.failures < rules.max_failures {
            return None;
        }
        entry.blocked_until = Some(now + rules.block);
        Some(Blocked {
            retry_after: rules.block,
        })
    }

    /// Makes room for one more source: drops what has expired, then, if
    /// still full, the entry that would expire soonest.
    fn make_room(&mut self, now: Instant) {
        if self.entries.len() < self.rules.max_addresses {
            return;
        }
        let rules = self.rules;
        self.entries.retain(|_, e| now < e.expires(&rules));
        if self.entries.len() < self.rules.max_addresses {
            return;
        }
        let soonest = (self.entries.iter())
            .min_by_key(|(_, e)| e.expires(&rules))
            .map(|(source, _)| *source);
        if let Some(source) = soonest {
            self.entries.remove(&source);
        }
    }

    /// Sources tracked now.
    pub fn tracked(&self) -> usize {
        self.entries.len()
    }
}

/// The process's limiter, on tokio's clock, shared by every route.
#[derive(Debug)]
pub struct AuthLimiter {
    core: Mutex<FailedAuth>,
}

impl AuthLimiter {
    /// A limiter with `rules`.
    pub fn new(rules: LimitRules) -> Self {
        Self {
            core: Mutex::new(FailedAuth::new(rules)),
        }
    }

    /// `Err` when `ip` is blocked now.
    pub fn check(&self, ip: IpAddr) -> Result<(), Blocked> {
        let now = crate::clock::now();
        self.lock().check(ip, now)
    }

    /// Counts a failed attempt from `ip` now; `Some` when it blocks the source.
    pub fn failed(&self, ip: IpAddr) -> Option<Blocked> {
        let now = crate::clock::now();
        self.lock().failed(ip, now)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FailedAuth> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(max_failures: u32) -> LimitRules {
        LimitRules {
            max_failures,
            window: Duration::from_secs(60),
            block: Duration::from_secs(300),
            max_addresses: 4,
            exempt_loopback: false,
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_source_is_blocked_at_the_limit_until_the_cool_down_ends() {
        let limiter = AuthLimiter::new(rules(3));
        let bad = ip("203.0.113.7");
        assert_eq!(limiter.failed(bad), None);
        assert_eq!(limiter.failed(bad), None);
        assert!(limiter.check(bad).is_ok(), "two failures of three");
        let blocked = limiter.failed(bad).expect("the third failure blocks");
        assert_eq!(blocked.retry_after, Duration::from_secs(300));
        assert!(limiter.check(ip("203.0.113.8")).is_ok(), "another address");
        tokio::time::advance(Duration::from_secs(299)).await;
        let still = limiter
            .check(bad)
            .expect_err("blocked during the cool-down");
        assert_eq!(still.retry_after_secs(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(limiter.check(bad).is_ok(), "the cool-down is over");
        assert_eq!(limiter.failed(bad), None, "counting starts again");
    }

    #[tokio::test(start_paused = true)]
    async fn failures_spread_wider_than_the_window_never_block() {
        let limiter = AuthLimiter::new(rules(3));
        let slow = ip("198.51.100.1");
        for _ in 0..10 {
            assert_eq!(limiter.failed(slow), None);
            tokio::time::advance(Duration::from_secs(31)).await;
            assert_eq!(limiter.failed(slow), None);
            tokio::time::advance(Duration::from_secs(30)).await;
        }
        assert!(limiter.check(slow).is_ok());
    }

    #[test]
    fn an_ipv6_64_is_one_source_and_mapped_ipv4_is_its_address() {
        assert_eq!(
            Source::of(ip("2001:db8:1:2::1")),
            Source::of(ip("2001:db8:1:2:ffff::9"))
        );
        assert_ne!(
            Source::of(ip("2001:db8:1:2::1")),
            Source::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            Source::of(ip("::ffff:192.0.2.1")),
            Source::of(ip("192.0.2.1"))
        );
        let t0 = crate::clock::now();
        let mut core = FailedAuth::new(rules(2));
        core.failed(ip("2001:db8::1"), t0);
        assert!(core.failed(ip("2001:db8::2"), t0).is_some(), "same /64");
        assert!(core.check(ip("2001:db8::3"), t0).is_err());
        assert!(core.check(ip("2001:db9::1"), t0).is_ok());
    }

    #[test]
    fn loopback_counts_unless_exempt_and_zero_turns_it_off() {
        let t0 = crate::clock::now();
        let mut counted = FailedAuth::new(rules(1));
        assert!(counted.failed(ip("127.0.0.1"), t0).is_some());
        assert!(counted.check(ip("127.0.0.1"), t0).is_err());
        let mut exempt = FailedAuth::new(LimitRules {
            exempt_loopback: true,
            ..rules(1)
        });
        for lo in ["127.0.0.1", "127.8.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(exempt.failed(ip(lo), t0).is_none(), "{lo}");
            assert!(exempt.check(ip(lo), t0).is_ok(), "{lo}");
        }
        assert!(exempt.failed(ip("192.0.2.1"), t0).is_some());
        let mut off = FailedAuth::new(rules(0));
        for _ in 0..100 {
            assert!(off.failed(ip("192.0.2.1"), t0).is_none());
        }
        assert_eq!(off.tracked(), 0);
    }

    #[test]
    fn the_map_stays_bounded_and_evicts_what_expires_first() {
        let t0 = crate::clock::now();
        let mut core = FailedAuth::new(rules(2));
        // A blocked source expires last (its block outlasts the windows).
        core.failed(ip("192.0.2.1"), t0);
        core.failed(ip("192.0.2.1"), t0);
        for i in 2..=200u8 {
            let at = t0 + Duration::from_millis(u64::from(i));
            core.failed(IpAddr::V4(Ipv4Addr::new(192, 0, 2, i)), at);
            assert!(core.tracked() <= 4);
        }
        let later = t0 + Duration::from_secs(1);
        assert!(core.check(ip("192.0.2.1"), later).is_err(), "kept");
        // Expired entries go first: the windows are over, the block is not.
        let after = t0 + Duration::from_secs(61);
        core.failed(ip("198.51.100.1"), after);
        assert_eq!(core.tracked(), 2);
    }

    #[test]
    fn an_entry_fits_the_documented_bound() {
        assert!(std::mem::size_of::<(Source, Entry)>() <= 56);
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        let b = |ms| Blocked {
            retry_after: Duration::from_millis(ms),
        };
        assert_eq!(b(1).retry_after_secs(), 1);
        assert_eq!(b(1000).retry_after_secs(), 1);
        assert_eq!(b(1001).retry_after_secs(), 2);
        assert_eq!(b(0).retry_after_secs(), 1);
    }
}
