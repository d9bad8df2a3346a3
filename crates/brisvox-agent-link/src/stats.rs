//! Hop statistics: how long the agent took to answer an event, measured by
//! the link itself.
//!
//! A hop runs from the moment the link took an event from the call (before it
//! is serialised and written) to the moment the link parsed a command naming
//! that event with `re`: two socket writes, the agent's own work and the
//! scheduler. Only the first command answering an event counts. The
//! histogram's buckets are upper bounds; [`LinkStats::hop_quantile`] answers
//! with the bound of the bucket holding the quantile.

use std::time::Duration;

/// Upper bounds of the hop histogram's buckets, in microseconds; hops above
/// the last go to an overflow bucket.
pub const HOP_BUCKETS_US: [u64; 15] = [
    50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 10_000, 20_000, 50_000, 100_000,
];

/// Counters of one link (one call), or of many merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Hops measured.
    pub hops: u64,
    /// Sum of the hops, in microseconds.
    pub hop_total_us: u64,
    /// The longest hop, in microseconds.
    pub hop_max_us: u64,
    /// Hops per bucket of [`HOP_BUCKETS_US`], then the overflow bucket.
    pub hop_buckets: [u64; HOP_BUCKETS_US.len() + 1],
    /// Events written to the agent.
    pub events_sent: u64,
    /// Events dropped because the outgoing queue was full.
    pub events_dropped: u64,
    /// Commands parsed.
    pub commands: u64,
    /// Command frames refused (malformed, unknown `re` for a tool result).
    pub commands_refused: u64,
    /// Connections made (the first one included).
    pub connects: u64,
    /// Connection attempts that failed.
    pub connect_failures: u64,
    /// Tool calls answered by the agent.
    pub tool_results: u64,
    /// Tool calls that got an error result because the link was down or gone.
    pub tool_calls_failed_by_link: u64,
}

impl LinkStats {
    /// Records one hop.
    pub fn record_hop(&mut self, hop: Duration) {
        let us = u64::try_from(hop.as_micros()).unwrap_or(u64::MAX);
        self.hops += 1;
        self.hop_total_us = self.hop_total_us.saturating_add(us);
        self.hop_max_us = self.hop_max_us.max(us);
        let bucket = HOP_BUCKETS_US
            .iter()
            .position(|&bound| us <= bound)
            .unwrap_or(HOP_BUCKETS_US.len());
        self.hop_buckets[bucket] += 1;
    }

    /// The mean hop, or `None` before the first.
    pub fn hop_mean(&self) -> Option<Duration> {
        (self.hops > 0).then(|| Duration::from_micros(self.hop_total_us / self.hops))
    }

    /// The upper bound of the bucket holding quantile `q` (0 to 1) of the
    /// hops; `None` before the first hop, [`LinkStats::hop_max_us`] when it
    /// falls in the overflow bucket.
    pub fn hop_quantile(&self, q: f64) -> Option<Duration> {
        if self.hops == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.hops as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, count) in self.hop_buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let bound = HOP_BUCKETS_US.get(i).copied().unwrap_or(self.hop_max_us);
                return Some(Duration::from_micros(bound));
            }
        }
        Some(Duration::from_micros(self.hop_max_us))
    }

    /// Adds `other`'s counters to these (for a server-wide view).
    pub fn merge(&mut self, other: &LinkStats) {
        self.hops += other.hops;
        self.hop_total_us = self.hop_total_us.saturating_add(other.hop_total_us);
        self.hop_max_us = self.hop_max_us.max(other.hop_max_us);
        for (mine, theirs) in self.hop_buckets.iter_mut().zip(other.hop_buckets) {
            *mine += theirs;
        }
        self.events_sent += other.events_sent;
        self.events_dropped += other.events_dropped;
        self.commands += other.commands;
        self.commands_refused += other.commands_refused;
        self.connects += other.connects;
        self.connect_failures += other.connect_failures;
        self.tool_results += other.tool_results;
        self.tool_calls_failed_by_link += other.tool_calls_failed_by_link;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_bucket_bounds_and_the_mean_is_exact() {
        let mut s = LinkStats::default();
        assert_eq!(s.hop_quantile(0.5), None);
        for us in [40, 90, 90, 180, 900] {
            s.record_hop(Duration::from_micros(us));
        }
        assert_eq!(s.hops, 5);
        assert_eq!(s.hop_mean(), Some(Duration::from_micros(260)));
        assert_eq!(s.hop_quantile(0.5), Some(Duration::from_micros(100)));
        assert_eq!(s.hop_quantile(0.99), Some(Duration::from_micros(1_000)));
        assert_eq!(s.hop_quantile(0.0), Some(Duration::from_micros(50)));
        s.record_hop(Duration::from_millis(250));
        assert_eq!(s.hop_max_us, 250_000);
        assert_eq!(s.hop_quantile(1.0), Some(Duration::from_millis(250)));
        let mut all = LinkStats::default();
        all.merge(&s);
        all.merge(&s);
        assert_eq!(all.hops, 12);
        assert_eq!(all.hop_buckets[1], 4);
    }
}
