// An array taken by value carries no derivative: the message says to take it by
// reference, not only to mark it `Const`.
use autodiff_core::prelude::*;

#[autodiff_forward(d_norm2, Dual, Dual)]
fn norm2(v: [f64; 3]) -> f64 {
    v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
}

fn main() {}
