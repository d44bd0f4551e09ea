use autodiff_core::prelude::*;

#[autodiff_forward(df, Dual, Dual)]
fn f(x: f64) -> f64 {
    let y;
    y = x * x;
    y
}

fn main() {
    assert_eq!(f(2.0), 4.0);
}
