// A method of an `impl` block marked `#[differentiable]` that returns the block's struct
// is differentiated, but the struct's declaration gives it no zero shadow: the error is
// at the call, not at the block (which compiles as long as nothing calls it so).
use autodiff_core::prelude::*;

#[derive(Clone, Copy)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl V2 {
    pub fn sub(&self, o: &V2) -> V2 {
        V2 {
            x: self.x - o.x,
            y: self.y - o.y,
        }
    }
    pub fn dot(&self, o: &V2) -> f64 {
        self.x * o.x + self.y * o.y
    }
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let a = V2 { x, y: 2.0 };
    let b = V2 { x: 1.0, y: x };
    a.sub(&b).dot(&b)
}

fn main() {
    let _ = d_f(1.0, 1.0);
}
