use autodiff_core::prelude::*;

// An `Option` local passed on whole (to `Option::or`): not one of the forms that read
// it, so it stays an `Option`, which cannot hold a value with a derivative.
// `if let Some((j, p)) = prev`, `unwrap`, `map_or` and the rest are read.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut prev = None;
    let mut s = 0.0;
    for &v in x {
        prev = Some(v).or(prev);
        s += v;
    }
    s * prev.unwrap_or(1.0)
}

fn main() {}
