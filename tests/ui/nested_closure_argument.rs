// Nested AD of a function that passes a closure to a call is not supported: asking for
// its Hessian-vector product is a compile error that says so, at the companion, whatever
// the closure captures.
use autodiff_core::prelude::*;

#[differentiable]
fn sum_at<F: Fn(f64) -> f64>(f: F, a: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += f(a + i as f64);
    }
    s
}

/// Captures a buffer.
#[autodiff_reverse(d_g, Duplicated, Active)]
fn g(x: &[f64]) -> f64 {
    sum_at(|q: f64| q * x[1], x[0], 3)
}

/// Captures a scalar.
#[autodiff_reverse(d_h, Duplicated, Active)]
fn h(x: &[f64]) -> f64 {
    let b = x[1];
    sum_at(|q: f64| q * b, x[0], 3)
}

/// Captures nothing.
#[autodiff_reverse(d_k, Duplicated, Active)]
fn k(x: &[f64]) -> f64 {
    sum_at(|q: f64| q * q, x[0], 3)
}

fn main() {
    let _ = autodiff_core::hvp::<d_g>(&[1.0, 2.0], &[1.0, 0.0]);
    let _ = autodiff_core::hvp::<d_h>(&[1.0, 2.0], &[1.0, 0.0]);
    let _ = autodiff_core::hvp::<d_k>(&[1.0, 2.0], &[1.0, 0.0]);
}
