//! Nearest-rank percentiles.

/// Nearest-rank percentile `p` (0 < p <= 100) of `sorted` (ascending): the value
/// at rank `ceil(p/100 · n)`. `None` for an empty slice.
pub(crate) fn nearest_rank(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// p50 / p90 / p99 and the count of a sample, in the unit of the input.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct Summary {
    /// Number of samples.
    pub(crate) n: usize,
    /// Smallest value.
    pub(crate) min: f64,
    /// Nearest-rank p50.
    pub(crate) p50: f64,
    /// Nearest-rank p90.
    pub(crate) p90: f64,
    /// Nearest-rank p95.
    pub(crate) p95: f64,
    /// Nearest-rank p99.
    pub(crate) p99: f64,
    /// Largest value.
    pub(crate) max: f64,
}

/// Summarises an unsorted sample; `None` when empty.
pub(crate) fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Summary {
        n: v.len(),
        min: *v.first()?,
        p50: nearest_rank(&v, 50.0)?,
        p90: nearest_rank(&v, 90.0)?,
        p95: nearest_rank(&v, 95.0)?,
        p99: nearest_rank(&v, 99.0)?,
        max: *v.last()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_picks_an_observed_value() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 50.0), Some(5.0));
        assert_eq!(nearest_rank(&v, 90.0), Some(9.0));
        assert_eq!(nearest_rank(&v, 99.0), Some(10.0));
        assert_eq!(nearest_rank(&v, 100.0), Some(10.0));
        assert_eq!(nearest_rank(&v, 0.1), Some(1.0));
        assert_eq!(nearest_rank(&[], 50.0), None);
    }

    #[test]
    fn four_samples_p50_is_the_second_smallest() {
        let s = summarize(&[805.3, 790.0, 830.0, 787.1]).unwrap();
        assert_eq!(s.p50, 790.0);
        assert_eq!(s.p95, 830.0);
        assert_eq!(s.n, 4);
        assert_eq!(s.min, 787.1);
    }

    #[test]
    fn a_hundred_samples_p99_is_the_99th() {
        let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let s = summarize(&v).unwrap();
        assert_eq!(
            (s.p50, s.p90, s.p95, s.p99, s.max),
            (50.0, 90.0, 95.0, 99.0, 100.0)
        );
    }
}
