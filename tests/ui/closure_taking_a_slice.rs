// A differentiable closure is a `DiffFn` over floats: a closure parameter that takes a
// slice is an error at its type, and the function itself still compiles.
use autodiff_core::prelude::*;

#[differentiable]
fn apply_slice<F: Fn(&[f64]) -> f64>(f: F, y: &[f64]) -> f64 {
    f(y)
}

fn main() {
    assert_eq!(apply_slice(|s: &[f64]| s[0], &[2.0]), 2.0);
}
