use autodiff_core::prelude::*;

// The forward rule forgets the tangent of `y`.
#[custom_rule(forward = f_fwd)]
fn f(x: &[f64], y: f64) -> f64 {
    x[0] * y
}

fn f_fwd(x: &[f64], dx: &[f64], y: f64) -> (f64, f64) {
    (x[0] * y, dx[0] * y)
}

#[autodiff_forward(g_jvp, Dual, Dual, Dual)]
fn g(x: &[f64], y: f64) -> f64 {
    f(x, y)
}

fn main() {
    let _ = g_jvp(&[1.0], &[1.0], 2.0, 0.0);
}
