// Nested differentiation takes `f32` or `f64` functions, not functions that mix the two.
use autodiff_core::prelude::*;

#[autodiff_reverse(dg, Duplicated, Active)]
fn g(x: &[f32]) -> f32 {
    let mut s = 0.0f64;
    for i in 0..x.len() {
        s += (x[i] as f64).sin();
    }
    s as f32
}

#[autodiff_forward(hvp_g, Dual, Dual)]
fn grad_g(x: &[f32], dx: &mut [f32]) {
    dx.fill(0.0);
    dg(x, dx, 1.0);
}

fn main() {
    let (mut g, mut hv) = ([0.0], [0.0]);
    hvp_g(&[1.0], &[1.0], &mut g, &mut hv);
}
