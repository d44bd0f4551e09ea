// Values changed inside a place whose value carries no derivative and is kept as written
// (a guard, a loop's range, an index, an assertion) are refused.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_guard, Active, Active)]
fn guard(x: f64) -> f64 {
    let mut s = x;
    let k = 1;
    let r = match k {
        1 if {
            s *= s;
            true
        } =>
        {
            0.0
        }
        _ => 1.0,
    };
    r + s
}

#[autodiff_reverse(d_range, Active, Active)]
fn range(x: f64) -> f64 {
    let mut s = x;
    for _ in 0..({
        s *= s;
        2
    }) {}
    s
}

#[autodiff_reverse(d_index, Active, Active)]
fn index(x: f64) -> f64 {
    let mut s = x;
    let v = [1.0, 2.0];
    v[{
        s *= s;
        0
    }] + s
}

#[differentiable]
fn step(y: &mut f64) -> f64 {
    *y *= 0.5;
    *y
}

#[autodiff_reverse(d_asserted, Active, Active)]
fn asserted(x: f64) -> f64 {
    let mut y = x;
    assert!(step(&mut y) < 1e9);
    y
}

fn main() {
    guard(1.0);
    range(1.0);
    index(1.0);
    asserted(1.0);
}
