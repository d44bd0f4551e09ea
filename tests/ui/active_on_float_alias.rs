// A float parameter whose type is an alias, which the macro cannot see through.
use autodiff_core::prelude::*;

type Real = f64;

#[autodiff_reverse(d_sq, Active, Active)]
fn sq(x: Real) -> f64 {
    x * x
}

fn main() {
    let _ = sq(2.0);
}
