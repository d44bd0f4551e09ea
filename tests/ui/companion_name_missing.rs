// The companion's name comes first; a typed receiver is refused with its own message.
use autodiff_core::prelude::*;

#[autodiff_reverse(Active, Active)]
fn f(x: f64) -> f64 {
    x * x
}

struct S {
    w: f64,
}

impl S {
    #[autodiff_reverse(d_g, Duplicated, Active, Active)]
    fn g(self: &Self, x: f64) -> f64 {
        self.w * x
    }
}

fn main() {
    f(1.0);
    S { w: 1.0 }.g(1.0);
}
