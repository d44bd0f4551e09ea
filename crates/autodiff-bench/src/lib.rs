//! Benchmarks of autodiff-rs.
//!
//! Each problem comes as a plain Rust primal annotated with `#[autodiff_reverse]` (so the
//! generated gradient sits next to it), a hand-written gradient, and the same function
//! written for the peer crates (`ad_trait`, `candle-core`, `num-dual`) in [`peers`].
//!
//! - [`rosenbrock`]: the extended Rosenbrock function over `&[f64]`.
//! - [`gmm`]: the ADBench Gaussian mixture model objective.
//! - [`lstm`]: the ADBench LSTM objective.
//! - [`mlp`]: a two-layer perceptron on `ndarray` arrays.
//!
//! The ADBench inputs and expected outputs are in `data/adbench/` (MIT License, Copyright
//! (c) Microsoft Corporation, from microsoft/ADBench); [`adbench`] loads them, and
//! [`generate`] draws instances of any size from a seed (the `adbench-gen` binary writes
//! them in ADBench's layout).

// The problems are written with index loops on purpose: they mirror the ADBench reference
// code, and they are what the benchmarks measure the generated code on.
#![allow(clippy::needless_range_loop)]

pub mod adbench;
pub mod generate;
pub mod gmm;
pub mod lstm;
pub mod mlp;
pub mod peers;
pub mod rosenbrock;

/// Relative difference `|a - b| / max(|a|, |b|, 1e-300)`.
pub fn rel_diff(a: f64, b: f64) -> f64 {
    let scale = a.abs().max(b.abs()).max(1e-300);
    (a - b).abs() / scale
}

/// Largest difference between two vectors, each component measured relative to the
/// largest magnitude in `expected` (so that tiny components are not judged alone).
pub fn max_rel_error(got: &[f64], expected: &[f64]) -> f64 {
    assert_eq!(got.len(), expected.len(), "length mismatch");
    let scale = expected
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(1e-300);
    got.iter()
        .zip(expected)
        .map(|(g, e)| (g - e).abs() / e.abs().max(scale * 1e-3))
        .fold(0.0, f64::max)
}

/// A deterministic pseudo-random vector in `[lo, hi)` (xorshift), for benchmark inputs.
pub fn pseudo_random(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            lo + (hi - lo) * u
        })
        .collect()
}
