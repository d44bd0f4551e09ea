//! Minimal reproductions of bugs found in the engine, kept as regression tests.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::testing::{check_directional, check_gradient};

fn grad_of(d: fn(&[f64], &mut [f64], f64) -> f64) -> impl Fn(&[f64]) -> Vec<f64> {
    move |x| {
        let mut g = vec![0.0; x.len()];
        d(x, &mut g, 1.0);
        g
    }
}

/// Nested `for` loops in reverse mode recorded the inner range before iterating it.
#[autodiff_reverse(d_nested, Duplicated, Active)]
#[autodiff_forward(nested_jvp, Dual, Dual)]
fn nested(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        for j in 0..x.len() {
            s += x[i] * x[j].sin();
        }
    }
    s
}

/// `let ys = ...collect();` moved the collected buffer, which its adjoint still needed.
#[autodiff_reverse(d_collected, Duplicated, Active)]
#[autodiff_forward(collected_jvp, Dual, Dual)]
fn collected(x: &[f64]) -> f64 {
    let ys: Vec<f64> = x.iter().map(|v| v * v + 1.0).collect();
    let mut p = 1.0;
    for y in ys.iter() {
        p *= y.ln();
    }
    p
}

/// A closure whose body is a compound assignment was rejected.
#[autodiff_reverse(d_for_each_sum, Duplicated, Active)]
#[autodiff_forward(for_each_sum_jvp, Dual, Dual)]
fn for_each_sum(x: &[f64]) -> f64 {
    let mut s = 0.0;
    x.iter().for_each(|v| s += v.exp());
    s
}

#[test]
fn reverse_and_forward_agree_with_finite_differences() {
    let x = [0.3, -1.1, 0.8, 2.0];
    let v = [0.5, -0.25, 1.0, 0.75];
    check_gradient(nested, grad_of(d_nested), &x, 1e-7).unwrap();
    check_directional(nested, |x, v| nested_jvp(x, v).1, &x, &[&v], 1e-7).unwrap();
    check_gradient(collected, grad_of(d_collected), &x, 1e-7).unwrap();
    check_directional(collected, |x, v| collected_jvp(x, v).1, &x, &[&v], 1e-7).unwrap();
    check_gradient(for_each_sum, grad_of(d_for_each_sum), &x, 1e-7).unwrap();
    check_directional(
        for_each_sum,
        |x, v| for_each_sum_jvp(x, v).1,
        &x,
        &[&v],
        1e-7,
    )
    .unwrap();
}
