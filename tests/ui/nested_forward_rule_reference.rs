// Forward over forward through a forward rule that takes a reference to a struct: such a
// rule is not differentiated again, and the error names it.
use autodiff_core::prelude::*;

pub struct Opts {
    pub scale: f64,
}

#[custom_rule(forward = scaled_fwd)]
fn scaled(x: f64, #[constant] o: &Opts) -> f64 {
    o.scale * x * x
}

fn scaled_fwd(x: f64, dx: f64, o: &Opts) -> (f64, f64) {
    (o.scale * x * x, 2.0 * o.scale * x * dx)
}

#[autodiff_forward(h_jvp, Dual, Dual)]
fn h(x: f64) -> f64 {
    scaled(x, &Opts { scale: 2.0 }).sin()
}

#[autodiff_forward(d2h, Dual, Dual)]
fn dh(x: f64) -> f64 {
    h_jvp(x, 1.0).1
}

fn main() {
    let _ = d2h(0.5, 1.0);
}
