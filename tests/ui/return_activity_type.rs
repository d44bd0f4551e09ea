// An active return value that is not a float.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_count, Active, Active)]
fn count(x: f64) -> usize {
    x as usize
}

#[autodiff_forward(squares_jvp, Dual, Dual)]
fn squares(x: f64) -> Option<f64> {
    Some(x * x)
}

fn main() {
    count(1.0);
    squares(1.0);
}
