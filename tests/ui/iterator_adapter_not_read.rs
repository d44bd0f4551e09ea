// An iterator adapter that the chains are not read through (`chain`) is named in the
// error, not the `map` after it.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x[..2].iter().chain(x[3..].iter()).map(|v| v.sin()).sum()
}

fn main() {}
