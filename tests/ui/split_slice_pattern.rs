// A slice pattern on the rest of `split_first`/`split_last` also tests its length: not
// supported in differentiated code (only patterns that bind the parts whole are).
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let Some((a, [b, c])) = x.split_first() else {
        return 0.0;
    };
    a * b * c
}

#[autodiff_reverse(d_g, Duplicated, Active)]
fn g(x: &[f64]) -> f64 {
    if let Some((a, [b, c])) = x.split_last() { a * b * c } else { -1.0 }
}

fn main() {}
