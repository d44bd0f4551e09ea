// `#[constant]` marks a custom rule's parameter; a companion takes `Const` instead.
use autodiff_core::prelude::*;

#[autodiff_reverse(df, Active, Active, Active)]
fn f(x: f64, #[constant] t: f64) -> f64 {
    x * t
}

fn main() {
    f(1.0, 1.0);
}
