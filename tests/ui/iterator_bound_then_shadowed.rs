// An iterator bound with `let` is read again where it is consumed; a name that it reads,
// bound again in between, is refused there (its closure captured the first binding).
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let k = x[0] * 2.0;
    let it = x.iter().map(|v| v * k);
    let k = 3.0;
    let s: f64 = it.sum();
    s * k
}

fn main() {}
