// A function returning a tuple of tuples: one flat tuple is differentiated.
use autodiff_core::prelude::*;

#[differentiable]
fn nested(a: f64, b: f64) -> ((f64, f64), f64) {
    ((a * b, a - b), a)
}

fn main() {
    let ((p, q), r) = nested(1.0, 2.0);
    let _ = p + q * r;
}
