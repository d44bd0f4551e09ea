// A struct is taken by reference to be `Duplicated`.
use autodiff_core::prelude::*;

#[derive(Clone, Copy)]
struct Point {
    a: f64,
}

#[autodiff_reverse(d_norm, Duplicated, Active)]
fn norm(p: Point) -> f64 {
    p.a * p.a
}

fn main() {
    let _ = norm(Point { a: 1.0 });
}
