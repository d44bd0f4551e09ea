// A `Const` `&mut` scalar that the function stores active values in and reads back would
// lose their derivatives: it must be `Duplicated`.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_work, Active, Const, Active)]
fn work(x: f64, t: &mut f64) -> f64 {
    *t = x * x;
    *t * 3.0
}

fn main() {}
