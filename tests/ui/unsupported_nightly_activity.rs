// Activities of `std::autodiff` without a counterpart name what to write instead, and
// one of the other mode names the mode's own.
use autodiff_core::prelude::*;

#[autodiff_forward(d_total, DuplicatedOnly, Dual)]
fn total(x: &[f64]) -> f64 {
    x.iter().sum()
}

#[autodiff_forward(d_square, Dualv, Dual)]
fn square(x: f64) -> f64 {
    x * x
}

fn main() {
    let _ = total(&[1.0]);
    let _ = square(2.0);
}
