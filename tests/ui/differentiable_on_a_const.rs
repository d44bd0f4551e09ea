// `#[differentiable]` gives functions their derivatives and structs and enums their zero
// shadows; a constant has neither.
use autodiff_core::prelude::*;

#[differentiable]
const SCALE: f64 = 2.0;

fn main() {
    assert_eq!(SCALE, 2.0);
}
