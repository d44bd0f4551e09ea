use autodiff_core::prelude::*;

#[autodiff_reverse(d_scaled, Const, Active, Active)]
fn scaled(g: impl Fn(f64) -> f64, x: f64) -> f64 {
    g(x) * x
}

fn main() {
    let _ = d_scaled(|t| t * 2.0, 3.0, 1.0);
}
