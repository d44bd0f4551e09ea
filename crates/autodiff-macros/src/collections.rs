//! Hash sets and maps with a fast, fixed hash.
//!
//! The analyses and the lowering keep their locals in sets and maps of names, and look
//! names up in them for every operand: in a user's debug build, where the macro itself
//! runs unoptimised, the standard library's SipHash was a tenth of the expansion time.
//! These tables hash with a multiply-and-rotate (the "Fx" hash of rustc), which is not
//! resistant to collisions chosen by an adversary, and needs not be: the keys are the
//! names in one function.

use std::hash::{BuildHasherDefault, Hasher};

/// `std::collections::HashSet` with the fast hash.
pub type HashSet<T> = std::collections::HashSet<T, BuildHasherDefault<FxHasher>>;

/// `std::collections::HashMap` with the fast hash.
pub type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The Fx hash: each word is mixed into the state by a rotate, an xor and a multiply.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // The tail's length in the free top byte: `ab` and `ab\0` hash apart.
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            last[7] = rest.len() as u8;
            self.add(u64::from_le_bytes(last));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_of_names_behave_as_sets() {
        let mut s: HashSet<String> = HashSet::default();
        for n in [
            "x",
            "__ad12_t",
            "__ad12_t",
            "x",
            "a_longer_name_than_eight_bytes",
        ] {
            s.insert(n.to_string());
        }
        assert_eq!(s.len(), 3);
        assert!(s.contains("__ad12_t") && !s.contains("__ad12"));
    }

    #[test]
    fn names_differing_in_the_tail_hash_apart() {
        let h = |s: &str| {
            let mut f = FxHasher::default();
            f.write(s.as_bytes());
            f.finish()
        };
        assert_ne!(h("__ad_keep___ad16_t"), h("__ad_keep___ad17_t"));
        assert_ne!(h("ab"), h("ab\0"));
        assert_ne!(h("abcdefgh"), h("abcdefgh\0"));
    }
}
