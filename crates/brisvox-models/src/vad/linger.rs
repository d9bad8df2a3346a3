//! When a VAD batch job waits for more windows before it runs (sans-IO).
//!
//! Real calls are not synchronised, so under moderate load the service's pool
//! sees windows one by one and runs each alone: a model run has a fixed cost
//! (tens of microseconds hot, several hundred after the caches went cold) that a
//! lone row pays in full. [`Linger::Adaptive`] lets a job that starts with a small
//! batch wait a little so that windows arriving meanwhile share its run, but only
//! when the recent arrivals say the wait will gather at least [`MIN_COMPANY`]
//! more windows:
//!
//! - the service counts the **streams active** over the last
//!   [`ACTIVITY_SPAN`] (each stream once however many windows it sent:
//!   [`ActiveStreams`]); every active stream sends one window per 32 ms, so the
//!   streams not already waiting send `(active - waiting) * wait / 32 ms`
//!   windows during a wait;
//! - a job waits only if that is at least [`MIN_COMPANY`] (two: one more row
//!   barely pays for the longer idle between runs, whose colder caches cost
//!   about what the shared run saves), and never past the moment its
//!   oldest window is `max` old, so no window waits longer than `max` for
//!   company; a full batch ([`super::service::VadServiceConfig::max_batch`]) runs
//!   at once;
//! - a call alone (or a handful) never waits: one stream gives 0 others.
//!
//! The wait delays a window's probability by at most `max` (4 ms by default),
//! which lands on barge-in and end-of-speech detection whose own thresholds are
//! hundreds of milliseconds. Batching changes which graph scores a window (a
//! lone row runs the shipped graph, a batch the folded one), which moves a
//! probability by at most [`super::silero::FOLDED_TOLERANCE`]; the service already
//! batched whatever happened to wait, so this is no new kind of difference.
//!
//! Times are given as `Duration`s since an origin the caller picks (the
//! service's start), so the rules are tested without a clock.

use std::time::Duration;

/// How far back the service looks for active streams (two windows: a call's
/// windows arrive in its transport's packets, 20 ms apart, so one 32 ms span
/// can miss a stream that is still sending).
pub const ACTIVITY_SPAN: Duration = Duration::from_millis(64);

/// Audio time of one window: every active stream sends one window per this.
const WINDOW_PERIOD: Duration = Duration::from_millis(32);

/// Windows a wait must be expected to gather for [`Linger::Adaptive`] to wait.
pub const MIN_COMPANY: f64 = 2.0;

/// The default bound of [`Linger::Adaptive`].
pub const DEFAULT_MAX_LINGER: Duration = Duration::from_millis(4);

/// Whether and how long a batch job that starts with a small batch waits for more
/// windows (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linger {
    /// Never wait: a job runs what is waiting at once.
    Off,
    /// Always wait until the oldest waiting window is this old (unless a full
    /// batch waits), even for a call alone.
    Fixed(Duration),
    /// Wait, until the oldest waiting window is at most this old, only when the
    /// streams active lately will send at least [`MIN_COMPANY`] more windows
    /// meanwhile.
    Adaptive(Duration),
}

impl Default for Linger {
    /// [`Linger::Adaptive`] up to [`DEFAULT_MAX_LINGER`].
    fn default() -> Self {
        Linger::Adaptive(DEFAULT_MAX_LINGER)
    }
}

impl Linger {
    /// The longest a window can wait for company under this policy.
    pub fn max(self) -> Duration {
        match self {
            Linger::Off => Duration::ZERO,
            Linger::Fixed(d) | Linger::Adaptive(d) => d,
        }
    }

    /// How long a job starting at `now` waits: `waiting` windows queued, the
    /// oldest submitted at `oldest`, `active` streams seen over the last
    /// [`ACTIVITY_SPAN`] ([`ActiveStreams::estimate`]).
    pub fn wait(
        self,
        now: Duration,
        oldest: Duration,
        waiting: usize,
        max_batch: usize,
        active: f64,
    ) -> Duration {
        if waiting == 0 || waiting >= max_batch {
            return Duration::ZERO;
        }
        // Saturating and clamped: a bound as large as `Duration::MAX` must not
        // panic inside the job (the pool would never schedule another), and a
        // clock that stepped back must not stretch the wait past the bound.
        let left = oldest
            .saturating_add(self.max())
            .saturating_sub(now)
            .min(self.max());
        match self {
            Linger::Off => Duration::ZERO,
            Linger::Fixed(_) => left,
            Linger::Adaptive(_) => {
                let others = (active - waiting as f64).max(0.0);
                let expected = others * left.as_secs_f64() / WINDOW_PERIOD.as_secs_f64();
                if expected >= MIN_COMPANY {
                    left
                } else {
                    Duration::ZERO
                }
            }
        }
    }
}

/// Counts the streams that sent a window lately, each once per span of
/// [`ACTIVITY_SPAN`] (the current span and the one before). No allocation; each
/// stream keeps one mark ([`note`](Self::note)).
#[derive(Debug, Clone, Default)]
pub struct ActiveStreams {
    /// The span `current` counts (numbered from 1; 0 before any window).
    span: u64,
    current: u32,
    previous: u32,
}

impl ActiveStreams {
    fn span_of(at: Duration) -> u64 {
        (at.as_nanos() / ACTIVITY_SPAN.as_nanos()) as u64 + 1
    }

    /// A window of one stream at `at`; `mark` is that stream's own mark (0 for a
    /// new stream), updated so the stream counts once per span.
    pub fn note(&mut self, at: Duration, mark: &mut u64) {
        // A window stamped before the current span (stamps may reach the
        // counter slightly out of order) counts in the current span.
        let span = Self::span_of(at).max(self.span);
        if span > self.span {
            self.previous = if span == self.span + 1 {
                self.current
            } else {
                0
            };
            self.current = 0;
            self.span = span;
        }
        if *mark < span {
            *mark = span;
            self.current += 1;
        }
    }

    /// Streams active lately as seen at `at`: the larger of the streams of the
    /// last whole span and those of the current one so far (a stream that
    /// stopped counts for at most two spans).
    pub fn estimate(&self, at: Duration) -> f64 {
        let span = Self::span_of(at);
        let count = if span == self.span {
            self.previous.max(self.current)
        } else if span == self.span + 1 {
            self.current
        } else {
            0
        };
        f64::from(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// `streams` streams each sending one window per 32 ms, evenly spread, for
    /// `windows` windows each; returns the counter and the time of the last.
    fn paced(streams: u64, windows: u64) -> (ActiveStreams, Duration) {
        let mut active = ActiveStreams::default();
        let mut marks = vec![0u64; streams as usize];
        let mut last = Duration::ZERO;
        for k in 0..windows {
            for (s, mark) in marks.iter_mut().enumerate() {
                last = WINDOW_PERIOD * k as u32 + WINDOW_PERIOD * s as u32 / streams as u32;
                active.note(last, mark);
            }
        }
        (active, last)
    }

    #[test]
    fn paced_streams_are_counted_once_each() {
        for n in [1, 10, 100, 500] {
            let (active, last) = paced(n, 20);
            assert_eq!(active.estimate(last), n as f64);
            // Early in a span, the last whole span still counts them all.
            assert_eq!(active.estimate(last + WINDOW_PERIOD), n as f64);
        }
    }

    #[test]
    fn a_burst_of_one_stream_counts_as_one() {
        let mut active = ActiveStreams::default();
        let mut mark = 0;
        for i in 0..10u32 {
            active.note(Duration::from_micros(100 + u64::from(i)), &mut mark);
        }
        assert_eq!(active.estimate(Duration::from_micros(200)), 1.0);
    }

    #[test]
    fn streams_that_stopped_fade_out_within_two_spans() {
        let (active, last) = paced(100, 20);
        assert!(active.estimate(last + ACTIVITY_SPAN / 2) > 40.0);
        assert_eq!(active.estimate(last + 2 * ACTIVITY_SPAN), 0.0);
        assert_eq!(active.estimate(last + 10 * ACTIVITY_SPAN), 0.0);
    }

    #[test]
    fn a_call_alone_never_waits() {
        let linger = Linger::default();
        let (active, last) = paced(1, 50);
        assert_eq!(
            linger.wait(last, last, 1, 128, active.estimate(last)),
            Duration::ZERO
        );
        // Even with a long bound, one stream has no other stream to wait for.
        let long = Linger::Adaptive(Duration::from_secs(1));
        assert_eq!(long.wait(last, last, 1, 128, 1.0), Duration::ZERO);
    }

    #[test]
    fn many_streams_wait_until_the_oldest_is_max_old() {
        let linger = Linger::Adaptive(4 * MS);
        let now = 1000 * MS;
        // 100 streams: 99 others send ~12 windows in 4 ms.
        assert_eq!(linger.wait(now, now, 1, 128, 100.0), 4 * MS);
        // The oldest waited 1 ms already: 3 ms left.
        assert_eq!(linger.wait(now, now - MS, 1, 128, 100.0), 3 * MS);
        // Already max old, or older: no wait.
        assert_eq!(
            linger.wait(now, now - 4 * MS, 1, 128, 100.0),
            Duration::ZERO
        );
        assert_eq!(
            linger.wait(now, now - 9 * MS, 1, 128, 100.0),
            Duration::ZERO
        );
    }

    #[test]
    fn the_wait_needs_two_more_windows_expected() {
        let linger = Linger::Adaptive(4 * MS);
        let now = 1000 * MS;
        // 4 ms of 32: 16 other streams give two windows, 15 do not.
        assert_eq!(linger.wait(now, now, 1, 128, 17.0), 4 * MS);
        assert_eq!(linger.wait(now, now, 1, 128, 16.0), Duration::ZERO);
        // Streams already waiting send nothing more meanwhile.
        assert_eq!(linger.wait(now, now, 5, 128, 20.0), Duration::ZERO);
        // Less time left, fewer windows expected.
        assert_eq!(linger.wait(now, now - 2 * MS, 1, 128, 20.0), Duration::ZERO);
        assert_eq!(linger.wait(now, now - 2 * MS, 1, 128, 40.0), 2 * MS);
    }

    #[test]
    fn a_full_batch_or_an_empty_queue_runs_at_once() {
        for linger in [Linger::Adaptive(4 * MS), Linger::Fixed(4 * MS)] {
            let now = 1000 * MS;
            assert_eq!(linger.wait(now, now, 128, 128, 500.0), Duration::ZERO);
            assert_eq!(linger.wait(now, now, 0, 128, 500.0), Duration::ZERO);
        }
    }

    #[test]
    fn fixed_waits_even_alone_and_off_never_waits() {
        let now = 1000 * MS;
        assert_eq!(Linger::Fixed(4 * MS).wait(now, now, 1, 128, 1.0), 4 * MS);
        assert_eq!(Linger::Off.wait(now, now, 1, 128, 500.0), Duration::ZERO);
        assert_eq!(Linger::Off.max(), Duration::ZERO);
        assert_eq!(Linger::default().max(), DEFAULT_MAX_LINGER);
    }

    #[test]
    fn a_huge_bound_or_a_clock_stepping_back_stays_within_the_bound() {
        let now = 1000 * MS;
        // No overflow panic: the job would never end and the pool would stall.
        assert_eq!(
            Linger::Fixed(Duration::MAX).wait(now, now, 1, 128, 1.0),
            Duration::MAX - now
        );
        assert_eq!(
            Linger::Adaptive(Duration::MAX).wait(now, now, 1, 128, 500.0),
            Duration::MAX - now
        );
        // The oldest window stamped after `now` (a clock that stepped back):
        // never more than the bound.
        assert_eq!(
            Linger::Fixed(4 * MS).wait(now, now + 10 * MS, 1, 128, 1.0),
            4 * MS
        );
    }

    #[test]
    fn a_late_stamp_from_the_span_before_counts_once() {
        let mut active = ActiveStreams::default();
        let (mut a, mut b) = (0, 0);
        // b's window of the new span reaches the counter before a's stamp of
        // the span before (stamps read outside the lock may arrive out of order).
        active.note(ACTIVITY_SPAN + MS, &mut b);
        active.note(ACTIVITY_SPAN - MS, &mut a);
        // a's next window, in the same (new) span, must not count it again.
        active.note(ACTIVITY_SPAN + 2 * MS, &mut a);
        assert_eq!(active.estimate(ACTIVITY_SPAN + 3 * MS), 2.0);
    }
}
