use autodiff_core::prelude::*;

#[differentiable]
fn two(v: f64) -> [f64; 2] {
    [v, v * v]
}

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let [a, b] = two(x[0]);
    a * b
}

#[autodiff_reverse(dg, Duplicated, Active)]
fn g(x: &[f64]) -> f64 {
    let arr = [x[0], x[1], x[2]];
    let [a, .., c] = arr;
    a * c
}

fn main() {
    assert_eq!(f(&[2.0]), 8.0);
    assert_eq!(g(&[1.0, 2.0, 3.0]), 3.0);
}
