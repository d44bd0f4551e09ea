// Operators that `#[differentiable]` on their block cannot make differentiable: `self`
// taken as `mut self` (a struct's or a float's), and a right-hand side that is neither
// the struct nor a float.
use autodiff_core::prelude::*;
use std::ops::{Add, Mul, Sub};

#[differentiable]
#[derive(Clone, Copy, Debug)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Add for V2 {
    type Output = V2;
    fn add(mut self, o: V2) -> V2 {
        self.x += o.x;
        self.y += o.y;
        self
    }
}

#[differentiable]
impl Mul<usize> for V2 {
    type Output = V2;
    fn mul(self, k: usize) -> V2 {
        V2 {
            x: self.x * k as f64,
            y: self.y * k as f64,
        }
    }
}

#[differentiable]
impl Sub<V2> for f64 {
    type Output = V2;
    fn sub(mut self, v: V2) -> V2 {
        self += 1.0;
        V2 {
            x: self - v.x,
            y: self - v.y,
        }
    }
}

fn main() {}
