// Floats inside a `Box` (or `Rc`, `RefCell`, `Option`) cannot be differentiated there.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_square, Duplicated, Active)]
fn square(x: &Box<f32>) -> f32 {
    **x * **x
}

fn main() {
    let _ = square(&Box::new(2.0));
}
