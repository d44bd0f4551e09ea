use autodiff_core::prelude::*;

#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut i = 0;
    let first_large = loop {
        if x[i] > 1.0 || i + 1 == x.len() {
            break x[i];
        }
        i += 1;
    };
    first_large * 2.0
}

fn main() {
    assert_eq!(f(&[0.5, 2.0]), 4.0);
}
