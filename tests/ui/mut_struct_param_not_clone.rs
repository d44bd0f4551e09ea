// A `&mut` struct parameter that the function changes other than through its members
// (here it is lent whole to a callee) is kept whole for the reverse sweep, so it must
// be `Clone`: the error says so. (One changed only through its members needs nothing.)
use autodiff_core::prelude::*;

#[differentiable]
pub struct State {
    pub a: f64,
}

#[differentiable]
fn bump(s: &mut State, x: f64) {
    s.a *= x;
}

#[autodiff_reverse(d_scale, Duplicated, Active)]
fn scale(s: &mut State, x: f64) {
    bump(s, x);
    s.a = s.a * x;
}

fn main() {
    let mut s = State { a: 1.0 };
    scale(&mut s, 2.0);
}
