// A struct returned by value from differentiated code needs `#[differentiable]` on its
// declaration: the caller's adjoint of it starts at its zero.
use autodiff_core::prelude::*;

struct Polar {
    r: f64,
    t: f64,
}

#[differentiable]
fn polar(x: f64, y: f64) -> Polar {
    Polar {
        r: (x * x + y * y).sqrt(),
        t: y.atan2(x),
    }
}

#[autodiff_reverse(d_radius, Active, Active, Active)]
fn radius(x: f64, y: f64) -> f64 {
    let p = polar(x, y);
    p.r * p.t
}

fn main() {
    radius(1.0, 2.0);
}
