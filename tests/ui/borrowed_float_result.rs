use autodiff_core::prelude::*;

#[differentiable]
fn tail(x: &[f64]) -> &[f64] {
    &x[1..]
}

fn main() {
    let _ = tail(&[1.0, 2.0]);
}
