use autodiff_core::prelude::*;

// Only a forward rule: reverse mode must not fall back to differentiating the body.
#[custom_rule(forward = f_fwd)]
fn f(x: f64) -> f64 {
    x * x
}

fn f_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x * x, 2.0 * x * dx)
}

#[autodiff_reverse(d_g, Active, Active)]
fn g(x: f64) -> f64 {
    f(x).sin()
}

fn main() {
    let _ = d_g(1.0, 1.0);
}
