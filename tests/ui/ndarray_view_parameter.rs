// An `ndarray` view, by value or behind a reference, is not what differentiated code
// takes: an owned array behind a reference is.
use autodiff_core::prelude::*;
use ndarray::ArrayView1;

#[autodiff_reverse(d_product, Duplicated, Active)]
fn product(x: ArrayView1<f64>) -> f64 {
    x[0] * x[1]
}

#[autodiff_reverse(d_sum_of, Duplicated, Active)]
fn sum_of(x: &ArrayView1<f64>) -> f64 {
    x[0] + x[1]
}

fn main() {
    let a = ndarray::arr1(&[1.0, 2.0]);
    let _ = product(a.view()) + sum_of(&a.view());
}
