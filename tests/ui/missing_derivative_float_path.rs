// A float method that is not a builtin, called through its type, has no derivative: the
// same message as for the method form, at the method's name.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_wrapped, Active, Active)]
fn wrapped(x: f64) -> f64 {
    f64::rem_euclid(x, 2.0) * x
}

fn main() {
    assert_eq!(wrapped(3.0), 3.0);
}
