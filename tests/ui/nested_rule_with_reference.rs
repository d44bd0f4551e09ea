// A reverse rule that takes a constant behind a reference cannot be differentiated again:
// the error says so, and what to pass instead, rather than asking for `#[differentiable]`.
use autodiff_core::prelude::*;

#[differentiable]
pub struct Config {
    pub k: f64,
}

#[custom_rule(reverse = cube_rev)]
fn cube(a: f64, cfg: &Config) -> f64 {
    cfg.k * a * a * a
}

fn cube_rev(a: f64, cfg: &Config) -> (f64, impl FnOnce(f64) -> f64) {
    let k = cfg.k;
    (k * a * a * a, move |dy: f64| 3.0 * k * a * a * dy)
}

#[autodiff_reverse(dg, Duplicated, Const, Active)]
fn g(x: &[f64], cfg: &Config) -> f64 {
    cube(x[0], cfg)
}

#[autodiff_forward(hvp_g, Dual, Const, Dual)]
fn grad_g(x: &[f64], cfg: &Config, dx: &mut [f64]) {
    dx.fill(0.0);
    dg(x, dx, cfg, 1.0);
}

fn main() {
    let (mut g, mut hv) = ([0.0], [0.0]);
    hvp_g(&[1.0], &[1.0], &Config { k: 1.0 }, &mut g, &mut hv);
}
