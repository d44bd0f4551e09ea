// A tuple that carries a derivative, passed by value to a differentiable function (where
// a tuple parameter carries none), is refused at the argument, not dropped.
use autodiff_core::prelude::*;

#[differentiable]
fn pair(x: f64) -> (f64, f64) {
    (x, x * x)
}

#[differentiable]
fn product(p: (f64, f64)) -> f64 {
    p.0 * p.1
}

#[autodiff_forward(g_jvp, Dual, Dual)]
fn g(x: f64) -> f64 {
    let p = pair(x);
    product(p)
}

fn main() {}
