use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let [a, b] = x[..2] else {
        return 0.0;
    };
    a * b
}

fn main() {
    assert_eq!(f(&[1.0, 2.0]), 2.0);
}
