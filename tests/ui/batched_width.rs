use autodiff_core::prelude::*;

// The width comes right after the name, and is 1..=64.
#[autodiff_forward(df, Dual, 4, Dual)]
fn f(x: f64) -> f64 {
    x * x
}

#[autodiff_forward(dg, 0, Dual, Dual)]
fn g(x: f64) -> f64 {
    x * x
}

#[autodiff_reverse(dh, 2, Active, Active)]
fn h(x: f64) -> f64 {
    x * x
}

#[autodiff_forward(4, dk, Dual, Dual)]
fn k(x: f64) -> f64 {
    x * x
}

fn main() {
    assert_eq!(f(2.0) + g(1.0) + h(1.0) + k(0.0), 6.0);
}
