//! The reference functions of the core engine, each in forward and reverse mode, against
//! num-dual, analytic derivatives and central finite differences.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::testing::{check_consistent, check_directional, check_gradient, close};
use num_dual::{Dual64, DualNum as _};
use num_traits::Float;
use proptest::prelude::*;

/// Directional derivative of `f` at `x` along `v` with num-dual.
fn dual_jvp(f: impl Fn(&[Dual64]) -> Dual64, x: &[f64], v: &[f64]) -> f64 {
    let xs: Vec<Dual64> = x.iter().zip(v).map(|(&a, &b)| Dual64::new(a, b)).collect();
    f(&xs).eps
}

/// Gradient of `f` at `x` with num-dual, one direction per component.
fn dual_grad(f: impl Fn(&[Dual64]) -> Dual64, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let mut v = vec![0.0; x.len()];
            v[i] = 1.0;
            dual_jvp(&f, x, &v)
        })
        .collect()
}

fn assert_all_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        close(&format!("component {i}"), *a, *b, tol).unwrap();
    }
}

// ------------------------------------------------------------------ Rosenbrock

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

fn rosen_grad_analytic(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut g = vec![0.0; n];
    for i in 0..n - 1 {
        g[i] += -2.0 * (1.0 - x[i]) - 400.0 * x[i] * (x[i + 1] - x[i] * x[i]);
        g[i + 1] += 200.0 * (x[i + 1] - x[i] * x[i]);
    }
    g
}

fn rosen_grad(x: &[f64]) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    let f = d_rosen(x, &mut g, 1.0);
    assert_eq!(f, rosen(x));
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rosenbrock_both_modes(x in prop::collection::vec(-2.0..2.0f64, 2..12), v in prop::collection::vec(-1.0..1.0f64, 12)) {
        let v = &v[..x.len()];
        assert_all_close(&rosen_grad(&x), &rosen_grad_analytic(&x), 1e-12);
        let (f, df) = rosen_jvp(&x, v);
        prop_assert_eq!(f, rosen(&x));
        let want: f64 = rosen_grad_analytic(&x).iter().zip(v).map(|(a, b)| a * b).sum();
        close("jvp", df, want, 1e-12).unwrap();
    }
}

#[test]
fn reverse_seed_scales_and_shadow_accumulates() {
    let x = [0.5, -1.0, 1.5];
    let mut g = vec![1.0; 3];
    d_rosen(&x, &mut g, 2.0);
    let want = rosen_grad_analytic(&x);
    for i in 0..3 {
        close("accumulated", g[i], 1.0 + 2.0 * want[i], 1e-12).unwrap();
    }
}

// ------------------------------------------------------------------ softmax cross-entropy

#[autodiff_reverse(d_xent, Duplicated, Const, Active)]
#[autodiff_forward(xent_jvp, Dual, Const, Dual)]
fn xent(z: &[f64], y: usize) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
    s.ln() + m - z[y]
}

fn xent_dual(z: &[Dual64], y: usize) -> Dual64 {
    let s = z.iter().fold(Dual64::from(0.0), |acc, &v| acc + v.exp());
    s.ln() - z[y]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn softmax_cross_entropy(z in prop::collection::vec(-5.0..5.0f64, 1..10), y in 0usize..10, seed in -2.0..2.0f64) {
        let y = y % z.len();
        let mut g = vec![0.0; z.len()];
        let f = d_xent(&z, &mut g, y, seed);
        close("primal", f, xent(&z, y), 0.0).unwrap();
        let want = dual_grad(|zd| xent_dual(zd, y), &z);
        let want: Vec<f64> = want.iter().map(|w| w * seed).collect();
        assert_all_close(&g, &want, 1e-10);
        // Analytic: softmax(z) - e_y.
        let p: Vec<f64> = { let e: Vec<f64> = z.iter().map(|v| v.exp()).collect(); let s: f64 = e.iter().sum(); e.iter().map(|v| v / s).collect() };
        for i in 0..z.len() {
            let a = p[i] - if i == y { 1.0 } else { 0.0 };
            close("analytic", g[i], seed * a, 1e-10).unwrap();
        }
        let v: Vec<f64> = (0..z.len()).map(|i| (i as f64 * 0.7).sin()).collect();
        let (_, df) = xent_jvp(&z, &v, y);
        close("jvp", df, dual_jvp(|zd| xent_dual(zd, y), &z, &v), 1e-10).unwrap();
    }
}

// ------------------------------------------------------------------ Horner, generic

#[autodiff_reverse(d_horner, Duplicated, Active, Active)]
#[autodiff_forward(horner_jvp, Dual, Dual, Dual)]
fn horner<T: Float>(c: &[T], x: T) -> T {
    let mut acc = T::zero();
    for k in (0..c.len()).rev() {
        acc = acc * x + c[k];
    }
    acc
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn horner_f64_and_f32(c in prop::collection::vec(-2.0..2.0f64, 1..8), x in -1.5..1.5f64) {
        // d/dx p(x) = Σ k c_k x^(k-1); d/dc_k = x^k.
        let dp: f64 = (1..c.len()).map(|k| k as f64 * c[k] * x.powi(k as i32 - 1)).sum();
        let mut gc = vec![0.0; c.len()];
        let (p, gx) = d_horner(&c, &mut gc, x, 1.0);
        close("primal", p, horner(&c, x), 0.0).unwrap();
        close("d/dx", gx, dp, 1e-12).unwrap();
        for (k, g) in gc.iter().enumerate() {
            close("d/dc", *g, x.powi(k as i32), 1e-12).unwrap();
        }
        let dc: Vec<f64> = (0..c.len()).map(|k| 0.5 - k as f64 * 0.1).collect();
        let (_, t) = horner_jvp(&c, &dc, x, 1.0);
        let want: f64 = dp + (0..c.len()).map(|k| dc[k] * x.powi(k as i32)).sum::<f64>();
        close("jvp", t, want, 1e-12).unwrap();

        let c32: Vec<f32> = c.iter().map(|&v| v as f32).collect();
        let x32 = x as f32;
        let mut gc32 = vec![0.0f32; c.len()];
        let (_, gx32) = d_horner(&c32, &mut gc32, x32, 1.0f32);
        let dp32: f32 = (1..c32.len()).map(|k| k as f32 * c32[k] * x32.powi(k as i32 - 1)).sum();
        prop_assert!((gx32 - dp32).abs() <= 1e-4 * (1.0 + dp32.abs()));
    }
}

// ------------------------------------------------------------------ RK4 of a pendulum

#[differentiable]
fn pendulum(u: f64, v: f64, a: f64) -> (f64, f64) {
    (v, -a * u.sin())
}

#[autodiff_reverse(d_rk4, Active, Active, Active, Const, Active)]
#[autodiff_forward(rk4_jvp, Dual, Dual, Dual, Const, Dual)]
fn rk4(u0: f64, v0: f64, a: f64, steps: usize) -> f64 {
    let h = 0.01;
    let mut y = [u0, v0];
    for _ in 0..steps {
        let (k1u, k1v) = pendulum(y[0], y[1], a);
        let (k2u, k2v) = pendulum(y[0] + 0.5 * h * k1u, y[1] + 0.5 * h * k1v, a);
        let (k3u, k3v) = pendulum(y[0] + 0.5 * h * k2u, y[1] + 0.5 * h * k2v, a);
        let (k4u, k4v) = pendulum(y[0] + h * k3u, y[1] + h * k3v, a);
        y[0] += h / 6.0 * (k1u + 2.0 * k2u + 2.0 * k3u + k4u);
        y[1] += h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
    }
    y[0] * y[0] + y[1]
}

fn rk4_dual(u0: Dual64, v0: Dual64, a: Dual64, steps: usize) -> Dual64 {
    let h = 0.01;
    let f = |u: Dual64, v: Dual64| (v, -a * u.sin());
    let (mut u, mut v) = (u0, v0);
    for _ in 0..steps {
        let (k1u, k1v) = f(u, v);
        let (k2u, k2v) = f(u + k1u * (0.5 * h), v + k1v * (0.5 * h));
        let (k3u, k3v) = f(u + k2u * (0.5 * h), v + k2v * (0.5 * h));
        let (k4u, k4v) = f(u + k3u * h, v + k3v * h);
        u += (k1u + k2u * 2.0 + k3u * 2.0 + k4u) * (h / 6.0);
        v += (k1v + k2v * 2.0 + k3v * 2.0 + k4v) * (h / 6.0);
    }
    u * u + v
}

#[test]
fn rk4_integrator_100_steps() {
    for &(u0, v0, a) in &[(0.3, -0.2, 1.5), (1.0, 0.5, 9.81), (-0.7, 0.0, 0.3)] {
        let x = [u0, v0, a];
        let oracle = |xd: &[Dual64]| rk4_dual(xd[0], xd[1], xd[2], 100);
        let want = dual_grad(oracle, &x);
        let (f, gu, gv, ga) = d_rk4(u0, v0, a, 100, 1.0);
        close("primal", f, rk4(u0, v0, a, 100), 0.0).unwrap();
        assert_all_close(&[gu, gv, ga], &want, 1e-10);
        let v = [0.3, -0.5, 0.2];
        let (_, t) = rk4_jvp(u0, v[0], v0, v[1], a, v[2], 100);
        close("jvp", t, dual_jvp(oracle, &x, &v), 1e-10).unwrap();
    }
}

// ------------------------------------------------------------------ Newton's sqrt

#[autodiff_reverse(d_newton_sqrt, Active, Active)]
#[autodiff_forward(newton_sqrt_jvp, Dual, Dual)]
fn newton_sqrt(a: f64) -> f64 {
    let mut x = a;
    let mut it = 0;
    while (x * x - a).abs() > 1e-12 * a && it < 100 {
        x = 0.5 * (x + a / x);
        it += 1;
    }
    x
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn newton_iteration_derivative(a in 0.1..100.0f64) {
        // Differentiating through the iterations converges to the derivative of sqrt.
        let (s, g) = d_newton_sqrt(a, 1.0);
        close("primal", s, newton_sqrt(a), 0.0).unwrap();
        close("converged", s, a.sqrt(), 1e-12).unwrap();
        close("reverse", g, 0.5 / a.sqrt(), 1e-9).unwrap();
        let (_, t) = newton_sqrt_jvp(a, 1.0);
        close("forward", t, 0.5 / a.sqrt(), 1e-9).unwrap();
        close("modes agree", t, g, 1e-12).unwrap();
    }
}

// ------------------------------------------------------------------ piecewise

#[autodiff_reverse(d_piecewise, Active, Const, Active)]
#[autodiff_forward(piecewise_jvp, Dual, Const, Dual)]
fn piecewise(x: f64, k: i32) -> f64 {
    if x < -1.0 {
        return -x * x;
    }
    let y = match k {
        0 => x.sin(),
        1 | 2 => x * 3.0,
        3..=5 => x.exp(),
        _ => x,
    };
    if y > 10.0 {
        return 10.0 + y.ln();
    }
    y * 2.0
}

fn piecewise_dual(x: Dual64, k: i32) -> Dual64 {
    if x.re < -1.0 {
        return -x * x;
    }
    let y = match k {
        0 => x.sin(),
        1 | 2 => x * 3.0,
        3..=5 => x.exp(),
        _ => x,
    };
    if y.re > 10.0 {
        return y.ln() + 10.0;
    }
    y * 2.0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn piecewise_match_and_early_return(x in -3.0..4.0f64, k in 0i32..8) {
        let want = piecewise_dual(Dual64::new(x, 1.0), k).eps;
        let (f, g) = d_piecewise(x, k, 1.0);
        close("primal", f, piecewise(x, k), 0.0).unwrap();
        close("reverse", g, want, 1e-12).unwrap();
        let (_, t) = piecewise_jvp(x, 1.0, k);
        close("forward", t, want, 1e-12).unwrap();
    }
}

// ------------------------------------------------------------------ a model with a method

struct Model {
    w: Vec<f64>,
    b: f64,
}

impl Model {
    #[differentiable]
    fn predict(&self, x: &[f64]) -> f64 {
        let mut s = self.b;
        for i in 0..x.len() {
            s += self.w[i] * x[i];
        }
        s.tanh()
    }
}

#[autodiff_reverse(d_loss, Duplicated, Const, Const, Active)]
#[autodiff_forward(loss_jvp, Dual, Const, Const, Dual)]
fn loss(m: &Model, xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    let mut l = 0.0;
    for i in 0..ys.len() {
        let r = m.predict(&xs[i]) - ys[i];
        l += r * r;
    }
    l / ys.len() as f64
}

fn loss_of_params(p: &[f64], xs: &[Vec<f64>], ys: &[f64]) -> f64 {
    let m = Model {
        w: p[..p.len() - 1].to_vec(),
        b: p[p.len() - 1],
    };
    loss(&m, xs, ys)
}

#[test]
fn model_loss_through_a_method() {
    let xs: Vec<Vec<f64>> = (0..7)
        .map(|i| (0..3).map(|j| ((i * 3 + j) as f64 * 0.37).sin()).collect())
        .collect();
    let ys: Vec<f64> = (0..7).map(|i| (i as f64 * 0.5).cos() * 0.5).collect();
    let p = [0.3, -0.2, 0.5, 0.1];
    let m = Model {
        w: p[..3].to_vec(),
        b: p[3],
    };
    let mut dm = Model {
        w: vec![0.0; 3],
        b: 0.0,
    };
    let l = d_loss(&m, &mut dm, &xs, &ys, 1.0);
    close("primal", l, loss(&m, &xs, &ys), 0.0).unwrap();
    let g: Vec<f64> = dm.w.iter().copied().chain([dm.b]).collect();
    check_gradient(|q| loss_of_params(q, &xs, &ys), |_| g.clone(), &p, 1e-7).unwrap();
    let tm = Model {
        w: vec![1.0, -0.5, 0.25],
        b: 2.0,
    };
    let (_, t) = loss_jvp(&m, &tm, &xs, &ys);
    let v = [1.0, -0.5, 0.25, 2.0];
    check_directional(|q| loss_of_params(q, &xs, &ys), |_, _| t, &p, &[&v], 1e-7).unwrap();
    check_consistent(|_| g.clone(), |_, _| t, &p, &v, 1e-12).unwrap();
}
