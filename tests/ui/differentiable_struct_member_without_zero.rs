// A member of a `#[differentiable]` struct needs a zero (floats, buffers, marked structs)
// or a copy (`Clone`) in the struct's zero shadow.
use autodiff_core::prelude::*;

struct Handle;

#[differentiable]
struct Model {
    w: Vec<f64>,
    h: Handle,
}

fn main() {
    let m = Model { w: vec![1.0], h: Handle };
    let _ = (m.w, m.h);
}
