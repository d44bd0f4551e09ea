// A search's `Option` taken apart by closures that read values with derivatives: with
// `unwrap_or` after `map` it is a `match`; kept as an `Option`, or through `and_then`,
// or mapped twice, it is refused with a hint.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_kept, Duplicated, Active)]
fn kept(x: &[f64]) -> f64 {
    let found = x.iter().position(|&v| v > 1.0).map(|i| x[i]);
    found.unwrap_or(0.0)
}

#[autodiff_reverse(d_chained, Duplicated, Active)]
fn chained(x: &[f64]) -> f64 {
    let k = x.iter().position(|&v| v > 1.0);
    k.and_then(|i| x.get(i + 1).copied()).unwrap_or(x[0])
}


#[autodiff_reverse(d_mapped_twice, Duplicated, Active)]
fn mapped_twice(x: &[f64]) -> f64 {
    x.iter()
        .position(|&v| v > 1.0)
        .map(|i| x[i])
        .map(|v| v * 2.0)
        .unwrap_or(x[0])
}

fn main() {}
