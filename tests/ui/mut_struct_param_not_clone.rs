use autodiff_core::prelude::*;

#[differentiable]
pub struct State {
    pub a: f64,
}

#[autodiff_reverse(d_scale, Duplicated, Active)]
fn scale(s: &mut State, x: f64) {
    s.a = s.a * x;
}

fn main() {
    let mut s = State { a: 1.0 };
    scale(&mut s, 2.0);
}
