use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    // The element may carry a derivative: binding it is refused.
    if let Some(first) = x.first() { first * 2.0 } else { 0.0 }
}

fn main() {
    assert_eq!(f(&[3.0]), 6.0);
}
