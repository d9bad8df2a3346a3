//! Seeded latency distributions.

use std::time::Duration;

/// The longest delay a distribution yields, in milliseconds (a log-normal tail
/// is cut here so one unlucky draw cannot stall a test for hours).
pub const MAX_LATENCY_MS: u64 = 60_000;

/// A delay distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Latency {
    /// Always this many milliseconds.
    Fixed(u64),
    /// `median_ms * exp(sigma * z)` for a standard normal `z`: half the draws
    /// are below `median_ms`; `sigma` (of the log) sets the spread (0.3 is a
    /// p95/p50 ratio of about 1.6).
    LogNormal {
        /// The median, in milliseconds.
        median_ms: f64,
        /// Standard deviation of the natural log of the delay.
        sigma: f64,
    },
}

impl Latency {
    /// A delay drawn from `rng`, rounded to whole milliseconds, at most
    /// [`MAX_LATENCY_MS`]. `Fixed` draws nothing from `rng`.
    pub fn sample(&self, rng: &mut DetRng) -> Duration {
        let ms = match *self {
            Latency::Fixed(ms) => ms,
            Latency::LogNormal { median_ms, sigma } => {
                let ms = median_ms * (sigma * rng.standard_normal()).exp();
                // Saturating float-to-int cast; NaN (a NaN median) becomes 0.
                ms.round().clamp(0.0, MAX_LATENCY_MS as f64) as u64
            }
        };
        Duration::from_millis(ms.min(MAX_LATENCY_MS))
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed(0)
    }
}

/// A small deterministic random generator (SplitMix64) with a Box-Muller normal.
/// The same seed gives the same sequence on every platform.
#[derive(Debug, Clone)]
pub struct DetRng {
    state: u64,
}

impl DetRng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        DetRng { state: seed }
    }

    /// The generator for draws of kind `stream` for item `index` of a mock seeded
    /// with `seed`: independent of every other (stream, index) pair.
    pub fn for_stream(seed: u64, stream: u64, index: u64) -> Self {
        let mut mix = DetRng::new(seed ^ 0x6A09_E667_F3BC_C909);
        let a = mix.next_u64() ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let b = DetRng::new(a).next_u64() ^ index.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        DetRng::new(DetRng::new(b).next_u64())
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in the open interval (0, 1).
    pub fn next_f64(&mut self) -> f64 {
        // 53 random bits, shifted off zero by half a step.
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box-Muller; one of the pair is discarded, so each
    /// draw uses exactly two uniforms).
    pub fn standard_normal(&mut self) -> f64 {
        let u1 = self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_is_exact_and_draws_nothing() {
        let mut rng = DetRng::new(7);
        let before = rng.clone().next_u64();
        assert_eq!(
            Latency::Fixed(150).sample(&mut rng),
            Duration::from_millis(150)
        );
        assert_eq!(rng.next_u64(), before);
    }

    #[test]
    fn uniform_draws_stay_inside_the_open_interval() {
        let mut rng = DetRng::new(1);
        for _ in 0..10_000 {
            let u = rng.next_f64();
            assert!(u > 0.0 && u < 1.0);
        }
    }

    #[test]
    fn streams_differ_by_kind_and_index() {
        let a = DetRng::for_stream(1, 1, 0).next_u64();
        assert_ne!(a, DetRng::for_stream(1, 2, 0).next_u64());
        assert_ne!(a, DetRng::for_stream(1, 1, 1).next_u64());
        assert_ne!(a, DetRng::for_stream(2, 1, 0).next_u64());
        assert_eq!(a, DetRng::for_stream(1, 1, 0).next_u64());
    }
}
