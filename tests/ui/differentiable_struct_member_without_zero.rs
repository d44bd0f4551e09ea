// A member of a `#[differentiable]` struct needs a zero: a struct it holds must be marked
// too, even when it is `Clone` (a copy of its floats would be a wrong shadow).
use autodiff_core::prelude::*;

#[derive(Clone)]
struct Layer {
    w: Vec<f64>,
}

#[differentiable]
struct Model {
    layer: Layer,
    b: f64,
}

fn main() {
    let m = Model {
        layer: Layer { w: vec![1.0] },
        b: 0.5,
    };
    let _ = (m.layer.w, m.b);
}
