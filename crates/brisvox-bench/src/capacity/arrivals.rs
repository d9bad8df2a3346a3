//! How a step's calls arrive (`--arrivals`).
//!
//! - `aligned` (the default): slot i of a step of N starts at `spread · i / N`
//!   and every call plays its fixture from the start, so the calls' ends of
//!   turn fall close together, round after round.
//! - `poisson`: the slots start as a Poisson process of rate `N / spread`
//!   (exponential gaps, mean `spread / N`, the first at 0), and every call
//!   plays a fixture drawn from `--fixtures` from a random point of silence in
//!   it (between two utterances, or before the first), so ends of turn are not
//!   synchronised across calls or rounds. The draws come from `--seed` and the
//!   step number: a run is reproducible.
//!
//! With `--admitted-only`, a slot whose call was refused redials after a
//! random pause ([`redial_pause`]: uniform between half and one and a half
//! of its fixture's length, drawn per slot from `--seed`), as callers redial
//! after a while of their own rather than all together.
//!
//! Sans-IO: this module draws the plan; `run_step` follows it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::v2v::client::PreparedFixture;
use crate::v2v::schedule;

/// `--arrivals`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrivals {
    Aligned,
    Poisson,
}

impl Arrivals {
    pub(crate) fn parse(v: &str) -> Result<Self, String> {
        match v {
            "aligned" => Ok(Self::Aligned),
            "poisson" => Ok(Self::Poisson),
            other => Err(format!(
                "--arrivals must be aligned or poisson, not {other:?}"
            )),
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Aligned => "aligned",
            Self::Poisson => "poisson",
        }
    }
}

/// A call of the plan: which fixture, from which 20 ms frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CallStart {
    pub(crate) fixture: usize,
    pub(crate) frame: usize,
}

/// One slot: when it starts (ms after the step began) and its calls in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SlotPlan {
    pub(crate) start_ms: u64,
    pub(crate) calls: Vec<CallStart>,
}

/// A small seeded generator (SplitMix64): reproducible draws, no dependency.
#[derive(Debug, Clone)]
pub(crate) struct Draws(u64);

impl Draws {
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        Self(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n - 1)
    }

    /// Exponential with the given mean.
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

/// Keeps the redial draws apart from the plans' ([`Draws::new`] of the same
/// seed and a step number).
const REDIAL_SEED: u64 = 0x7265_6469_616c_0001;

/// The draws of one slot's redial pauses in step `step`.
pub(crate) fn redial_draws(seed: u64, step: usize, slot: usize) -> Draws {
    Draws::new(seed ^ REDIAL_SEED, ((step as u64) << 32) | slot as u64)
}

/// How long a refused caller waits before it dials again: uniform between
/// half and one and a half of `around`.
pub(crate) fn redial_pause(draws: &mut Draws, around: Duration) -> Duration {
    around.mul_f64(0.5 + draws.unit())
}

/// The frames a call of `fx` may start at: each 20 ms frame that begins in
/// silence (outside every utterance, at least `lead_ms` before the next one)
/// and leaves at least one utterance to play. Frame 0 is always one.
pub(crate) fn quiet_starts(fx: &PreparedFixture, lead_ms: u64) -> Vec<usize> {
    let frame_us = 20_000u64;
    let lead_us = lead_ms * 1000;
    let mut out = vec![0];
    let mut gap_start_us = 0u64;
    for span in &fx.spans {
        let last_ok = span.start_us.saturating_sub(lead_us);
        let first = gap_start_us.div_ceil(frame_us).max(1);
        let mut f = first;
        while f * frame_us <= last_ok {
            out.push(f as usize);
            f += 1;
        }
        gap_start_us = gap_start_us.max(span.end_us);
    }
    out
}

/// `fx` from frame `frame` on: the frames, the audio and the utterances
/// after that point, on a clock that starts there.
pub(crate) fn starting_at(fx: &PreparedFixture, frame: usize) -> PreparedFixture {
    let rate = fx.fixture.sidecar.sample_rate_hz;
    let skip_samples = (frame * schedule::frame_samples(rate)).min(fx.fixture.samples.len());
    let skip_us = frame as u64 * 20_000;
    let skip_ms = skip_us as f64 / 1000.0;
    let mut fixture = fx.fixture.clone();
    fixture.samples.drain(..skip_samples);
    fixture.sidecar.utterances.retain(|u| u.start_ms >= skip_ms);
    for u in &mut fixture.sidecar.utterances {
        u.start_ms -= skip_ms;
        u.end_ms -= skip_ms;
    }
    fixture.sidecar.name = format!("{}@{}ms", fixture.sidecar.name, skip_us / 1000);
    let spans = fx
        .spans
        .iter()
        .filter(|s| s.start_us >= skip_us)
        .map(|s| crate::v2v::turns::Span {
            start_us: s.start_us - skip_us,
            end_us: s.end_us - skip_us,
        })
        .collect();
    PreparedFixture {
        fixture,
        frames: fx.frames.get(frame..).unwrap_or_default().to_vec(),
        silence: fx.silence.clone(),
        spans,
    }
}

/// The plan of a step of `n` slots, `rounds` calls each.
pub(crate) fn plan(
    arrivals: Arrivals,
    n: usize,
    rounds: usize,
    spread_ms: u64,
    starts: &[Vec<usize>],
    draws: &mut Draws,
) -> Vec<SlotPlan> {
    let n = n.max(1);
    let mut t_ms = 0.0f64;
    (0..n)
        .map(|slot| {
            let start_ms = match arrivals {
                Arrivals::Aligned => spread_ms * slot as u64 / n as u64,
                Arrivals::Poisson => {
                    if slot > 0 {
                        t_ms += draws.exponential(spread_ms as f64 / n as f64);
                    }
                    t_ms.round() as u64
                }
            };
            let calls = (0..rounds)
                .map(|_| match arrivals {
                    Arrivals::Aligned => CallStart {
                        fixture: 0,
                        frame: 0,
                    },
                    Arrivals::Poisson => {
                        let fixture = draws.below(starts.len());
                        let frame = starts[fixture][draws.below(starts[fixture].len())];
                        CallStart { fixture, frame }
                    }
                })
                .collect();
            SlotPlan { start_ms, calls }
        })
        .collect()
}

/// The prepared fixtures of a plan's calls, each cut once however many calls
/// start there.
pub(crate) fn cut_all(
    fixtures: &[Arc<PreparedFixture>],
    plan: &[SlotPlan],
) -> HashMap<CallStart, Arc<PreparedFixture>> {
    let mut cut = HashMap::new();
    for c in plan.iter().flat_map(|s| &s.calls) {
        cut.entry(*c).or_insert_with(|| {
            if c.frame == 0 {
                fixtures[c.fixture].clone()
            } else {
                Arc::new(starting_at(&fixtures[c.fixture], c.frame))
            }
        });
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2v::fixture::{Fixture, Sidecar, Utterance};

    /// 4 s at 16 kHz; utterances 0.5-1.5 s and 2.5-3.2 s.
    fn fixture() -> PreparedFixture {
        let samples: Vec<i16> = (0..64_000).map(|i| (i % 100) as i16).collect();
        let utterance = |start_ms, end_ms| Utterance {
            start_ms,
            end_ms,
            language: "en".into(),
        };
        let sidecar = Sidecar {
            name: "two".into(),
            sample_rate_hz: 16_000,
            utterances: vec![utterance(500.0, 1500.0), utterance(2500.0, 3200.0)],
        };
        PreparedFixture::new(Fixture { sidecar, samples })
    }

    #[test]
    fn quiet_starts_lie_in_silence_and_leave_an_utterance() {
        let fx = fixture();
        let starts = quiet_starts(&fx, 200);
        assert_eq!(starts[0], 0);
        for &f in &starts {
            let t = f as u64 * 20_000;
            assert!(
                fx.spans.iter().all(|s| t < s.start_us || t >= s.end_us),
                "frame {f} starts inside an utterance"
            );
            assert!(fx.spans.iter().any(|s| s.start_us >= t + 200_000));
        }
        // Before the first utterance: frames 1..=15 (0.3 s is 200 ms before it);
        // between them: 1.5 s to 2.3 s, frames 75..=115; none after the last.
        assert!(starts.contains(&15) && !starts.contains(&16));
        assert!(starts.contains(&75) && starts.contains(&115) && !starts.contains(&116));
        assert!(!starts.contains(&74));
        assert_eq!(starts.len(), 1 + 15 + 41);
    }

    #[test]
    fn a_cut_fixture_keeps_what_follows_on_its_own_clock() {
        let fx = fixture();
        let cut = starting_at(&fx, 100); // 2.0 s
        assert_eq!(cut.spans.len(), 1);
        assert_eq!(cut.spans[0].start_us, 500_000);
        assert_eq!(cut.spans[0].end_us, 1_200_000);
        assert_eq!(cut.fixture.sidecar.utterances.len(), 1);
        assert_eq!(cut.fixture.sidecar.utterances[0].start_ms, 500.0);
        assert_eq!(cut.frames.len(), fx.frames.len() - 100);
        assert_eq!(cut.frames[0], fx.frames[100]);
        assert_eq!(cut.fixture.samples.len(), 64_000 - 32_000);
        assert_eq!(cut.fixture.sidecar.name, "two@2000ms");
    }

    #[test]
    fn aligned_plans_are_today_s_ramp() {
        let starts = vec![vec![0, 5]];
        let p = plan(
            Arrivals::Aligned,
            4,
            2,
            4000,
            &starts,
            &mut Draws::new(1, 0),
        );
        let at: Vec<u64> = p.iter().map(|s| s.start_ms).collect();
        assert_eq!(at, vec![0, 1000, 2000, 3000]);
        assert!(
            p.iter()
                .flat_map(|s| &s.calls)
                .all(|c| c.frame == 0 && c.fixture == 0)
        );
    }

    #[test]
    fn poisson_plans_are_seeded_spread_and_mixed() {
        let starts = vec![vec![0, 10, 20, 30], vec![0, 7]];
        let draw = |seed| {
            plan(
                Arrivals::Poisson,
                400,
                3,
                4000,
                &starts,
                &mut Draws::new(seed, 2),
            )
        };
        let p = draw(7);
        assert_eq!(p, draw(7), "the same seed, the same plan");
        assert_ne!(p, draw(8));
        let at: Vec<u64> = p.iter().map(|s| s.start_ms).collect();
        assert_eq!(at[0], 0);
        assert!(at.windows(2).all(|w| w[0] <= w[1]));
        // 399 gaps of mean 10 ms: the last arrival near 3990 ms (5 sigma: +-1000).
        assert!(
            (2990..=4990).contains(&at[399]),
            "last arrival at {}",
            at[399]
        );
        let calls: Vec<CallStart> = p.iter().flat_map(|s| s.calls.clone()).collect();
        assert_eq!(calls.len(), 1200);
        for (fixture, frames) in starts.iter().enumerate() {
            let of_it: Vec<_> = calls.iter().filter(|c| c.fixture == fixture).collect();
            assert!(
                of_it.len() > 450,
                "fixture {fixture} drawn {} times",
                of_it.len()
            );
            for f in frames {
                assert!(of_it.iter().any(|c| c.frame == *f), "start {f} never drawn");
            }
            assert!(of_it.iter().all(|c| frames.contains(&c.frame)));
        }
    }

    #[test]
    fn each_start_is_cut_once() {
        let fx = Arc::new(fixture());
        let p = plan(
            Arrivals::Poisson,
            50,
            2,
            1000,
            &[quiet_starts(&fx, 200)],
            &mut Draws::new(3, 0),
        );
        let cut = cut_all(std::slice::from_ref(&fx), &p);
        for c in p.iter().flat_map(|s| &s.calls) {
            assert_eq!(cut[c].spans.len(), if c.frame < 75 { 2 } else { 1 });
        }
        assert!(cut.len() <= 57);
    }

    #[test]
    fn refused_callers_redial_after_seeded_pauses_spread_around_the_fixture() {
        let around = Duration::from_millis(7100);
        let pauses = |seed, slot| -> Vec<Duration> {
            let mut d = redial_draws(seed, 0, slot);
            (0..400).map(|_| redial_pause(&mut d, around)).collect()
        };
        let p = pauses(1, 3);
        assert_eq!(p, pauses(1, 3), "the same seed and slot, the same pauses");
        assert_ne!(p, pauses(1, 4), "each slot its own");
        assert_ne!(p, pauses(2, 3));
        let (lo, hi) = (around / 2, around * 3 / 2);
        assert!(p.iter().all(|&x| lo <= x && x < hi), "within 0.5-1.5x");
        let mean = p.iter().sum::<Duration>().as_secs_f64() / p.len() as f64;
        // Uniform over 7.1 s: sd of the mean of 400 is 0.1 s.
        assert!((mean - 7.1).abs() < 0.5, "mean {mean}");
        let below = p.iter().filter(|&&x| x < around).count();
        assert!(
            (150..=250).contains(&below),
            "{below} of 400 under the fixture"
        );
    }

    #[test]
    fn unknown_arrivals_are_refused_by_name() {
        assert_eq!(Arrivals::parse("poisson"), Ok(Arrivals::Poisson));
        assert!(Arrivals::parse("bursty").unwrap_err().contains("bursty"));
    }
}
