// The cotangent of a tuple value, in a `#[differentiable]` reverse rule's pullback, is a
// name (`d: (f64, f64)`), `_`, or a tuple of names (`(a, b): (f64, f64)`, `(a, _)`).
#![allow(unused_parens)]
use autodiff_core::prelude::*;

#[allow(clippy::type_complexity)]
#[differentiable]
fn inner_parens_rev(r: f64) -> ((f64, f64), impl FnOnce((f64, f64)) -> f64) {
    ((r, 2.0 * r), move |(a, (b)): (f64, f64)| a + 2.0 * b)
}

#[allow(clippy::type_complexity)]
#[differentiable]
fn outer_parens_rev(r: f64) -> ((f64, f64), impl FnOnce((f64, f64)) -> f64) {
    ((r, 2.0 * r), move |((a, b)): (f64, f64)| a + 2.0 * b)
}

fn main() {
    let _ = inner_parens_rev(1.0);
    let _ = outer_parens_rev(1.0);
}
