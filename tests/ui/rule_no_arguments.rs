use autodiff_core::prelude::*;

#[custom_rule]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {
    let _ = f(1.0);
}
