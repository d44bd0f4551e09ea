// An iterator adapter that the chains are not read through (`chain` followed by an
// adapter that counts positions, `scan`) is named in the error, not the `map` after it
// nor the `iter` before it.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x[..2]
        .iter()
        .chain(x[3..].iter())
        .enumerate()
        .map(|(i, v)| v.sin() * i as f64)
        .sum()
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

// A loop over a chain that may leave early is not split in two: `chain` is named.
#[autodiff_reverse(d_until, Duplicated, Active)]
fn until(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x[..2].iter().chain(x[3..].iter()) {
        if *v > 1.0 {
            break;
        }
        s += v * v;
    }
    s
}

fn main() {}
