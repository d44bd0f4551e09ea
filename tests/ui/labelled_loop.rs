use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    'outer: for i in 0..x.len() {
        for j in 0..x.len() {
            if x[i] * x[j] > 10.0 {
                break 'outer;
            }
            s += x[i] * x[j];
        }
    }
    s
}

fn main() {
    assert_eq!(f(&[1.0, 2.0]), 9.0);
}
