use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Duplicated, Active)]
fn f(x: &[f64], y: &[f64]) -> f64 {
    let mut input = &x[0..1];
    let mut s = 0.0;
    for t in 0..2 {
        s += input[0];
        input = &y[t..t + 1];
    }
    s
}

fn main() {
    assert_eq!(f(&[1.0], &[2.0, 3.0]), 3.0);
}
