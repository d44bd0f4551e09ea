// A helper generic over its arrays' length is differentiated once from a caller at one
// length; differentiating it again (H·v through the caller) is not supported.
use autodiff_core::prelude::*;

#[differentiable]
fn dot<const N: usize>(a: &[f64; N], b: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += a[i] * b[i];
    }
    s
}

#[autodiff_reverse(d_norm2, Duplicated, Active)]
fn norm2(x: &[f64; 3]) -> f64 {
    dot(x, x)
}

#[autodiff_forward(hvp_norm2, Dual, Dual)]
fn grad_norm2(x: &[f64; 3], g: &mut [f64; 3]) {
    *g = [0.0; 3];
    d_norm2(x, g, 1.0);
}

fn main() {
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    hvp_norm2(&[1.0, 2.0, 3.0], &[1.0, 0.0, 0.0], &mut g, &mut hv);
}
