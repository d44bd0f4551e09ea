use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {
    assert_eq!(f(2.0), 4.0);
}
