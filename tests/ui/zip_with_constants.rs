// A chain zipped with a range, or with a local holding a copy of a constant array, is
// refused at the zipped iterator (zipped chains are read by position).
use autodiff_core::prelude::*;

const W: [f64; 3] = [1.0, -2.0, 0.5];

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let w = W;
    x.iter().zip(w.iter()).map(|(a, b)| a * b * a).sum()
}

#[autodiff_forward(g_jvp, Dual, Dual)]
fn g(x: &[f64]) -> f64 {
    x.iter().zip((0..3).rev()).map(|(a, k)| a * k as f64).sum()
}

fn main() {}
