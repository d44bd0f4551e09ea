use autodiff_core::prelude::*;
use std::ops::{BitXor, Mul};

#[differentiable]
#[derive(Clone, Copy, Debug)]
pub struct C {
    pub re: f64,
    pub im: f64,
}

#[differentiable]
impl Mul<f64> for C {
    type Output = C;
    fn mul(self, s: f64) -> C {
        C {
            re: self.re * s,
            im: self.im * s,
        }
    }
}

impl Mul<C> for f64 {
    type Output = C;
    fn mul(self, z: C) -> C {
        z * self
    }
}

impl BitXor for C {
    type Output = f64;
    fn bitxor(self, o: C) -> f64 {
        self.re * o.im - self.im * o.re
    }
}

// An operator that a block cannot make differentiable: its body is not visible to the
// macro, and a float's rule would be wrong.
#[autodiff_forward(d_cross, Dual, Dual)]
fn cross(zs: &[C]) -> f64 {
    let a = zs[0];
    a ^ zs[1]
}

// A float on the left, whose block (`impl Mul<C> for f64`) is not marked: an error at the
// operator that says to mark it.
#[autodiff_reverse(d_scaled, Duplicated, Active)]
fn scaled(zs: &[C]) -> f64 {
    let a = zs[0];
    let b = 2.0 * a;
    b.re
}

fn main() {}
