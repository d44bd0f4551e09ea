use autodiff_core::prelude::*;

// Vectors collected into a vector: the error says how to build the rows.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let rows: Vec<Vec<f64>> = x.chunks(2).map(|c| c.to_vec()).collect();
    rows.iter().map(|r| r[0] * r[1]).sum::<f64>()
}

fn main() {}
