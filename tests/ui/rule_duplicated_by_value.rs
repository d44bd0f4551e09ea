use autodiff_core::prelude::*;

#[custom_rule(forward = f_fwd)]
fn f(#[duplicated] x: f64) -> f64 {
    x * x
}

fn f_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x * x, 2.0 * x * dx)
}

fn main() {
    let _ = f(1.0);
    let _ = f_fwd(1.0, 1.0);
}
