// A chain zipped with a range, or with a buffer of integers, is refused at the zipped
// iterator (zipped chains are read by position).
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Const, Active)]
fn f(x: &[f64], ks: &[usize]) -> f64 {
    x.iter().zip(ks.iter()).map(|(a, k)| a * *k as f64).sum()
}

#[autodiff_forward(g_jvp, Dual, Dual)]
fn g(x: &[f64]) -> f64 {
    x.iter().zip((0..3).rev()).map(|(a, k)| a * k as f64).sum()
}

fn main() {}
