// An iterator adapter that the chains are not read through (`chain`, `scan`) is named in
// the error, not the `map` after it nor the `iter` before it.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x[..2].iter().chain(x[3..].iter()).map(|v| v.sin()).sum()
}

#[autodiff_reverse(d_running, Duplicated, Active)]
fn running(x: &[f64]) -> f64 {
    let v: Vec<f64> = x
        .iter()
        .scan(0.0, |st, &v| {
            *st += v;
            Some(*st * v)
        })
        .collect();
    v[0]
}

fn main() {}
