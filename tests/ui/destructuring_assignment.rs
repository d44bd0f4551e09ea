// A destructuring assignment of whole buffers is refused at the buffer, and one of an
// array's elements from anything but an array written in place at the value.
#![allow(unused_assignments)]
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut u = x.to_vec();
    let mut v = vec![0.0; x.len()];
    let mut t = 0.0;
    for i in 0..x.len() {
        v[i] = u[i] * 2.0;
        (u, v) = (v, u);
        (t, _) = (t + u[i], 1.0);
    }
    t
}

#[autodiff_forward(g_jvp, Dual, Dual)]
fn g(x: &[f64]) -> f64 {
    let w = [x[0], x[1]];
    let (mut p, mut q) = (0.0, 0.0);
    [p, q] = w;
    p * q
}

fn main() {}
