use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x.iter()
        .filter(|v| **v > 0.0)
        .enumerate()
        .map(|(i, v)| v * i as f64)
        .sum()
}

#[autodiff_reverse(dg, Duplicated, Active)]
fn g(x: &[f64]) -> f64 {
    x.iter()
        .zip(x.iter().filter(|v| **v > 0.0))
        .map(|(a, b)| a * b)
        .sum()
}

fn main() {
    assert_eq!(f(&[1.0, 2.0]), 2.0);
    assert_eq!(g(&[1.0, 2.0]), 5.0);
}
