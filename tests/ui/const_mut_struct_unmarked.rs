// A `Const` struct behind `&mut` lent to a callee gets a scratch shadow, a zero of its
// type: its declaration must be marked `#[differentiable]`.
use autodiff_core::prelude::*;

#[derive(Clone)]
struct Ws {
    a: f64,
    n: usize,
}

#[differentiable]
fn fill(w: &mut Ws, x: f64) {
    w.a = w.a * x + 1.0;
    w.n += 1;
}

#[autodiff_reverse(d_f, Active, Const, Active)]
fn f(x: f64, w: &mut Ws) -> f64 {
    fill(w, x);
    w.a * w.a
}

fn main() {}
