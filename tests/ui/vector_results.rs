// A function may return a vector of floats (`-> Vec<f64>`) as its last expression. An
// early `return` in such a function, and a vector in a tuple, are compile errors that
// say so.
use autodiff_core::prelude::*;

#[differentiable]
fn clipped(x: &[f64]) -> Vec<f64> {
    if x.is_empty() {
        return Vec::new();
    }
    let mut out = x.to_vec();
    out[0] = out[0].min(1.0);
    out
}

#[differentiable]
fn with_norm(x: &[f64]) -> (Vec<f64>, f64) {
    let v = x.to_vec();
    let n = x[0] * x[0];
    (v, n)
}

fn main() {}
