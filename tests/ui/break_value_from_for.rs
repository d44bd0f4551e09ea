use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        if *v > 1.0 {
            break *v;
        }
        s += v;
    }
    s
}

fn main() {
    assert_eq!(f(&[1.0, 2.0]), 1.0);
}
