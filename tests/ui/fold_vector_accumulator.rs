// A `fold` carries a scalar or a tuple of scalars: a vector accumulator is an error at
// it, which says to write the loop.
use autodiff_core::prelude::*;

#[differentiable]
fn step(h: &[f64]) -> Vec<f64> {
    h.iter().map(|v| v.sin()).collect()
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let y = (0..3).fold(x.to_vec(), |h, _| step(&h));
    y[0]
}

fn main() {
    assert!(f(&[0.5]) > 0.0);
}
