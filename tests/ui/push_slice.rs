use autodiff_core::prelude::*;

// A slice pushed onto a vector: the error says to push a copy of it, or an array.
#[autodiff_reverse(d_rows, Duplicated, Active)]
fn rows<'a>(x: &'a [f64]) -> f64 {
    let mut ps: Vec<&'a [f64]> = Vec::new();
    ps.push(&x[..2]);
    ps[0][0] * ps[0][1]
}

fn main() {}
