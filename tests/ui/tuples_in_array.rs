use autodiff_core::prelude::*;

// An array of tuples whose items carry derivatives: the error names the tuple.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let t = [(x[0], 0.5), (x[1], 1.5)];
    t.iter().map(|&(a, w)| w * a * a).sum::<f64>()
}

fn main() {}
