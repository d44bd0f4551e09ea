use autodiff_core::prelude::*;

#[autodiff_reverse(df, Active)]
fn f(x: f64, y: f64) -> f64 {
    x * y
}

fn main() {
    assert_eq!(f(2.0, 3.0), 6.0);
}
