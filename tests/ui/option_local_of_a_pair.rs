use autodiff_core::prelude::*;

// An `Option` local that starts as `None` without its type: the value it stands for has
// no type to start from, so it stays an `Option`, which cannot hold a value with a
// derivative. `let mut prev: Option<f64> = None;` is read.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut prev = None;
    let mut s = 0.0;
    for &v in x {
        if let Some(p) = prev {
            s += v * p;
        }
        prev = Some(v);
    }
    s
}

fn main() {}
