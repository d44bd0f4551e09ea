//! Annotated functions compiled as a library's public items.
//!
//! The reverse companion of a `fn(&[f64]) -> f64` implements `ObjectiveHvp`, whose
//! Hessian-vector products differentiate the companion a second time. Where that second
//! derivative cannot be built (here: a closure passed to a higher-order function, which
//! nested differentiation does not support), the library must still compile, with its
//! gradient; only a call asking for `H·v` may fail. `tests/lang_calls.rs` checks the
//! gradient of [`weighted_sum`].

use autodiff_core::prelude::*;

/// `Σ_{i<n} f(a + i/4)`.
#[differentiable]
pub fn sum_at_quarters<F: Fn(f64) -> f64>(f: F, a: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += f(a + i as f64 * 0.25);
    }
    s
}

/// `Σ_{i<3} (x₀ + i/4) · x₁`, through a closure over `x`.
#[autodiff_reverse(d_weighted_sum, Duplicated, Active)]
pub fn weighted_sum(x: &[f64]) -> f64 {
    sum_at_quarters(|q: f64| q * x[1], x[0], 3)
}
