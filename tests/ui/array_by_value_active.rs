// A float array taken by value is read through a reference by the companions: `Active`,
// which returns an adjoint by value, is refused with the form that works.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_norm2, Active, Active)]
fn norm2(v: [f64; 3]) -> f64 {
    v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
}

fn main() {}
