// A function returning a buffer of rows (a small matrix by value, a vector of rows) is a
// compile error at the result type, which says to write the rows into a `&mut`
// parameter instead.
use autodiff_core::prelude::*;

#[differentiable]
fn outer(a: &[f64; 2], b: &[f64; 2]) -> [[f64; 2]; 2] {
    let mut c = [[0.0; 2]; 2];
    for i in 0..2 {
        for j in 0..2 {
            c[i][j] = a[i] * b[j];
        }
    }
    c
}

#[autodiff_reverse(d_pairs, Duplicated, Const)]
fn pairs(x: &[f64]) -> Vec<[f64; 2]> {
    x.windows(2).map(|w| [w[0], w[1]]).collect()
}

fn main() {}
