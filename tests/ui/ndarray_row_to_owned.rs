use autodiff_core::prelude::*;
use ndarray::{Array1, Array2};

#[differentiable]
fn sq(x: &Array1<f64>) -> f64 {
    x.iter().map(|v| v * v).sum()
}

#[autodiff_reverse(d_first_row, Duplicated, Active)]
fn first_row(a: &Array2<f64>) -> f64 {
    let r = a.row(0).to_owned();
    sq(&r)
}

fn main() {
    let a = Array2::<f64>::zeros((2, 2));
    let _ = first_row(&a);
}
