use autodiff_core::prelude::*;

#[autodiff_forward(df, Dual, Dual, Dual)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {
    assert_eq!(f(2.0), 4.0);
}
