use autodiff_core::prelude::*;

// Slices collected into a vector: the error says to collect copies of them, or arrays.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let rows: Vec<&[f64]> = x.chunks(2).map(|c| &c[..]).collect();
    rows.iter().map(|r| r[0] * r[1]).sum::<f64>()
}

fn main() {}
