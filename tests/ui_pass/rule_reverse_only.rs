//! A rule with only a reverse rule compiles when nothing uses the function in forward
//! mode, even though callers with `#[autodiff_reverse]` also get forward companions.
use autodiff_core::prelude::*;

#[custom_rule(reverse = f_rev)]
fn f(x: f64) -> f64 {
    x * x
}

fn f_rev(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x, move |d: f64| 2.0 * x * d)
}

#[autodiff_reverse(d_g, Active, Active)]
fn g(x: f64) -> f64 {
    f(x).sin()
}

fn main() {
    let (v, d) = d_g(0.5, 1.0);
    assert!((v - 0.25f64.sin()).abs() < 1e-15);
    assert!((d - 0.25f64.cos()).abs() < 1e-15);
}
