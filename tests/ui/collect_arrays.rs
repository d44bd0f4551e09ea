use autodiff_core::prelude::*;

// Arrays collected into a vector: the error says to push them.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let pairs: Vec<[f64; 2]> = x.iter().zip(x.iter().skip(1)).map(|(a, b)| [*a, *b]).collect();
    pairs.iter().map(|p| p[0] * p[1]).sum::<f64>()
}

fn main() {}
