// A reverse rule used under forward over reverse must be `#[differentiable]`.
use autodiff_core::prelude::*;

#[custom_rule(reverse = sq_sum_rev)]
fn sq_sum(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

fn sq_sum_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    let y: f64 = x.iter().map(|v| v * v).sum();
    (y, move |dx: &mut [f64], dret: f64| {
        for i in 0..x.len() {
            dx[i] += 2.0 * dret * x[i];
        }
    })
}

#[autodiff_reverse(dg, Duplicated, Active)]
fn g(x: &[f64]) -> f64 {
    sq_sum(x).cos()
}

#[autodiff_forward(hvp_g, Dual, Dual)]
fn grad_g(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    dg(x, dx, 1.0);
}

fn main() {
    let (mut g, mut hv) = ([0.0], [0.0]);
    hvp_g(&[1.0], &[1.0], &mut g, &mut hv);
}
