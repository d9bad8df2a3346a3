//! [`Dice`]: the seeded draws of the faulty links (which datagram the lossy
//! UDP link drops, how long the faulty TCP link holds a chunk, where a test
//! cuts a stream). The same seed gives the same draws on every platform.

/// A seeded xorshift64.
#[derive(Debug, Clone)]
pub struct Dice {
    state: u64,
    loss_percent: u64,
}

impl Dice {
    /// Drops `loss_percent` % of the datagrams (0 to 100), in an order fixed by `seed`.
    pub fn new(seed: u64, loss_percent: u8) -> Self {
        Dice {
            // xorshift's one fixed point is 0.
            state: seed.max(1),
            loss_percent: u64::from(loss_percent.min(100)),
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// Whether the next datagram drops.
    pub fn drops(&mut self) -> bool {
        self.next() % 100 < self.loss_percent
    }

    /// The next draw from 0 to `n - 1` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next().checked_rem(n).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dice_drop_the_share_asked_for_in_a_seeded_order() {
        let draws = |seed| {
            let mut d = Dice::new(seed, 5);
            (0..10_000).map(|_| d.drops()).collect::<Vec<_>>()
        };
        let a = draws(7);
        assert_eq!(a, draws(7));
        assert_ne!(a, draws(8));
        let dropped = a.iter().filter(|&&d| d).count();
        assert!((400..600).contains(&dropped), "{dropped} of 10000");
        let mut none = Dice::new(7, 0);
        assert!((0..1000).all(|_| !none.drops()));
    }

    #[test]
    fn draws_below_n_stay_below_and_follow_the_seed() {
        let draws = |seed| {
            let mut d = Dice::new(seed, 0);
            (0..1000).map(|_| d.below(10)).collect::<Vec<_>>()
        };
        let a = draws(3);
        assert_eq!(a, draws(3));
        assert!(a.iter().all(|&x| x < 10));
        assert!((0..10).all(|v| a.contains(&v)), "every value drawn");
        assert_eq!(Dice::new(3, 0).below(0), 0);
    }
}
