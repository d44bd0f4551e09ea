// A method of a parameter whose type is a type parameter (or `impl Trait`) is a compile
// error at the call: the macro cannot see which implementation runs, so it could use
// neither the method's derivative nor a custom rule on it. `no_grad(b.order())` is the
// way to call one that carries no derivative.
use autodiff_core::prelude::*;

pub trait Backend {
    fn synchronize(&self);
    fn order(&self) -> usize;
}

#[autodiff_reverse(d_step, Const, Duplicated, Active)]
fn step<B: Backend>(b: &B, x: &[f64]) -> f64 {
    b.synchronize();
    x[0] * x[0]
}

#[differentiable]
fn power(b: &impl Backend, x: f64) -> f64 {
    let k = b.order();
    x.powi(k as i32)
}

#[differentiable]
fn fine<B: Backend>(b: &B, x: f64) -> f64 {
    let k = no_grad(b.order());
    x.powi(k as i32)
}

fn main() {}
