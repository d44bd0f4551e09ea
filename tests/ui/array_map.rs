// `map` of an array: the error says what to write instead.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_doubled, Duplicated, Active)]
fn doubled(x: &[f64]) -> f64 {
    let a = [x[0], x[1]];
    let b = a.map(|v| v * 2.0);
    b[0] + b[1]
}

fn main() {
    let _ = doubled(&[1.0, 2.0]);
}
