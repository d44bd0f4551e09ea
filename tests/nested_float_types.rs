//! Nested differentiation of `f32` functions and of functions generic over their float
//! type, through calls: Hessian-vector products (forward over reverse, also through a
//! `#[differentiable]` rule), second derivatives (forward over forward) and a third order,
//! against num-dual's hyper-dual and second- and third-order dual numbers and the softmax
//! Jacobian; and the one-call helpers (`gradient`, `hvp`, `hessian`, `jacobian`,
//! `jacobian_by_rows`) at `f32`, and `gradient`/`hvp` of a generic companion at `f64`.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::{gradient, hessian, hvp, jacobian, jacobian_by_rows};
use num_dual::{Dual2_32, Dual2_64, Dual3_32, DualNum, HyperDual};
use proptest::prelude::*;

/// A callee with most kinds of builtin: libm calls, `powi` (whose partial converts its
/// exponent to the float type), `sqrt`, `tanh`.
#[differentiable]
fn pair_term(a: f32, b: f32) -> f32 {
    (a * b).exp() + a.powi(3) - (b * b + 1.0).ln() * a.tanh() + (a * a + b * b + 1.0).sqrt()
}

fn pair_term_dual<D: DualNum<Primitive = f32> + Copy>(a: D, b: D) -> D {
    (a * b).exp() + a.powi(3) - (b * b + 1.0).ln() * a.tanh() + (a * a + b * b + 1.0).sqrt()
}

#[autodiff_reverse(d_chain, Duplicated, Active)]
fn chain(x: &[f32]) -> f32 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += pair_term(x[i], x[i + 1]) / (1.0 + x[i] * x[i]);
    }
    s.sin()
}

fn chain_dual<D: DualNum<Primitive = f32> + Copy>(x: &[D]) -> D {
    let mut s = D::zero();
    for i in 0..x.len() - 1 {
        s += pair_term_dual(x[i], x[i + 1]) / (x[i] * x[i] + 1.0);
    }
    s.sin()
}

/// The pinned composition, in `f32`.
#[autodiff_forward(hvp_chain, Dual, Dual)]
fn grad_chain(x: &[f32], dx: &mut [f32]) {
    dx.fill(0.0);
    d_chain(x, dx, 1.0);
}

/// `∇f(x)` and `H(x)·v` by hyper-dual numbers, one component per evaluation: `eps1`
/// along `v` and `eps2` along `e_i` make `eps2` the `∂f/∂x_i` and `eps1eps2` the
/// `(H·v)_i`.
fn hyper_dual_gradient_hvp<F: num_traits::Float>(
    f: impl Fn(&[HyperDual<F>]) -> HyperDual<F>,
    x: &[F],
    v: &[F],
) -> (Vec<F>, Vec<F>) {
    let n = x.len();
    (0..n)
        .map(|i| {
            let xd: Vec<HyperDual<F>> = (0..n)
                .map(|j| {
                    let e = if i == j { F::one() } else { F::zero() };
                    HyperDual::new(x[j], v[j], e, F::zero())
                })
                .collect();
            let y = f(&xd);
            (y.eps2, y.eps1eps2)
        })
        .unzip()
}

/// `|got - want|` within `tol` of the largest magnitude in `want` (at least 1).
fn assert_close_f32(what: &str, got: &[f32], want: &[f32], tol: f32) {
    let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * scale,
            "{what}[{i}]: got {g}, want {w} (all: {got:?} vs {want:?})"
        );
    }
}

#[autodiff_forward(f_jvp32, Dual, Dual)]
fn f32_fn(x: f32) -> f32 {
    pair_term(x, 0.5 * x) * x.cos()
}

/// Forward over forward through a call.
#[autodiff_forward(d2f32, Dual, Dual)]
fn df32(x: f32) -> f32 {
    f_jvp32(x, 1.0).1
}

#[autodiff_reverse(d_sq_sin, Duplicated, Active)]
fn sq_sin(x: &[f32]) -> f32 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (0.25 * x[i]).exp() + x[i].powi(3) - 0.06 * x[i].tanh();
    }
    s.sin()
}

#[autodiff_forward(hvp_sq_sin, Dual, Dual)]
fn grad_sq_sin(x: &[f32], dx: &mut [f32]) {
    dx.fill(0.0);
    d_sq_sin(x, dx, 1.0);
}

/// Forward over forward over reverse (of a function that calls no other, as in `f64`):
/// the derivative of `H(x)·v` along `u`.
#[autodiff_forward(third_sq_sin, Dual, Const, Dual, Dual)]
fn hvp_of_sq_sin(x: &[f32], v: &[f32], g: &mut [f32], hv: &mut [f32]) {
    hvp_sq_sin(x, v, g, hv);
}

/// A `#[differentiable]` reverse rule in `f32`, differentiated under forward over reverse.
#[custom_rule(reverse = logsumexp_rev)]
fn logsumexp(z: &[f32]) -> f32 {
    let m = z.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    m + z.iter().map(|v| (v - m).exp()).sum::<f32>().ln()
}

#[differentiable]
fn logsumexp_rev(z: &[f32]) -> (f32, impl FnOnce(&mut [f32], f32) + '_) {
    let mut m = z[0];
    for i in 1..z.len() {
        m = m.max(z[i]);
    }
    let mut s = 0.0;
    for i in 0..z.len() {
        s += (z[i] - m).exp();
    }
    let y = m + s.ln();
    (y, move |dz: &mut [f32], dy: f32| {
        for i in 0..z.len() {
            dz[i] += dy * (z[i] - y).exp();
        }
    })
}

#[autodiff_reverse(d_lse, Duplicated, Active)]
fn lse(x: &[f32]) -> f32 {
    2.0 * logsumexp(x)
}

#[autodiff_forward(hvp_lse, Dual, Dual)]
fn grad_lse(x: &[f32], dx: &mut [f32]) {
    dx.fill(0.0);
    d_lse(x, dx, 1.0);
}

/// A map `R³ → R²` in `f32`, with the companions the Jacobian helpers take.
#[autodiff_forward(map32_jvp, Dual, Dual)]
#[autodiff_reverse(map32_vjp, Duplicated, Duplicated)]
fn map32(x: &[f32], y: &mut [f32]) {
    y[0] = x[0] * x[1].exp();
    y[1] = (x[1] + x[2]).sin() * x[0];
}

#[test]
fn jacobian_helpers_at_f32() {
    let x = [0.5f32, -0.25, 0.75];
    let (e, s, c) = (x[1].exp(), (x[1] + x[2]).sin(), (x[1] + x[2]).cos());
    let want = [[e, x[0] * e, 0.0], [s, x[0] * c, x[0] * c]];
    for (what, j) in [
        ("jacobian", jacobian::<map32_jvp>(&x, 2)),
        ("jacobian_by_rows", jacobian_by_rows::<map32_vjp>(&x, 2)),
    ] {
        for (row, want_row) in j.iter().zip(&want) {
            assert_close_f32(what, row, want_row, 1e-6);
        }
    }
}

// ------------------------------------------------------------------ generic functions

/// A generic callee whose builtins' partials have constants (`tanh`, `sqrt`, `cbrt`,
/// `atan`, `powi`, `max`, `abs`): differentiated again, they take the type parameter.
#[differentiable]
fn generic_term<T: Real>(a: T, b: T) -> T {
    let one = T::one();
    (a * b).exp() + a.powi(3) - (b * b + one).ln() * a.tanh()
        + (a * a + b * b + one).sqrt()
        + a.max(b)
        + (b.abs() + one).cbrt()
        + a.atan()
}

fn generic_term_dual<D: DualNum<Primitive = f64> + Copy>(a: D, b: D) -> D {
    let max = if a.re() >= b.re() { a } else { b };
    (a * b).exp() + a.powi(3) - (b * b + 1.0).ln() * a.tanh()
        + (a * a + b * b + 1.0).sqrt()
        + max
        + (b.abs() + 1.0).cbrt()
        + a.atan()
}

/// A generic function with a call in a loop and a buffer filled with an active value.
#[autodiff_reverse(d_generic, Duplicated, Active)]
fn generic<T: Real>(x: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..x.len() - 1 {
        s += generic_term(x[i], x[i + 1]) / (T::one() + x[i] * x[i]);
    }
    let mut buf = vec![T::zero(); x.len()];
    buf.fill(s);
    s.sin() + buf[0] * buf[1]
}

fn generic_dual<D: DualNum<Primitive = f64> + Copy>(x: &[D]) -> D {
    let mut s = D::zero();
    for i in 0..x.len() - 1 {
        s += generic_term_dual(x[i], x[i + 1]) / (x[i] * x[i] + 1.0);
    }
    s.sin() + s * s
}

/// The gradient, generic too: its forward companion is H·v at every float type.
#[autodiff_forward(hvp_generic, Dual, Dual)]
fn grad_generic<T: Real>(x: &[T], dx: &mut [T]) {
    for i in 0..dx.len() {
        dx[i] = T::zero();
    }
    d_generic(x, dx, T::one());
}

#[autodiff_forward(generic_jvp, Dual, Dual)]
fn generic_scalar<T: Real>(x: T) -> T {
    generic_term(x, x * x) * x.cos()
}

/// Forward over forward of a generic function, at `f64`.
#[autodiff_forward(d2_generic, Dual, Dual)]
fn d_generic_scalar(x: f64) -> f64 {
    generic_jvp(x, 1.0).1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn hvp_through_calls_matches_hyper_duals(
        x in prop::collection::vec(-0.9f32..0.9, 2..7),
        v in prop::collection::vec(-1.0f32..1.0, 7),
    ) {
        let n = x.len();
        let v = &v[..n];
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        hvp_chain(&x, v, &mut g, &mut hv);
        let (g_want, hv_want) = hyper_dual_gradient_hvp(chain_dual, &x, v);
        assert_close_f32("gradient", &g, &g_want, 1e-4);
        assert_close_f32("H·v", &hv, &hv_want, 1e-4);
        // The one-call helpers at `f32`.
        assert_close_f32("gradient::<d_chain>", &gradient::<d_chain>(&x), &g_want, 1e-4);
        assert_close_f32("hvp::<d_chain>", &hvp::<d_chain>(&x, v), &hv_want, 1e-4);
        let h = hessian::<d_chain>(&x);
        let h_v: Vec<f32> = h.iter().map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum()).collect();
        assert_close_f32("hessian::<d_chain>·v", &h_v, &hv_want, 1e-4);
    }

    #[test]
    fn hvp_through_an_f32_rule_is_the_softmax_jacobian(
        x in prop::collection::vec(-2.0f32..2.0, 1..6),
        v in prop::collection::vec(-1.0f32..1.0, 6),
    ) {
        let n = x.len();
        let v = &v[..n];
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        hvp_lse(&x, v, &mut g, &mut hv);
        // ∇ = 2p, H = 2 (diag(p) - p pᵀ) for the softmax p of x.
        let m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let e: Vec<f32> = x.iter().map(|a| (a - m).exp()).collect();
        let total: f32 = e.iter().sum();
        let p: Vec<f32> = e.iter().map(|a| a / total).collect();
        let pv: f32 = p.iter().zip(v).map(|(a, b)| a * b).sum();
        let g_want: Vec<f32> = p.iter().map(|a| 2.0 * a).collect();
        let hv_want: Vec<f32> = (0..n).map(|i| 2.0 * p[i] * (v[i] - pv)).collect();
        assert_close_f32("gradient", &g, &g_want, 1e-5);
        assert_close_f32("H·v", &hv, &hv_want, 1e-5);
    }

    #[test]
    fn hvp_of_a_generic_function_matches_hyper_duals(
        x in prop::collection::vec(-0.9f64..0.9, 2..6),
        v in prop::collection::vec(-1.0f64..1.0, 6),
    ) {
        let n = x.len();
        let v = &v[..n];
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        hvp_generic(&x, v, &mut g, &mut hv);
        let (g_want, hv_want) = hyper_dual_gradient_hvp(generic_dual, &x, v);
        let scale = hv_want.iter().fold(1.0f64, |m, a| m.max(a.abs()));
        for i in 0..n {
            prop_assert!((g[i] - g_want[i]).abs() <= 1e-11 * scale, "∇[{i}]: {g:?} vs {g_want:?}");
            prop_assert!((hv[i] - hv_want[i]).abs() <= 1e-11 * scale, "Hv[{i}]: {hv:?} vs {hv_want:?}");
        }
        // The one-call helpers take a generic companion at `f64`.
        let g_helper = gradient::<d_generic>(&x);
        let hv_helper = hvp::<d_generic>(&x, v);
        for i in 0..n {
            prop_assert!((g_helper[i] - g_want[i]).abs() <= 1e-11 * scale, "gradient::<d_generic>");
            prop_assert!((hv_helper[i] - hv_want[i]).abs() <= 1e-11 * scale, "hvp::<d_generic>");
        }
        // The same companion at `f32`.
        let x32: Vec<f32> = x.iter().map(|&a| a as f32).collect();
        let v32: Vec<f32> = v.iter().map(|&a| a as f32).collect();
        let (mut g32, mut hv32) = (vec![0.0f32; n], vec![0.0f32; n]);
        hvp_generic(&x32, &v32, &mut g32, &mut hv32);
        let hv_want32: Vec<f32> = hv_want.iter().map(|&a| a as f32).collect();
        assert_close_f32("H·v at f32", &hv32, &hv_want32, 1e-4);
    }

    #[test]
    fn second_derivative_of_a_generic_function_matches_dual2(x in -0.9f64..0.9) {
        let (d1, d2) = d2_generic(x, 1.0);
        let want = {
            let x = Dual2_64::from_re(x).derivative();
            generic_term_dual(x, x * x) * x.cos()
        };
        prop_assert!((d1 - want.v1).abs() <= 1e-11 * (1.0 + want.v1.abs()));
        prop_assert!((d2 - want.v2).abs() <= 1e-11 * (1.0 + want.v2.abs()));
    }

    #[test]
    fn second_derivative_through_a_call_matches_dual2(x in -1.0f32..1.0) {
        let (d1, d2) = d2f32(x, 1.0);
        let want = {
            let x = Dual2_32::from_re(x).derivative();
            pair_term_dual(x, x * 0.5) * x.cos()
        };
        assert_close_f32("f', f''", &[d1, d2], &[want.v1, want.v2], 1e-5);
    }

    #[test]
    fn third_derivative_matches_dual3(x in -1.0f32..1.0) {
        let (mut g, mut dg, mut hv, mut dhv) = ([0.0], [0.0], [0.0], [0.0]);
        third_sq_sin(&[x], &[1.0], &[1.0], &mut g, &mut dg, &mut hv, &mut dhv);
        let want = {
            let x = Dual3_32::from_re(x).derivative();
            ((x * 0.25).exp() + x.powi(3) - x.tanh() * 0.06).sin()
        };
        assert_close_f32(
            "f', f'', f''' ",
            &[g[0], dg[0], hv[0], dhv[0]],
            &[want.v1, want.v2, want.v2, want.v3],
            1e-4,
        );
    }
}
