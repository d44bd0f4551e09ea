// A float method that is not a builtin, called on the elements of a float buffer (here a
// closure's element of `x.iter().map(..)`), has no derivative: one error at the call.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_wrapped, Duplicated, Active)]
fn wrapped(x: &[f64]) -> f64 {
    x.iter().map(|v| v.rem_euclid(2.0)).sum()
}

fn main() {
    assert_eq!(wrapped(&[3.0]), 1.0);
}
