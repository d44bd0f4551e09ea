// A function with a custom rule takes its derivatives from the rule.
use autodiff_core::prelude::*;

#[differentiable]
#[custom_rule(reverse = f_rev)]
fn f(x: f64) -> f64 {
    x * x
}

fn f_rev(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (x * x, move |d: f64| 2.0 * x * d)
}

fn main() {
    f(1.0);
}
