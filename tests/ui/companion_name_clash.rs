// A companion named like its function, and two companions with one name.
use autodiff_core::prelude::*;

#[autodiff_reverse(f, Active, Active)]
fn f(x: f64) -> f64 {
    x * x
}

#[autodiff_reverse(dg, Active, Active)]
#[autodiff_forward(dg, Dual, Dual)]
fn g(x: f64) -> f64 {
    x * x
}

fn main() {
    f(1.0);
    g(1.0);
}
