use autodiff_core::prelude::*;

#[autodiff_forward(df, Dual, Dual, Dual)]
fn f(x: f64, n: usize) -> f64 {
    x * n as f64
}

fn main() {
    assert_eq!(f(2.0, 3), 6.0);
}
