use autodiff_core::prelude::*;

// An `Option` local of a pair: its value is not one number, so it stays an `Option`,
// which cannot hold a value with a derivative. `let mut prev = None;` assigned
// `Some(v)` of one number is read.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut prev = None;
    let mut s = 0.0;
    for (i, &v) in x.iter().enumerate() {
        if let Some((j, p)) = prev {
            s += v * p * (i - j) as f64;
        }
        prev = Some((i, v));
    }
    s
}

fn main() {}
