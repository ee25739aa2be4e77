//! A small seeded generator (SplitMix64) for the peers' own draws: job lengths, the gaps
//! between attempts, the random part of tokens.
//!
//! Terminology:
//! - *stream*: one generator per replica and purpose, seeded from the run's seed and a
//!   stream number, so one replica's draws never shift another's.

/// SplitMix64: a 64-bit state, one multiply-xorshift per draw.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator of `stream` of the run `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `min..=max`.
    pub fn range(&mut self, min: u64, max: u64) -> u64 {
        debug_assert!(min <= max);
        min + self.next_u64() % (max - min + 1)
    }

    /// True with probability `p`.
    pub fn coin(&mut self, p: f64) -> bool {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        unit < p
    }
}
