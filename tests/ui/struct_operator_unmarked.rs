// Operators of a struct whose `impl` blocks are not marked `#[differentiable]`: their
// code is not visible to the macro, so each is an error at the operator that says what
// to mark.
use autodiff_core::prelude::*;
use std::ops::{AddAssign, Mul, Neg};

#[differentiable]
#[derive(Clone, Copy, Debug)]
pub struct C {
    pub re: f64,
    pub im: f64,
}

impl Mul for C {
    type Output = C;
    fn mul(self, o: C) -> C {
        C {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
}

impl Neg for C {
    type Output = C;
    fn neg(self) -> C {
        C {
            re: self.re,
            im: -self.im,
        }
    }
}

impl AddAssign for C {
    fn add_assign(&mut self, o: C) {
        self.re += o.re;
        self.im += o.im;
    }
}

#[autodiff_reverse(d_product, Duplicated, Active)]
fn product(zs: &[C]) -> f64 {
    let p = zs[0] * zs[1];
    p.re
}

#[autodiff_reverse(d_total, Duplicated, Active)]
fn total(zs: &[C]) -> f64 {
    let mut acc = zs[0];
    acc += zs[1];
    acc.im
}

#[autodiff_forward(d_flipped, Dual, Dual)]
fn flipped(zs: &[C]) -> f64 {
    let a = zs[1];
    let b = -a;
    b.re
}

fn main() {}
