use autodiff_core::prelude::*;

#[differentiable]
#[derive(Clone)]
pub struct Q {
    pub b: [f64; 2],
    pub z: f64,
}

// A vector of struct literals that read the parameters: the error names the literal.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(c: &[f64]) -> f64 {
    let qs = vec![Q { b: [c[0], c[1]], z: 0.0 }, Q { b: [c[2], c[3]], z: 0.0 }];
    qs[0].b[0] * qs[1].b[1]
}

fn main() {}
