use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.dedup();
    v[0] * 2.0
}

fn main() {
    assert_eq!(f(&[1.0, 2.0]), 4.0);
}
