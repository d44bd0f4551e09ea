// A function may return a struct (`-> V2`, `-> Self`) as its last expression, when the
// struct's declaration is marked `#[differentiable]`. An early `return` of a struct, a
// struct in a tuple, and a struct a call returned assigned again whole under a name bound
// twice are compile errors that say so.
use autodiff_core::prelude::*;

#[differentiable]
struct V2 {
    x: f64,
    y: f64,
}

impl V2 {
    #[differentiable]
    fn new(x: f64, y: f64) -> Self {
        Self { x, y }
    }

    #[differentiable]
    fn add(&self, o: &V2) -> V2 {
        V2 {
            x: self.x + o.x,
            y: self.y + o.y,
        }
    }
}

#[differentiable]
fn clamped(a: f64) -> V2 {
    if a > 1.0 {
        return V2 { x: 1.0, y: a };
    }
    V2 { x: a, y: a }
}

#[differentiable]
fn with_norm(a: f64) -> (V2, f64) {
    let v = V2 { x: a, y: 2.0 * a };
    (v, a * a)
}

// A struct a call returned, bound with `let mut` under a name bound twice in the function
// (the macro cannot tell which binding holds a struct), assigned again whole.
#[autodiff_reverse(d_rebound, Duplicated, Active)]
fn rebound(x: &[f64]) -> f64 {
    let acc = x[0];
    let mut acc = V2::new(acc, x[1]);
    acc = acc.add(&V2::new(x[1], 1.0));
    acc.x * acc.y
}

fn main() {}
