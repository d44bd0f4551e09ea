use autodiff_core::prelude::*;

#[autodiff_reverse(df, Active, Const, Active)]
fn f(x: f64, k: Option<f64>) -> f64 {
    if let Some(k) = k { k * x } else { x }
}

fn main() {
    assert_eq!(f(2.0, Some(3.0)), 6.0);
}
