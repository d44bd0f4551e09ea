//! Shared helpers of the `lang_*` integration tests: the num-dual oracle and the checks that
//! compare a function's forward and reverse companions with it.
//!
//! The oracle of a function `f` is a copy of its body written generically over a num-dual
//! number `D: Num`; evaluated with `Dual64` seeded along a direction it gives the exact
//! directional derivative, so that companions can be compared to about 1e-10 (relative to
//! the larger magnitude, or absolute below 1).

// Each test file uses only some of these helpers.
#![allow(dead_code)]

use autodiff_core::testing::close;
pub use num_dual::{Dual32, Dual64, DualNum};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// A num-dual scalar over `f64` (`f64` itself, `Dual64`, ...).
pub trait Num: DualNum<Primitive = f64> + Copy {}
impl<T: DualNum<Primitive = f64> + Copy> Num for T {}

/// A num-dual scalar over `f32`.
pub trait Num32: DualNum<Primitive = f32> + Copy {}
impl<T: DualNum<Primitive = f32> + Copy> Num32 for T {}

/// Tolerance of comparisons with the num-dual oracle (exact derivatives).
pub const TOL: f64 = 1e-10;

/// 64 random cases per property, no regression files written into the tree.
pub fn config() -> Config {
    Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Panics (failing the property) unless `got` and `want` agree to `tol`.
#[track_caller]
pub fn check_tol(what: &str, got: f64, want: f64, tol: f64) {
    if let Err(e) = close(what, got, want, tol) {
        panic!("{e}");
    }
}

/// [`check_tol`] at [`TOL`].
#[track_caller]
pub fn check(what: &str, got: f64, want: f64) {
    check_tol(what, got, want, TOL);
}

/// [`check`] for each component.
#[track_caller]
pub fn check_all(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        check(&format!("{what}[{i}]"), *g, *w);
    }
}

/// A constant of the oracle.
pub fn c<D: Num>(v: f64) -> D {
    D::from(v)
}

/// `Dual64` numbers seeded along `v`.
pub fn seeded(x: &[f64], v: &[f64]) -> Vec<Dual64> {
    x.iter().zip(v).map(|(a, b)| Dual64::new(*a, *b)).collect()
}

/// Values and directional derivatives along `v` of an oracle `R^n -> R^m`.
pub fn oracle_jvp(
    f: impl Fn(&[Dual64]) -> Vec<Dual64>,
    x: &[f64],
    v: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    assert_eq!(x.len(), v.len());
    let out = f(&seeded(x, v));
    (
        out.iter().map(|d| d.re).collect(),
        out.iter().map(|d| d.eps).collect(),
    )
}

/// `wᵀ J` of an oracle `R^n -> R^m` (one forward sweep per input).
pub fn oracle_vjp(f: impl Fn(&[Dual64]) -> Vec<Dual64>, x: &[f64], w: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let e: Vec<f64> = (0..x.len()).map(|j| f64::from(u8::from(i == j))).collect();
            let (_, t) = oracle_jvp(&f, x, &e);
            assert_eq!(t.len(), w.len());
            t.iter().zip(w).map(|(a, b)| a * b).sum()
        })
        .collect()
}

/// The value and the gradient of a scalar oracle.
pub fn oracle_grad(f: impl Fn(&[Dual64]) -> Dual64, x: &[f64]) -> (f64, Vec<f64>) {
    let value = f(&seeded(x, &vec![0.0; x.len()])).re;
    (value, oracle_vjp(|d| vec![f(d)], x, &[1.0]))
}

/// What a scalar function's companions returned at `x`: the primal, the forward
/// companion's `(value, tangent along v)`, the reverse companion's value and the gradient
/// it produced for seed `seed`.
pub struct Got {
    pub primal: f64,
    pub fwd: (f64, f64),
    pub rev: f64,
    pub grad: Vec<f64>,
}

/// Checks a scalar function `R^n -> R` against its oracle: values, the forward tangent
/// along `v`, the reverse gradient times `seed`, and `⟨∇f, v⟩ = J·v`.
#[track_caller]
pub fn check_scalar(
    name: &str,
    x: &[f64],
    v: &[f64],
    seed: f64,
    got: Got,
    oracle: impl Fn(&[Dual64]) -> Dual64,
) {
    check_scalar_tol(name, x, v, seed, got, oracle, TOL);
}

/// [`check_scalar`] at tolerance `tol`.
#[track_caller]
pub fn check_scalar_tol(
    name: &str,
    x: &[f64],
    v: &[f64],
    seed: f64,
    got: Got,
    oracle: impl Fn(&[Dual64]) -> Dual64,
    tol: f64,
) {
    let check = |what: &str, got: f64, want: f64| check_tol(what, got, want, tol);
    let (value, grad) = oracle_grad(&oracle, x);
    let (_, tangent) = oracle_jvp(|d| vec![oracle(d)], x, v);
    let at = format!("{name} at x = {x:?}");
    check(&format!("{at}: primal"), got.primal, value);
    check(&format!("{at}: forward primal"), got.fwd.0, value);
    check(&format!("{at}: reverse primal"), got.rev, value);
    check(&format!("{at}, v = {v:?}: tangent"), got.fwd.1, tangent[0]);
    assert_eq!(got.grad.len(), grad.len(), "{at}: gradient length");
    for (i, (g, w)) in got.grad.iter().zip(&grad).enumerate() {
        check(&format!("{at}, seed {seed}: gradient[{i}]"), *g, w * seed);
    }
    let lhs: f64 = got.grad.iter().zip(v).map(|(a, b)| a * b).sum();
    check(&format!("{at}: ⟨∇f, v⟩ against J·v"), lhs, seed * got.fwd.1);
}

/// [`check_scalar`] for `f(x: f64) -> f64` with `(Dual, Dual)` and `(Active, Active)`.
#[track_caller]
pub fn check1(
    name: &str,
    (x, v, seed): (f64, f64, f64),
    f: impl Fn(f64) -> f64,
    fwd: impl Fn(f64, f64) -> (f64, f64),
    rev: impl Fn(f64, f64) -> (f64, f64),
    oracle: impl Fn(Dual64) -> Dual64,
) {
    let (r, g) = rev(x, seed);
    let got = Got {
        primal: f(x),
        fwd: fwd(x, v),
        rev: r,
        grad: vec![g],
    };
    check_scalar(name, &[x], &[v], seed, got, |d| oracle(d[0]));
}

/// [`check_scalar`] for `f(x: f64, y: f64) -> f64` with all `Dual` / all `Active`.
#[track_caller]
pub fn check2(
    name: &str,
    (x, v, seed): ([f64; 2], [f64; 2], f64),
    f: impl Fn(f64, f64) -> f64,
    fwd: impl Fn(f64, f64, f64, f64) -> (f64, f64),
    rev: impl Fn(f64, f64, f64) -> (f64, f64, f64),
    oracle: impl Fn(Dual64, Dual64) -> Dual64,
) {
    let (r, g0, g1) = rev(x[0], x[1], seed);
    let got = Got {
        primal: f(x[0], x[1]),
        fwd: fwd(x[0], v[0], x[1], v[1]),
        rev: r,
        grad: vec![g0, g1],
    };
    check_scalar(name, &x, &v, seed, got, |d| oracle(d[0], d[1]));
}

/// [`check_scalar`] for `f(x: f64, y: f64, z: f64) -> f64` with all `Dual` / all `Active`.
#[track_caller]
pub fn check3(
    name: &str,
    (x, v, seed): ([f64; 3], [f64; 3], f64),
    f: impl Fn(f64, f64, f64) -> f64,
    fwd: impl Fn(f64, f64, f64, f64, f64, f64) -> (f64, f64),
    rev: impl Fn(f64, f64, f64, f64) -> (f64, f64, f64, f64),
    oracle: impl Fn(Dual64, Dual64, Dual64) -> Dual64,
) {
    let (r, g0, g1, g2) = rev(x[0], x[1], x[2], seed);
    let got = Got {
        primal: f(x[0], x[1], x[2]),
        fwd: fwd(x[0], v[0], x[1], v[1], x[2], v[2]),
        rev: r,
        grad: vec![g0, g1, g2],
    };
    check_scalar(name, &x, &v, seed, got, |d| oracle(d[0], d[1], d[2]));
}

/// [`check_scalar`] for `f(x: &[f64]) -> f64` with `(Dual, Dual)` and
/// `(Duplicated, Active)`. The shadow starts at `shadow0`: the gradient must be added to it.
#[track_caller]
pub fn check_slice(
    name: &str,
    (x, v, shadow0, seed): (&[f64], &[f64], &[f64], f64),
    f: impl Fn(&[f64]) -> f64,
    fwd: impl Fn(&[f64], &[f64]) -> (f64, f64),
    rev: impl Fn(&[f64], &mut [f64], f64) -> f64,
    oracle: impl Fn(&[Dual64]) -> Dual64,
) {
    let mut shadow = shadow0.to_vec();
    let r = rev(x, &mut shadow, seed);
    let got = Got {
        primal: f(x),
        fwd: fwd(x, v),
        rev: r,
        grad: shadow.iter().zip(shadow0).map(|(a, b)| a - b).collect(),
    };
    check_scalar(name, x, v, seed, got, oracle);
}

// ---------------------------------------------------------------- strategies

/// A float in `lo..hi`.
pub fn float(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    lo..hi
}

/// A tangent or shadow component.
pub fn dir() -> impl Strategy<Value = f64> {
    -1.0..1.0f64
}

/// A cotangent seed, away from 0.
pub fn seed() -> impl Strategy<Value = f64> {
    prop_oneof![-2.0..-0.25f64, 0.25..2.0f64]
}

/// `n` floats in `lo..hi`.
pub fn vecf(lo: f64, hi: f64, n: usize) -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(lo..hi, n)
}

/// `n` direction components.
pub fn dirs(n: usize) -> impl Strategy<Value = Vec<f64>> {
    vecf(-1.0, 1.0, n)
}
