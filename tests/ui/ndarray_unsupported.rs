// `ndarray` arrays are supported as parameters, read and written by index. An array
// created in the function, `fill` of a whole array, and iterating an array of two
// dimensions are compile errors that say so.
use autodiff_core::prelude::*;
use ndarray::{Array1, Array2};

#[autodiff_reverse(d_local, Duplicated, Active)]
fn local(x: &Array1<f64>) -> f64 {
    let mut h = Array1::zeros(x.len());
    h[0] = x[0];
    h[0] * 2.0
}

#[autodiff_forward(d_filled, Dual, Dual)]
fn filled(x: &Array1<f64>, out: &mut Array1<f64>) {
    out.fill(0.0);
    out[0] = x[0];
}

#[autodiff_reverse(d_iterated, Duplicated, Active)]
fn iterated(a: &Array2<f64>) -> f64 {
    a.iter().map(|v| v * v).sum()
}

fn main() {}
