use autodiff_core::prelude::*;

// A `scan` whose closure may stop (`None`) is not read: the error names it. One that
// always goes on (`Some(e)` as its value) is read as a loop.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let partial: Vec<f64> = x
        .iter()
        .scan(0.0, |acc, &v| {
            *acc += v;
            if *acc > 1.0 { None } else { Some(*acc) }
        })
        .collect();
    partial.iter().sum()
}

fn main() {}
