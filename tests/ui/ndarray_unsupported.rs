// `ndarray` arrays are supported as parameters and as arrays the function makes with
// `zeros`, `ones`, `from_elem` or `array![..]`, read and written by index, with `sum`,
// `dot`, rows and columns. An array created otherwise (`Array1::from_shape_fn`), `to_vec` of
// an array, iterating an array of three dimensions, `dot` with an operand that is not an array,
// `sum` of an array whose type does not name its number of dimensions, `mapv` whose
// value is neither bound, read nor lent, of an array of three dimensions or with a function
// that is neither a closure nor a path, other whole-array methods (`var`, `mean` without
// `unwrap`) and an axis that is not written as a literal are compile errors that say so.
use autodiff_core::prelude::*;
use ndarray::{Array1, Array2, Array3, ArrayD};

#[autodiff_reverse(d_local, Duplicated, Active)]
fn local(x: &Array1<f64>) -> f64 {
    let mut h = Array1::from_shape_fn(x.len(), |i| x[i]);
    h[0] = x[0];
    h[0] * 2.0
}

#[autodiff_reverse(d_copied, Duplicated, Active)]
fn copied(x: &Array1<f64>) -> f64 {
    let mut h = Array1::<f64>::zeros(x.len());
    h[0] = x[0];
    let c = h.to_vec();
    c[0] * 2.0
}


#[autodiff_reverse(d_iterated, Duplicated, Active)]
fn iterated(a: &Array3<f64>) -> f64 {
    a.iter().map(|v| v * v).sum()
}

#[autodiff_reverse(d_with_a_slice, Duplicated, Duplicated, Active)]
fn with_a_slice(x: &Array1<f64>, y: &[f64]) -> f64 {
    x.dot(&Array1::from(y.to_vec()))
}

#[autodiff_reverse(d_unranked, Duplicated, Active)]
fn unranked(a: &ArrayD<f64>) -> f64 {
    a.sum()
}

#[autodiff_reverse(d_mapped, Duplicated, Active)]
fn mapped(a: &Array1<f64>) -> f64 {
    let (m, k) = (a.mapv(f64::exp), 2.0);
    m[0] * k
}

#[autodiff_reverse(d_mapped3, Duplicated, Active)]
fn mapped3(a: &Array3<f64>) -> f64 {
    let h = a.mapv(f64::exp);
    h[[0, 0, 0]]
}

fn scale() -> impl Fn(f64) -> f64 {
    |v| 2.0 * v
}

#[autodiff_reverse(d_mapped_by, Duplicated, Active)]
fn mapped_by(a: &Array1<f64>) -> f64 {
    let h = a.mapv(scale());
    h[0]
}

#[autodiff_reverse(d_variance, Duplicated, Active)]
fn variance(a: &Array2<f64>) -> f64 {
    a.var(1.0)
}

#[autodiff_reverse(d_averaged, Duplicated, Active)]
fn averaged(a: &Array2<f64>) -> f64 {
    a.mean().unwrap_or(0.0)
}

#[autodiff_reverse(d_by_axis, Duplicated, Const, Active)]
fn by_axis(a: &Array2<f64>, k: usize) -> f64 {
    let s = a.sum_axis(ndarray::Axis(k));
    s.sum()
}

fn main() {}
