// A closure passed to a differentiated call may capture scalars and float buffers with
// their derivatives, not a struct.
use autodiff_core::prelude::*;

pub struct Poly {
    pub c: Vec<f64>,
}

#[differentiable]
fn trapezoid<F: Fn(f64) -> f64>(f: F, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = 0.5 * (f(a) + f(b));
    for i in 1..n {
        s += f(a + i as f64 * h);
    }
    s * h
}

#[autodiff_reverse(d_area, Duplicated, Active)]
fn area(p: &Poly) -> f64 {
    trapezoid(|t| p.c[0] + p.c[1] * t, 0.0, 1.0, 10)
}

fn main() {}
