use autodiff_core::prelude::*;

// `last` is not one of the consumers iterator chains are read with: the error names it.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x.iter().map(|v| v * 2.0).last().unwrap()
}

fn main() {}
