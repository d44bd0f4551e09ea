// A chain zipped with a range is refused at the zipped iterator (zipped chains are read
// by position, and a range is iterated as written).
use autodiff_core::prelude::*;

#[autodiff_forward(g_jvp, Dual, Dual)]
fn g(x: &[f64]) -> f64 {
    x.iter().zip((0..3).rev()).map(|(a, k)| a * k as f64).sum()
}

fn main() {}
