//! Seeded instances of the ADBench problems, of any size, in ADBench's own layout.
//!
//! The distributions are those of ADBench's generators: for GMM, `alpha`, `icf` and the
//! points standard normal, the means uniform on `[0, 1)`, `gamma = 1` and `m = 0`; for
//! LSTM, the parameters and the state uniform on `[0, 1)`, and a sequence of bits (ADBench
//! takes the bits of a text's characters; here they are drawn at random). Values are
//! rounded to 6 decimals, as ADBench prints them, so that an instance written with
//! [`crate::adbench::write_gmm`] and read back is the same instance.
//!
//! ```
//! use autodiff_bench::generate::gmm_instance;
//! let a = gmm_instance(10, 25, 10_000, 1);
//! assert_eq!((a.d, a.k, a.n, a.x.len()), (10, 25, 10_000, 100_000));
//! // The same seed gives the same instance.
//! assert_eq!(a.x, gmm_instance(10, 25, 10_000, 1).x);
//! ```

use crate::adbench::{GmmInput, LstmInput};

/// A small deterministic generator (SplitMix64): the same seed gives the same instance
/// on every platform.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on `[0, 1)`.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller; one of the pair is used).
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // in (0, 1]: its logarithm is finite
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    fn uniforms(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| printed(self.uniform())).collect()
    }

    fn normals(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| printed(self.normal())).collect()
    }
}

/// `v` rounded to 6 decimals, the precision ADBench's files are printed with.
fn printed(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// A GMM instance with `d` dimensions, `k` components and `n` points, drawn from `seed`.
///
/// # Panics
/// If `d` or `k` is zero.
pub fn gmm_instance(d: usize, k: usize, n: usize, seed: u64) -> GmmInput {
    assert!(d > 0 && k > 0, "a GMM instance needs d > 0 and k > 0");
    let mut rng = Rng::new(seed);
    let icf_sz = d * (d + 1) / 2;
    let alphas = rng.normals(k);
    let means = rng.uniforms(k * d);
    let icf = rng.normals(k * icf_sz);
    let x = rng.normals(n * d);
    GmmInput {
        d,
        k,
        n,
        alphas,
        means,
        icf,
        x,
        gamma: 1.0,
        m: 0.0,
    }
}

/// An LSTM instance with `l` layers, a sequence of `c` steps and width `b`, drawn from
/// `seed`.
///
/// # Panics
/// If `l` or `b` is zero, or `c < 2` (the loss predicts each step from the one before).
pub fn lstm_instance(l: usize, c: usize, b: usize, seed: u64) -> LstmInput {
    assert!(
        l > 0 && b > 0 && c >= 2,
        "an LSTM instance needs l > 0, b > 0 and c >= 2"
    );
    let mut rng = Rng::new(seed);
    let main = rng.uniforms(2 * l * 4 * b);
    let extra = rng.uniforms(3 * b);
    let state = rng.uniforms(2 * l * b);
    let seq = (0..c * b).map(|_| (rng.next_u64() >> 63) as f64).collect();
    LstmInput {
        l,
        c,
        b,
        main,
        extra,
        state,
        seq,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_have_the_expected_moments() {
        let mut rng = Rng::new(3);
        let n = 200_000;
        let u: Vec<f64> = (0..n).map(|_| rng.uniform()).collect();
        let z: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let var = |v: &[f64]| {
            let m = mean(v);
            v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / v.len() as f64
        };
        // Standard errors at this n are about 0.0007 (uniform mean) and 0.0022 (normal).
        assert!((mean(&u) - 0.5).abs() < 0.005, "{}", mean(&u));
        assert!((var(&u) - 1.0 / 12.0).abs() < 0.002, "{}", var(&u));
        assert!(u.iter().all(|v| (0.0..1.0).contains(v)));
        assert!(mean(&z).abs() < 0.015, "{}", mean(&z));
        assert!((var(&z) - 1.0).abs() < 0.02, "{}", var(&z));
    }

    #[test]
    fn seeds_differ_and_repeat() {
        let a = gmm_instance(3, 2, 50, 1);
        assert_eq!(a.x, gmm_instance(3, 2, 50, 1).x);
        assert_ne!(a.x, gmm_instance(3, 2, 50, 2).x);
        let l = lstm_instance(2, 10, 4, 5);
        assert_eq!(l.main, lstm_instance(2, 10, 4, 5).main);
        assert!(l.seq.iter().all(|&v| v == 0.0 || v == 1.0));
        assert!(l.seq.contains(&0.0) && l.seq.contains(&1.0));
    }
}
