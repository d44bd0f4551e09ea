use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    const K: f64 = 2.0;
    fn helper(v: f64) -> f64 {
        v * v
    }
    helper(x[0]) * K
}

fn main() {
    assert_eq!(f(&[3.0]), 18.0);
}
