//! `cargo run --release --example quickstart`: the gradient and a directional derivative
//! of the Rosenbrock function.

use autodiff_core::prelude::*;

#[autodiff_reverse(d_rosen, Duplicated, Active)]
#[autodiff_forward(rosen_jvp, Dual, Dual)]
fn rosen(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

fn main() {
    let x = [1.5, 2.0, -0.5];
    println!("f(x) = {}", rosen(&x));

    // Reverse mode: the gradient is added into `g`.
    let mut g = [0.0; 3];
    let f = d_rosen(&x, &mut g, 1.0);
    println!("f = {f}, grad = {g:?}");

    // Forward mode: the derivative along a direction.
    let (f2, df) = rosen_jvp(&x, &[1.0, 0.0, 0.0]);
    println!("f = {f2}, df/dx0 = {df}");
}
