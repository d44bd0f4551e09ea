use autodiff_core::prelude::*;

// `last` of a chain is read as a reduction; of an iterator held in a variable it is not
// (`next` and `nth` would advance it): the error names it.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let doubled = x.iter().map(|v| v * 2.0);
    doubled.last().unwrap()
}

fn main() {}
