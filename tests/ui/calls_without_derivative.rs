// Calls that build enum values or boxes, or go through a function pointer, have no
// derivative.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_pointer, Const, Active, Active)]
fn pointer(g: fn(f64) -> f64, x: f64) -> f64 {
    g(x)
}

#[autodiff_reverse(d_wrapped, Active, Active)]
fn wrapped(x: f64) -> f64 {
    let w = Some(x);
    w.unwrap() * 2.0
}

#[autodiff_reverse(d_boxed, Active, Active)]
fn boxed(x: f64) -> f64 {
    let b = Box::new(x);
    *b * 2.0
}

fn main() {
    pointer(|x| x, 1.0);
    wrapped(1.0);
    boxed(1.0);
}
