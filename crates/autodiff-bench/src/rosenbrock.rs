//! The extended Rosenbrock function `Σ (1 - x_i)² + 100 (x_{i+1} - x_i²)²`.

use autodiff_core::prelude::*;

/// The primal, with its generated gradient `rosenbrock_grad(x, dx, dret) -> f`
/// (`dx += dret · ∇f(x)`).
#[autodiff_reverse(rosenbrock_grad, Duplicated, Active)]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

/// The same function written with iterators (`zip` over `x` and `x[1..]`), as a user
/// might prefer; its generated gradient is `rosenbrock_iter_grad`.
#[autodiff_reverse(rosenbrock_iter_grad, Duplicated, Active)]
pub fn rosenbrock_iter(x: &[f64]) -> f64 {
    x.iter()
        .zip(&x[1..])
        .map(|(&a, &b)| {
            let u = 1.0 - a;
            let v = b - a * a;
            u * u + 100.0 * v * v
        })
        .sum()
}

/// The same function generic over the float type, with its constants written as
/// `T::one()` and `T::from(100.0)`; its generated gradient is `rosenbrock_generic_grad`.
#[autodiff_reverse(rosenbrock_generic_grad, Duplicated, Active)]
pub fn rosenbrock_generic<T: Real>(x: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..x.len() - 1 {
        let a = T::one() - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + T::from(100.0).unwrap() * b * b;
    }
    s
}

/// Hand-written gradient, tuned: the value by [`rosenbrock`], then each `g[i]` gathered
/// from its two terms in one loop without a carried dependency (so it vectorizes). Adds
/// `∇f(x)` into `g` and returns `f(x)`.
pub fn rosenbrock_grad_hand(x: &[f64], g: &mut [f64]) -> f64 {
    let n = x.len();
    let g = &mut g[..n];
    let s = rosenbrock(x);
    if n < 2 {
        return s;
    }
    g[0] += -2.0 * (1.0 - x[0]) - 400.0 * (x[1] - x[0] * x[0]) * x[0];
    for ((gi, w), &xn) in g[1..n - 1].iter_mut().zip(x.windows(2)).zip(&x[2..]) {
        let (xp, xi) = (w[0], w[1]);
        *gi += 200.0 * (xi - xp * xp) - 2.0 * (1.0 - xi) - 400.0 * (xn - xi * xi) * xi;
    }
    g[n - 1] += 200.0 * (x[n - 1] - x[n - 2] * x[n - 2]);
    s
}

/// Hand-written gradient in the primal's own loop, scattering into `g[i]` and `g[i + 1]`
/// (what a reverse sweep does). Adds `∇f(x)` into `g` and returns `f(x)`.
pub fn rosenbrock_grad_hand_loop(x: &[f64], g: &mut [f64]) -> f64 {
    let n = x.len();
    assert_eq!(g.len(), n);
    let mut s = 0.0;
    for i in 0..n - 1 {
        let xi = x[i];
        let a = 1.0 - xi;
        let b = x[i + 1] - xi * xi;
        s += a * a + 100.0 * b * b;
        g[i] += -2.0 * a - 400.0 * b * xi;
        g[i + 1] += 200.0 * b;
    }
    s
}

/// The gradient into `g` (overwritten), whose generated forward companion is the
/// Hessian-vector product: `rosenbrock_hvp(x, v, g, hv)` sets `g = ∇f(x)`,
/// `hv = H(x)·v` (forward over reverse).
#[autodiff_forward(rosenbrock_hvp, Dual, Dual)]
pub fn rosenbrock_gradient(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    rosenbrock_grad(x, g, 1.0);
}

/// Hand-written Hessian-vector product: sets `g = ∇f(x)`, `hv = H(x)·v`, returns `f(x)`.
/// The Hessian is tridiagonal: `H_ii += 2 + 1200x_i² - 400x_{i+1}`, `H_{i+1,i+1} += 200`,
/// `H_{i,i+1} = H_{i+1,i} = -400x_i`.
pub fn rosenbrock_hvp_hand(x: &[f64], v: &[f64], g: &mut [f64], hv: &mut [f64]) -> f64 {
    let n = x.len();
    let (v, g, hv) = (&v[..n], &mut g[..n], &mut hv[..n]);
    g.fill(0.0);
    hv.fill(0.0);
    let mut s = 0.0;
    for i in 0..n - 1 {
        let (xi, xn) = (x[i], x[i + 1]);
        let a = 1.0 - xi;
        let b = xn - xi * xi;
        s += a * a + 100.0 * b * b;
        g[i] += -2.0 * a - 400.0 * b * xi;
        g[i + 1] += 200.0 * b;
        let hii = 2.0 + 1200.0 * xi * xi - 400.0 * xn;
        let hin = -400.0 * xi;
        hv[i] += hii * v[i] + hin * v[i + 1];
        hv[i + 1] += hin * v[i] + 200.0 * v[i + 1];
    }
    s
}

/// The benchmark input: `n` values in `[-1.2, 1.2)`.
pub fn input(n: usize) -> Vec<f64> {
    crate::pseudo_random(n, n as u64, -1.2, 1.2)
}
