use autodiff_core::prelude::*;

fn plain(x: f64) -> f64 {
    x.sin()
}

#[autodiff_reverse(df, Active, Active)]
fn f(x: f64) -> f64 {
    2.0 * plain(x)
}

fn main() {
    assert_eq!(f(0.0), 0.0);
}
