// An `impl` block marked `#[differentiable]` with no method marked, of structs without
// `#[differentiable]` on their declarations: methods that return the struct from code
// other than float arithmetic (a `String` member cloned, another enum's value) are left as
// written, and those that are float arithmetic (`scaled`) compile without the struct's
// zero shadow, which only a differentiated call of them would ask for.
use autodiff_core::prelude::*;

pub struct Named {
    pub w: f64,
    pub name: String,
    pub hist: Vec<f64>,
}

#[differentiable]
impl Named {
    pub fn new(w: f64) -> Self {
        Self {
            w,
            name: String::from("a"),
            hist: Vec::new(),
        }
    }
    pub fn renamed(&self, s: f64) -> Self {
        Named {
            w: self.w * s,
            name: self.name.clone(),
            hist: self.hist.clone(),
        }
    }
    pub fn value(&self, x: f64) -> f64 {
        self.w * x
    }
}

#[derive(Clone, Copy)]
pub enum Kind {
    A,
    B,
}

pub struct K {
    pub k: Kind,
    pub a: f64,
}

#[differentiable]
impl K {
    pub fn with(a: f64) -> K {
        let k = if a > 0.0 { Kind::A } else { Kind::B };
        K { k, a }
    }
    pub fn get(&self, x: f64) -> f64 {
        match self.k {
            Kind::A => self.a * x,
            Kind::B => x,
        }
    }
}

pub struct P {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl P {
    pub fn scaled(&self, s: f64) -> P {
        P {
            x: self.x * s,
            y: self.y * s,
        }
    }
}

fn main() {
    assert_eq!(Named::new(2.0).renamed(2.0).value(1.0), 4.0);
    assert_eq!(K::with(1.0).get(1.0), 1.0);
    assert_eq!(P { x: 1.0, y: 2.0 }.scaled(2.0).y, 4.0);
}
