//! A stable, seedless 64-bit hash for traces.
//!
//! `std`'s `DefaultHasher` is only stable within one build and `RandomState` is seeded from
//! the OS; neither may reach a trace. This hasher has fixed constants, so the same events give
//! the same hash in every process on every run.

use std::hash::{Hash, Hasher};

const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Folds one word into a running hash.
#[inline]
pub fn mix(state: u64, word: u64) -> u64 {
    let folded = (state.rotate_left(23) ^ word).wrapping_mul(MULTIPLIER);
    folded ^ (folded >> 29)
}

/// A `Hasher` with fixed constants, for `#[derive(Hash)]` event types.
#[derive(Clone, Copy, Debug, Default)]
pub struct StableHasher {
    state: u64,
}

impl StableHasher {
    pub fn new() -> StableHasher {
        StableHasher {
            state: 0x243F_6A88_85A3_08D3,
        }
    }
}

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        mix(self.state, 0xFF)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("chunks_exact yields 8 bytes"));
            self.state = mix(self.state, word);
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.state = mix(
            self.state,
            u64::from_le_bytes(tail) ^ ((rest.len() as u64) << 56),
        );
    }

    fn write_u64(&mut self, value: u64) {
        self.state = mix(self.state, value);
    }

    fn write_u32(&mut self, value: u32) {
        self.state = mix(self.state, u64::from(value));
    }

    fn write_u16(&mut self, value: u16) {
        // Same value as `write(&value.to_le_bytes())` (2 bytes, tail-length tag), without the
        // byte-slice path and its `memcpy`.
        self.state = mix(self.state, u64::from(value) ^ (2 << 56));
    }

    fn write_u8(&mut self, value: u8) {
        self.state = mix(self.state, u64::from(value));
    }

    fn write_usize(&mut self, value: usize) {
        self.state = mix(self.state, value as u64);
    }
}

/// The stable hash of one value.
pub fn stable_hash<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut hasher = StableHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_hash_equal_and_order_matters() {
        assert_eq!(stable_hash(&("renew", 7u64)), stable_hash(&("renew", 7u64)));
        assert_ne!(stable_hash(&[1u64, 2]), stable_hash(&[2u64, 1]));
        assert_ne!(stable_hash("ab"), stable_hash("ba"));
    }

    #[test]
    fn write_u16_matches_the_byte_path() {
        for value in [0u16, 1, 2, 0xff, 0x1234, u16::MAX] {
            let (mut fast, mut bytes) = (StableHasher::new(), StableHasher::new());
            fast.write_u16(value);
            bytes.write(&value.to_le_bytes());
            assert_eq!(fast.finish(), bytes.finish());
        }
    }

    #[test]
    fn hash_is_a_fixed_function() {
        // Pinned values: trace hashes printed by one build must mean the same in the next.
        assert_eq!(stable_hash(&42u64), 2_448_560_227_772_415_647);
        assert_eq!(stable_hash("renew"), 5_926_034_259_542_718_532);
    }
}
