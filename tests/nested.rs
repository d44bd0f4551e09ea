//! Nested differentiation: Hessian-vector products (forward over reverse), second
//! derivatives (forward over forward), reverse over forward, batched forward mode and the
//! one-call helpers, against analytic formulas, finite differences of the gradient and
//! num-dual's second-order numbers.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::testing::close;
use num_dual::{Dual2_64, DualNum as _, HyperDual64};
use proptest::prelude::*;

mod nested_common;
use nested_common::{assert_all_close, fd_hvp, grad_of};

// ------------------------------------------------------------------ Rosenbrock

#[autodiff_reverse(d_rosen, Duplicated, Active)]
fn rosen(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

/// The pinned composition: the forward companion of a function that calls the reverse
/// companion is the Hessian-vector product.
#[autodiff_forward(hvp_rosen, Dual, Dual)]
fn grad_rosen(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_rosen(x, dx, 1.0);
}

fn rosen_hessian_analytic(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut h = vec![vec![0.0; n]; n];
    for i in 0..n - 1 {
        h[i][i] += 2.0 + 1200.0 * x[i] * x[i] - 400.0 * x[i + 1];
        h[i + 1][i + 1] += 200.0;
        h[i][i + 1] += -400.0 * x[i];
        h[i + 1][i] += -400.0 * x[i];
    }
    h
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn rosenbrock_hvp_and_hessian(
        x in prop::collection::vec(-2.0..2.0f64, 2..10),
        v in prop::collection::vec(-1.0..1.0f64, 10),
    ) {
        let n = x.len();
        let v = &v[..n];
        let h = rosen_hessian_analytic(&x);
        let want: Vec<f64> = (0..n).map(|i| (0..n).map(|j| h[i][j] * v[j]).sum()).collect();
        // The pinned composition.
        let mut g = vec![0.0; n];
        let mut hv = vec![0.0; n];
        hvp_rosen(&x, v, &mut g, &mut hv);
        assert_all_close("hvp", &hv, &want, 1e-10);
        assert_all_close("grad", &g, &autodiff_core::gradient::<d_rosen>(&x), 1e-12);
        // The helpers.
        assert_all_close("hvp helper", &autodiff_core::hvp::<d_rosen>(&x, v), &want, 1e-10);
        let hess = autodiff_core::hessian::<d_rosen>(&x);
        for i in 0..n {
            assert_all_close("hessian row", &hess[i], &h[i], 1e-10);
        }
        // A second opinion: finite differences of the gradient.
        let fd = fd_hvp(autodiff_core::gradient::<d_rosen>, &x, v);
        assert_all_close("fd hvp", &hv, &fd, 1e-4);
    }
}

// ------------------------------------------------------------------ softmax cross-entropy

#[autodiff_reverse(d_xent, Duplicated, Const, Active)]
fn xent(z: &[f64], y: usize) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
    s.ln() + m - z[y]
}

#[autodiff_forward(hvp_xent, Dual, Dual, Const)]
fn grad_xent(z: &[f64], dz: &mut [f64], y: usize) {
    dz.fill(0.0);
    d_xent(z, dz, y, 1.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn softmax_cross_entropy_hvp(
        z in prop::collection::vec(-4.0..4.0f64, 2..8),
        v in prop::collection::vec(-1.0..1.0f64, 8),
        y in 0usize..8,
    ) {
        let n = z.len();
        let y = y % n;
        let v = &v[..n];
        // H = diag(p) - p pᵀ for p = softmax(z), whatever y is.
        let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = z.iter().map(|a| (a - m).exp()).collect();
        let s: f64 = e.iter().sum();
        let p: Vec<f64> = e.iter().map(|a| a / s).collect();
        let pv: f64 = p.iter().zip(v).map(|(a, b)| a * b).sum();
        let want: Vec<f64> = (0..n).map(|i| p[i] * v[i] - p[i] * pv).collect();
        let mut g = vec![0.0; n];
        let mut hv = vec![0.0; n];
        hvp_xent(&z, v, &mut g, &mut hv, y);
        assert_all_close("hvp", &hv, &want, 1e-10);
        let grad = |z: &[f64]| {
            let mut g = vec![0.0; z.len()];
            d_xent(z, &mut g, y, 1.0);
            g
        };
        assert_all_close("fd hvp", &hv, &fd_hvp(grad, &z, v), 1e-5);
    }
}

// ------------------------------------------------------------------ the pinned cos(Σx²)

#[autodiff_reverse(d_cos_sq, Duplicated, Active)]
fn cos_sq(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += v * v;
    }
    s.cos()
}

#[autodiff_forward(hvp_cos_sq, Dual, Dual)]
fn grad_cos_sq(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_cos_sq(x, dx, 1.0);
}

#[test]
fn hvp_of_cos_of_sum_of_squares() {
    // g = cos(x²): g' = -2x sin(x²), g'' = -2 sin(x²) - 4x² cos(x²); at x = 2: s = 4.
    let (x, v) = ([2.0], [1.0]);
    let mut g = [0.0];
    let mut hv = [0.0];
    hvp_cos_sq(&x, &v, &mut g, &mut hv);
    let s: f64 = 4.0;
    close("g'", g[0], -4.0 * s.sin(), 1e-14).unwrap();
    close("g''", hv[0], -2.0 * s.sin() - 16.0 * s.cos(), 1e-13).unwrap();
}

// ------------------------------------------------------------------ tapes under nesting

/// Branches inside a loop: the reverse companion records values on tapes, which forward
/// over reverse carries with tangents.
#[autodiff_reverse(d_branchy, Duplicated, Active)]
fn branchy(x: &[f64]) -> f64 {
    let mut s = 1.0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            s = s * x[i].sin() + x[i].exp();
        } else {
            s = s + x[i] * x[i] * s.tanh();
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn branchy_hvp_against_finite_differences(
        x in prop::collection::vec(-1.5..1.5f64, 1..7),
        v in prop::collection::vec(-1.0..1.0f64, 7),
    ) {
        let v = &v[..x.len()];
        let hv = autodiff_core::hvp::<d_branchy>(&x, v);
        let fd = fd_hvp(autodiff_core::gradient::<d_branchy>, &x, v);
        assert_all_close("hvp", &hv, &fd, 1e-4);
    }
}

// ------------------------------------------------------------------ forward over forward

#[autodiff_forward(f_jvp, Dual, Dual)]
fn f(x: f64) -> f64 {
    (x.sin() * x.exp() + x * x).ln_1p()
}

fn f_dual(x: Dual2_64) -> Dual2_64 {
    (x.sin() * x.exp() + x * x).ln_1p()
}

#[autodiff_forward(d2f, Dual, Dual)]
fn df(x: f64) -> f64 {
    f_jvp(x, 1.0).1
}

#[autodiff_reverse(d_df_rev, Active, Active)]
fn df_rev(x: f64) -> f64 {
    f_jvp(x, 1.0).1
}

#[autodiff_forward(g2_jvp, Dual, Dual, Dual)]
fn g2(x: f64, y: f64) -> f64 {
    x.sin() * y.powi(3) + (x * y).exp()
}

/// ∂²g/∂x∂y by forward over forward: the y-tangent of the x-derivative.
#[autodiff_forward(dxy_g2, Dual, Dual, Dual)]
fn dx_g2(x: f64, y: f64) -> f64 {
    g2_jvp(x, 1.0, y, 0.0).1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn second_derivatives_against_num_dual(x in -1.0..1.0f64, y in -1.0..1.0f64) {
        let d2 = f_dual(Dual2_64::new(x, 1.0, 0.0));
        // f'' by forward over forward, and by reverse over forward.
        let (d1, d2_ours) = d2f(x, 1.0);
        close("f'", d1, d2.v1, 1e-12).unwrap();
        close("f'' (fwd over fwd)", d2_ours, d2.v2, 1e-11).unwrap();
        close("f'' (rev over fwd)", d_df_rev(x, 1.0).1, d2.v2, 1e-11).unwrap();
        // A mixed partial against a hyper-dual number.
        let hd = {
            let xd = HyperDual64::new(x, 1.0, 0.0, 0.0);
            let yd = HyperDual64::new(y, 0.0, 1.0, 0.0);
            xd.sin() * yd.powi(3) + (xd * yd).exp()
        };
        close("g_xy", dxy_g2(x, 0.0, y, 1.0).1, hd.eps1eps2, 1e-11).unwrap();
    }
}

// ------------------------------------------------------------------ batched forward mode

#[autodiff_forward(batch4, 4, Dual, Dual, Dual)]
#[autodiff_forward(batch3_only, 3, Dual, Const, DualOnly)]
#[autodiff_forward(single, Dual, Dual, Dual)]
fn batched(x: &[f64], a: f64) -> f64 {
    let mut s = a * a;
    for i in 0..x.len() {
        s += (x[i] * a).sin() * x[i];
    }
    s
}

#[autodiff_forward(vec_jvp, Dual, Dual)]
#[autodiff_forward(vec_jvp2, 2, Dual, Dual)]
#[autodiff_reverse(vec_vjp, Duplicated, Duplicated)]
fn vector(x: &[f64], y: &mut [f64]) {
    for i in 0..y.len() {
        y[i] += x[i % x.len()] * x[(i + 1) % x.len()].exp();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn batched_lanes_match_single_lanes(
        x in prop::collection::vec(-1.0..1.0f64, 3),
        a in -1.0..1.0f64,
        vs in prop::collection::vec(-1.0..1.0f64, 16),
    ) {
        let v: Vec<&[f64]> = vs.chunks(4).map(|c| &c[..3]).collect();
        let da = [vs[3], vs[7], vs[11], vs[15]];
        let r = batch4(&x, v[0], v[1], v[2], v[3], a, da[0], da[1], da[2], da[3]);
        for k in 0..4 {
            let (y, dy) = single(&x, v[k], a, da[k]);
            prop_assert_eq!(r[0], y);
            close(&format!("lane {k}"), r[k + 1], dy, 1e-14).unwrap();
        }
        let only = batch3_only(&x, v[0], v[1], v[2], a);
        for k in 0..3 {
            close(&format!("DualOnly lane {k}"), only[k], single(&x, v[k], a, 0.0).1, 1e-14).unwrap();
        }
        // `&mut` outputs start from the caller's values in every lane.
        let (mut y, mut d0, mut d1) = (vec![1.0; 4], vec![0.0; 4], vec![0.0; 4]);
        vec_jvp2(&x, v[0], v[1], &mut y, &mut d0, &mut d1);
        for (k, d) in [d0, d1].iter().enumerate() {
            let (mut y1, mut e) = (vec![1.0; 4], vec![0.0; 4]);
            vec_jvp(&x, v[k], &mut y1, &mut e);
            assert_all_close("batched vector lane", d, &e, 1e-14);
            prop_assert_eq!(&y, &y1);
        }
    }
}

#[test]
fn jacobians_by_columns_and_rows_agree_with_finite_differences() {
    let x = [0.3, -0.7, 1.1];
    let m = 5;
    let by_cols = autodiff_core::jacobian::<vec_jvp>(&x, m);
    let by_rows = autodiff_core::jacobian_by_rows::<vec_vjp>(&x, m);
    // Chunks of 2 columns: a full chunk and a last one with one column.
    let in_chunks = autodiff_core::jacobian_in_chunks::<vec_jvp2, 2>(&x, m);
    assert_eq!(in_chunks, by_cols);
    let h = 1e-6;
    for j in 0..x.len() {
        let (mut xp, mut xm) = (x, x);
        xp[j] += h;
        xm[j] -= h;
        let (mut yp, mut ym) = (vec![0.0; m], vec![0.0; m]);
        vector(&xp, &mut yp);
        vector(&xm, &mut ym);
        for i in 0..m {
            let fd = (yp[i] - ym[i]) / (2.0 * h);
            close(&format!("J[{i}][{j}] columns"), by_cols[i][j], fd, 1e-6).unwrap();
            close(&format!("J[{i}][{j}] rows"), by_rows[i][j], fd, 1e-6).unwrap();
        }
    }
}

// ------------------------------------------------------------------ adjoints that are zero

// Where a residual is zero (`x / 2` at 0, `ln x` at 1, a data point at the mean), the
// adjoint reaching `/`, `ln` or `sqrt` is zero while its tangent is not: the second
// derivative flows through that tangent.

#[autodiff_reverse(d_half_sq, Duplicated, Active)]
fn half_sq(x: &[f64]) -> f64 {
    let r = x[0] / 2.0;
    r * r
}

#[autodiff_reverse(d_ln_sq, Duplicated, Active)]
fn ln_sq(x: &[f64]) -> f64 {
    let l = x[0].ln();
    l * l
}

#[autodiff_reverse(d_sqrt_sq, Duplicated, Active)]
fn sqrt_sq(x: &[f64]) -> f64 {
    let s = x[0].sqrt() - 1.0;
    s * s
}

/// A Gaussian negative log-likelihood of one data point `y = 1.5`.
#[autodiff_reverse(d_gauss_nll, Duplicated, Active)]
fn gauss_nll(p: &[f64]) -> f64 {
    let (mu, sigma) = (p[0], p[1]);
    let z = (1.5 - mu) / sigma;
    0.5 * z * z + sigma.ln()
}

#[differentiable]
fn standardized_sq(y: f64, mu: f64, s: f64) -> f64 {
    let z = (y - mu) / s;
    z * z
}

#[autodiff_reverse(d_through_helper, Duplicated, Active)]
fn through_helper(p: &[f64]) -> f64 {
    standardized_sq(1.5, p[0], 2.0)
}

#[test]
fn hvp_where_an_adjoint_is_zero() {
    // (x/2)² has second derivative 1/2 everywhere, 0 included.
    for x in [0.0, 0.1] {
        assert_all_close("(x/2)²", &hvp::<d_half_sq>(&[x], &[1.0]), &[0.5], 1e-12);
    }
    // (ln x)²: 2 (1 - ln x) / x², 2 at x = 1.
    assert_all_close("(ln x)²", &hvp::<d_ln_sq>(&[1.0], &[1.0]), &[2.0], 1e-12);
    // (√x - 1)²: 1 / (2 x^{3/2}), 1/2 at x = 1.
    assert_all_close(
        "(√x - 1)²",
        &hvp::<d_sqrt_sq>(&[1.0], &[1.0]),
        &[0.5],
        1e-12,
    );
    // At mu = y: the Hessian is diag(1/σ², -1/σ²), with σ = 2.
    let h = hvp::<d_gauss_nll>(&[1.5, 2.0], &[1.0, 0.0]);
    assert_all_close("NLL along mu", &h, &[0.25, 0.0], 1e-12);
    let h = hvp::<d_gauss_nll>(&[1.5, 2.0], &[0.0, 1.0]);
    assert_all_close("NLL along sigma", &h, &[0.0, -0.25], 1e-12);
    // Through a helper's pullback: ((1.5 - mu) / 2)² has second derivative 1/2.
    let h = hessian::<d_through_helper>(&[1.5]);
    assert_all_close("through a helper", &h[0], &[0.5], 1e-12);
    // Away from the zero residual, against finite differences of the gradient.
    let (p, v) = ([1.2, 1.7], [0.3, -0.8]);
    let want = fd_hvp(grad_of(d_gauss_nll), &p, &v);
    assert_all_close("NLL", &hvp::<d_gauss_nll>(&p, &v), &want, 1e-6);
}
