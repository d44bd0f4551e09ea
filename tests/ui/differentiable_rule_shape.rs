// A `#[differentiable]` reverse rule must end in `(value, |..| pullback)`.
use autodiff_core::prelude::*;

fn pullback(x: &[f64]) -> impl FnOnce(&mut [f64], f64) + '_ {
    move |dx: &mut [f64], dret: f64| {
        for i in 0..x.len() {
            dx[i] += 2.0 * dret * x[i];
        }
    }
}

#[differentiable]
fn sq_sum_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    let y: f64 = x.iter().map(|v| v * v).sum();
    (y, pullback(x))
}

fn main() {
    let _ = sq_sum_rev(&[1.0]);
}
