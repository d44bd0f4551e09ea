// A chain zipped with an iterator that is neither a buffer's nor a range's is refused at
// that iterator (zipped chains are read by position).
use autodiff_core::prelude::*;

#[autodiff_forward(g_jvp, Dual, Dual)]
fn g(x: &[f64]) -> f64 {
    x.iter().zip(std::iter::repeat(2.0)).map(|(a, k)| a * k).sum()
}

fn main() {}
