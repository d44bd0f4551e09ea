// A constant user struct passed to a callee that differentiates it has no shadow (a
// matrix `&[Vec<f64>]` gets a zero one; a struct has no zero).
use autodiff_core::prelude::*;

pub struct Model {
    pub w: f64,
}

#[differentiable]
fn predict(m: &Model, x: f64) -> f64 {
    m.w * x
}

#[autodiff_reverse(d_loss, Const, Active, Active)]
fn loss(m: &Model, x: f64) -> f64 {
    predict(m, x)
}

fn main() {
    let _ = d_loss(&Model { w: 2.0 }, 3.0, 1.0);
}
