// Slice patterns are read where their elements are bindings or `_`, in `match` arms
// without guards: a nested pattern and a guard are refused at the pattern.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(m: &[[f64; 2]]) -> f64 {
    if let [[a, b], ..] = m { a * b } else { 0.0 }
}

#[autodiff_reverse(d_g, Duplicated, Active)]
fn g(x: &[f64]) -> f64 {
    match x {
        [a, b] if a > b => a - b,
        _ => 0.0,
    }
}

fn main() {}
