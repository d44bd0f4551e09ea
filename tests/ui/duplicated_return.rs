use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Duplicated)]
fn f(x: &[f64]) -> f64 {
    x[0] * x[1]
}

fn main() {
    assert_eq!(f(&[2.0, 3.0]), 6.0);
}
