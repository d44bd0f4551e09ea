// A third derivative (forward over forward over reverse) of code that calls another
// function is not supported; it names the callee.
use autodiff_core::prelude::*;

#[differentiable]
fn cube(t: f64) -> f64 {
    t * t * t
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    cube(x[0])
}

#[autodiff_forward(hvp_f, Dual, Dual)]
fn grad_f(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_f(x, dx, 1.0);
}

#[autodiff_forward(third_f, Dual, Const, Dual, Dual)]
fn hv_f(x: &[f64], v: &[f64], g: &mut [f64], hv: &mut [f64]) {
    hvp_f(x, v, g, hv);
}

fn main() {
    let (mut g, mut dg, mut hv, mut dhv) = ([0.0], [0.0], [0.0], [0.0]);
    third_f(&[2.0], &[1.0], &[1.0], &mut g, &mut dg, &mut hv, &mut dhv);
}
