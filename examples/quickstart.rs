//! `cargo run --release --example quickstart`: a short tour. Each derivative is printed
//! beside a central finite difference.

use autodiff_core::prelude::*;
use autodiff_core::testing::{central_directional, central_gradient};

/// Rosenbrock's function: a loop over a slice.
#[autodiff_reverse(d_rosen, Duplicated, Active)]
#[autodiff_forward(rosen_jvp, Dual, Dual)]
fn rosen(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

/// Two scalars in, one out: reverse mode returns both partial derivatives.
#[autodiff_reverse(d_polar, Active, Active, Active)]
fn polar(r: f64, theta: f64) -> f64 {
    let (s, c) = theta.sin_cos();
    (r * c).hypot(r * s * 0.5).ln()
}

/// A softmax cross-entropy written with iterators, differentiated with respect to the
/// logits; the label is a constant.
#[autodiff_reverse(d_xent, Duplicated, Const, Active)]
fn xent(z: &[f64], label: usize) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
    s.ln() + m - z[label]
}

fn main() {
    let x = [1.5, 2.0, -0.5];
    println!("Rosenbrock at {x:?}: f = {}", rosen(&x));

    // Reverse mode: one sweep gives the whole gradient, added into `g`.
    let mut g = [0.0; 3];
    d_rosen(&x, &mut g, 1.0);
    println!("  gradient          {g:?}");
    println!(
        "  finite difference {:?}",
        central_gradient(rosen, &x, 1e-7)
    );

    // Forward mode: the derivative along a direction.
    let v = [1.0, -1.0, 0.5];
    let (_, dv) = rosen_jvp(&x, &v);
    println!(
        "  along {v:?}: {dv:.6} (finite difference {:.6})",
        central_directional(rosen, &x, &v, 1e-6)
    );

    let (f, dr, dtheta) = d_polar(2.0, 0.7, 1.0);
    let fd = central_gradient(|p| polar(p[0], p[1]), &[2.0, 0.7], 1e-7);
    println!(
        "polar(2, 0.7) = {f:.6}: d/dr = {dr:.6}, d/dθ = {dtheta:.6} (finite differences {:.6}, {:.6})",
        fd[0], fd[1]
    );

    let z = [0.5, -1.0, 2.0, 0.0];
    let mut gz = [0.0; 4];
    let loss = d_xent(&z, &mut gz, 2, 1.0);
    println!("cross-entropy of {z:?} for label 2 = {loss:.6}");
    println!("  gradient          {gz:?}");
    println!(
        "  finite difference {:?}",
        central_gradient(|z| xent(z, 2), &z, 1e-7)
    );

    let worst = g
        .iter()
        .zip(central_gradient(rosen, &x, 1e-7))
        .chain(gz.iter().zip(central_gradient(|z| xent(z, 2), &z, 1e-7)))
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-6,
        "a derivative disagrees with finite differences"
    );
    println!("all derivatives agree with finite differences (worst relative gap {worst:.1e})");
}
