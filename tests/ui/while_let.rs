use autodiff_core::prelude::*;

// A `while let` is read as a `loop` of an `if let`, whose forms include `pop` of a
// local vector of floats but not of a parameter of integers: the error is the `if let`'s,
// at the user's pattern.
#[autodiff_reverse(df, Duplicated, Const, Active)]
fn f(x: &[f64], mut order: Vec<usize>) -> f64 {
    let mut s = 0.0;
    while let Some(i) = order.pop() {
        s = s * 0.5 + x[i];
    }
    s
}

fn main() {
    assert_eq!(f(&[1.0, 2.0], vec![0, 1]), 2.0);
}
