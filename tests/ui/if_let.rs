use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    // The parts of the pair may carry derivatives: binding them is refused.
    let pair = (x[0] * 2.0, x[1]);
    if let (p, 1.0) = pair { p } else { 0.0 }
}

fn main() {
    assert_eq!(f(&[3.0, 1.0]), 6.0);
}
