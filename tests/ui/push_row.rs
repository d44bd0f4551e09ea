use autodiff_core::prelude::*;

#[autodiff_reverse(d_rows, Duplicated, Active)]
fn rows(x: &[f64]) -> f64 {
    let mut ps: Vec<Vec<f64>> = Vec::new();
    let p = vec![x[0], x[1]];
    ps.push(p);
    ps[0][0] * ps[0][1]
}

fn main() {}
