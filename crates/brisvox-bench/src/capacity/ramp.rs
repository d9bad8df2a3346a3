//! The ramp and the bisection, sans-IO: which step size to run next given the
//! verdicts so far. Steps of the ramp run in order while they pass; after the
//! first failing step the interval between the largest passing size and the
//! smallest failing one is halved until it is at most `resolution` wide. A
//! generator-limited step ends the search with a lower bound.

/// What a step showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepOutcome {
    /// Within the SLO, nothing failed or lost.
    Pass,
    /// The server did not hold the load.
    Fail,
    /// The load generator itself fell behind; the step says nothing about the server.
    GeneratorLimited,
}

/// The search state.
#[derive(Debug, Clone)]
pub(crate) struct Ramp {
    steps: Vec<usize>,
    next_index: usize,
    resolution: usize,
    largest_pass: Option<usize>,
    smallest_fail: Option<usize>,
    generator_limited_at: Option<usize>,
}

impl Ramp {
    /// A ramp over `steps` (sorted, deduplicated here), bisected to `resolution` calls.
    pub(crate) fn new(mut steps: Vec<usize>, resolution: usize) -> Ramp {
        steps.retain(|&n| n > 0);
        steps.sort_unstable();
        steps.dedup();
        Ramp {
            steps,
            next_index: 0,
            resolution: resolution.max(1),
            largest_pass: None,
            smallest_fail: None,
            generator_limited_at: None,
        }
    }

    /// The next step size, or `None` when the search is over.
    pub(crate) fn next_step(&self) -> Option<usize> {
        if self.generator_limited_at.is_some() {
            return None;
        }
        match self.smallest_fail {
            None => self.steps.get(self.next_index).copied(),
            Some(fail) => {
                let pass = self.largest_pass.unwrap_or(0);
                (fail - pass > self.resolution).then(|| pass + (fail - pass) / 2)
            }
        }
    }

    /// Records the outcome of a step of `n` calls.
    pub(crate) fn record(&mut self, n: usize, outcome: StepOutcome) {
        match outcome {
            StepOutcome::Pass => {
                self.largest_pass = Some(self.largest_pass.map_or(n, |p| p.max(n)));
                if self.smallest_fail.is_none() {
                    self.next_index += 1;
                }
            }
            StepOutcome::Fail => {
                self.smallest_fail = Some(self.smallest_fail.map_or(n, |f| f.min(n)));
            }
            StepOutcome::GeneratorLimited => self.generator_limited_at = Some(n),
        }
    }

    /// Largest size that passed.
    pub(crate) fn largest_pass(&self) -> Option<usize> {
        self.largest_pass
    }

    /// Smallest size that failed.
    pub(crate) fn smallest_fail(&self) -> Option<usize> {
        self.smallest_fail
    }

    /// The size at which the generator was the limit, if it was.
    pub(crate) fn generator_limited_at(&self) -> Option<usize> {
        self.generator_limited_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(steps: Vec<usize>, resolution: usize, capacity: usize) -> (Vec<usize>, Ramp) {
        let mut ramp = Ramp::new(steps, resolution);
        let mut ran = Vec::new();
        while let Some(n) = ramp.next_step() {
            ran.push(n);
            assert!(ran.len() < 100, "the search ends");
            let o = if n <= capacity {
                StepOutcome::Pass
            } else {
                StepOutcome::Fail
            };
            ramp.record(n, o);
        }
        (ran, ramp)
    }

    #[test]
    fn ramps_then_bisects_to_the_resolution() {
        let (ran, ramp) = drive(vec![1, 2, 4, 8, 16, 32], 1, 11);
        assert_eq!(ran, vec![1, 2, 4, 8, 16, 12, 10, 11]);
        assert_eq!(ramp.largest_pass(), Some(11));
        assert_eq!(ramp.smallest_fail(), Some(12));
    }

    #[test]
    fn a_coarse_resolution_stops_early() {
        let (ran, ramp) = drive(vec![1, 2, 4, 8, 16, 32], 4, 11);
        assert_eq!(ran, vec![1, 2, 4, 8, 16, 12]);
        assert_eq!(
            (ramp.largest_pass(), ramp.smallest_fail()),
            (Some(8), Some(12))
        );
    }

    #[test]
    fn every_step_passing_ends_the_ramp_without_a_failure() {
        let (ran, ramp) = drive(vec![4, 1, 2, 2], 1, 100);
        assert_eq!(ran, vec![1, 2, 4]);
        assert_eq!((ramp.largest_pass(), ramp.smallest_fail()), (Some(4), None));
    }

    #[test]
    fn the_first_step_failing_bisects_down_from_zero() {
        let (ran, ramp) = drive(vec![8, 16], 1, 2);
        assert_eq!(ran, vec![8, 4, 2, 3]);
        assert_eq!(
            (ramp.largest_pass(), ramp.smallest_fail()),
            (Some(2), Some(3))
        );
    }

    #[test]
    fn a_generator_limited_step_ends_the_search() {
        let mut ramp = Ramp::new(vec![1, 2, 4], 1);
        ramp.record(1, StepOutcome::Pass);
        ramp.record(2, StepOutcome::GeneratorLimited);
        assert_eq!(ramp.next_step(), None);
        assert_eq!(ramp.generator_limited_at(), Some(2));
        assert_eq!(ramp.largest_pass(), Some(1));
    }
}
