// A vector taken by value carries no derivative: the message says to take a slice, not
// only to mark it `Const`.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_total, Duplicated, Active)]
fn total(x: Vec<f64>) -> f64 {
    x.iter().sum()
}

fn main() {}
