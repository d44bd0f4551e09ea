use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    // A slice pattern that tests an element's value, not only the length: refused.
    let [a, b, 0.0] = x[..3] else {
        return 0.0;
    };
    a * b
}

fn main() {
    assert_eq!(f(&[1.0, 2.0, 0.0]), 2.0);
}
