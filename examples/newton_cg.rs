//! Truncated-Newton (Newton-CG) minimisation of the n-dimensional (extended) Rosenbrock
//! function, n = 10,000, from the usual starting point (-1.2, 1, -1.2, 1, ...). Conjugate gradients solve `H p = -∇f` with Hessian-vector products (forward
//! mode over the reverse companion); the Hessian is never formed.
//!
//! `cargo run --release --example newton_cg`

use autodiff_core::ObjectiveHvp;
use autodiff_core::prelude::*;

/// The extended Rosenbrock function (Moré, Garbow and Hillstrom, problem 21): a sum of
/// `(1 - x₂ᵢ)² + 100 (x₂ᵢ₊₁ - x₂ᵢ²)²` over pairs. Its minimum is 0, at `x = (1, .., 1)`.
#[autodiff_reverse(d_rosen, Duplicated, Active)]
fn rosen(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..x.len() / 2 {
        let i = 2 * k;
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `H(x)·v` into `hv`; `scratch` receives the gradient, which is not needed here.
fn hess_vec(x: &[f64], v: &[f64], scratch: &mut [f64], hv: &mut [f64]) {
    scratch.fill(0.0);
    hv.fill(0.0);
    d_rosen::value_gradient_hvp(x, v, scratch, hv);
}

/// `‖z + τ d‖ = radius` for the `τ ≥ 0` that reaches the trust-region boundary.
fn to_boundary(z: &[f64], d: &[f64], radius: f64) -> Vec<f64> {
    let (a, b, c) = (dot(d, d), 2.0 * dot(z, d), dot(z, z) - radius * radius);
    let tau = (-b + (b * b - 4.0 * a * c).max(0.0).sqrt()) / (2.0 * a);
    z.iter().zip(d).map(|(zi, di)| zi + tau * di).collect()
}

/// Steihaug's truncated conjugate gradients: approximately minimises the quadratic model
/// `g·p + ½ p·H p` inside `‖p‖ ≤ radius`, stopping at the relative residual `eta`, at the
/// boundary, or along a direction of non-positive curvature. Returns `p` and the number
/// of CG steps (one Hessian-vector product each).
fn steihaug_cg(x: &[f64], g: &[f64], radius: f64, eta: f64) -> (Vec<f64>, usize) {
    let n = x.len();
    let mut z = vec![0.0; n];
    let mut r = g.to_vec();
    let mut d: Vec<f64> = g.iter().map(|v| -v).collect();
    let mut hd = vec![0.0; n];
    let mut scratch = vec![0.0; n];
    let tol = eta * norm(g);
    let mut rr = dot(&r, &r);
    for step in 1..=n {
        hess_vec(x, &d, &mut scratch, &mut hd);
        let curvature = dot(&d, &hd);
        if curvature <= 0.0 {
            return (to_boundary(&z, &d, radius), step);
        }
        let alpha = rr / curvature;
        let z_next: Vec<f64> = z.iter().zip(&d).map(|(zi, di)| zi + alpha * di).collect();
        if norm(&z_next) >= radius {
            return (to_boundary(&z, &d, radius), step);
        }
        z = z_next;
        for i in 0..n {
            r[i] += alpha * hd[i];
        }
        let rr_new = dot(&r, &r);
        if rr_new.sqrt() <= tol {
            return (z, step);
        }
        let beta = rr_new / rr;
        for i in 0..n {
            d[i] = -r[i] + beta * d[i];
        }
        rr = rr_new;
    }
    (z, n)
}

fn main() {
    let n = 10_000;
    let mut x: Vec<f64> = (0..n)
        .map(|i| if i % 2 == 0 { -1.2 } else { 1.0 })
        .collect();
    let mut g = vec![0.0; n];
    println!("Newton-CG on the Rosenbrock function, n = {n}");
    println!("{:>4} {:>14} {:>12} {:>6}", "iter", "f", "|grad f|", "CG");
    let mut radius = 1.0;
    let mut hp = vec![0.0; n];
    let mut scratch = vec![0.0; n];
    for iter in 0..100 {
        g.fill(0.0);
        let f = d_rosen(&x, &mut g, 1.0);
        let gnorm = norm(&g);
        if gnorm < 1e-8 {
            println!("{iter:>4} {f:>14.6e} {gnorm:>12.3e}      -");
            println!("converged in {iter} iterations: |grad f| = {gnorm:.2e} < 1e-8");
            return;
        }
        let eta = gnorm.sqrt().min(0.5);
        let (p, steps) = steihaug_cg(&x, &g, radius, eta);
        println!("{iter:>4} {f:>14.6e} {gnorm:>12.3e} {steps:>6}");
        // Trust-region update: compare the actual decrease with the model's.
        hess_vec(&x, &p, &mut scratch, &mut hp);
        let predicted = -(dot(&g, &p) + 0.5 * dot(&p, &hp));
        let trial: Vec<f64> = x.iter().zip(&p).map(|(xi, pi)| xi + pi).collect();
        let rho = (f - rosen(&trial)) / predicted;
        let pnorm = norm(&p);
        if rho < 0.25 {
            radius = 0.25 * pnorm;
        } else if rho > 0.75 && pnorm >= 0.99 * radius {
            radius *= 2.0;
        }
        if rho > 0.1 {
            x = trial;
        }
    }
    panic!("Newton-CG did not converge in 100 iterations");
}
