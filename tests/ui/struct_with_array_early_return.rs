use autodiff_core::prelude::*;

#[differentiable]
#[derive(Clone, Copy, Debug)]
pub struct Pose {
    pub q: [f64; 2],
    pub t: f64,
}

#[autodiff_forward(d_make, Dual, Dual)]
fn make(x: &[f64]) -> Pose {
    if x[0] > 1.0 {
        let p = Pose { q: [x[0], x[1]], t: 0.0 };
        return p;
    }
    Pose { q: [x[1], x[0]], t: x[0] }
}

fn main() {
    let _ = make(&[1.0, 2.0]);
}
