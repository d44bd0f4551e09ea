// Operators that `#[differentiable]` on their block cannot make differentiable: `self`
// taken as `mut self`, and a right-hand side that is neither the struct nor a float.
use autodiff_core::prelude::*;
use std::ops::{Add, Mul};

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

fn main() {}
