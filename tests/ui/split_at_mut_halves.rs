// Two `&mut` halves of one buffer passed to one call.
use autodiff_core::prelude::*;

#[differentiable]
fn put(a: &[f64], ga: &mut [f64], gb: &mut [f64]) {
    ga[0] = a[0] * a[1];
    gb[0] = a[0];
}

#[autodiff_forward(f_jvp, Dual, Dual)]
fn f(z: &[f64], g: &mut [f64]) {
    let (ga, gb) = g.split_at_mut(1);
    put(z, ga, gb);
}

fn main() {}
