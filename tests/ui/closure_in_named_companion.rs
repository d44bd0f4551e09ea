use autodiff_core::prelude::*;

#[autodiff_reverse(d_apply, Dual, Active, Active)]
fn apply<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
    f(x)
}

fn main() {
    let _ = apply(|t| t, 1.0);
}
