//! Shared helpers of the `lang_*` integration tests: the num-dual oracle and the checks that
//! compare a function's forward and reverse companions with it.
//!
//! The oracle of a function `f` is a copy of its body written generically over a num-dual
//! number `D: Num`; evaluated with `Dual64` seeded along a direction it gives the exact
//! directional derivative, so that companions can be compared to about 1e-10 (relative to
//! the larger magnitude, or absolute below 1).

// Each test file uses only some of these helpers.
#![allow(dead_code, unused_imports)]

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

/// Checks `hv` against the H·v of a scalar oracle, component by component: evaluated on
/// second-order dual numbers seeded along `eᵢ` and `v`, the oracle's `eps1eps2` is
/// `eᵢᵀ H v`.
#[track_caller]
pub fn check_hvp(
    hv: &[f64],
    x: &[f64],
    v: &[f64],
    oracle: impl Fn(&[num_dual::HyperDual64]) -> num_dual::HyperDual64,
) {
    assert_eq!(hv.len(), x.len(), "H·v has the length of x");
    for (i, got) in hv.iter().enumerate() {
        let xs: Vec<num_dual::HyperDual64> = (0..x.len())
            .map(|j| num_dual::HyperDual64::new(x[j], f64::from(u8::from(i == j)), v[j], 0.0))
            .collect();
        check(&format!("H·v[{i}]"), *got, oracle(&xs).eps1eps2);
    }
}

/// [`check_hvp`] of `autodiff_core::hvp::<F>` at `x`, along the first `x.len()`
/// components of `v`.
#[track_caller]
pub fn check_hvp_of<F: autodiff_core::ObjectiveHvp<Float = f64>>(
    x: &[f64],
    v: &[f64],
    oracle: impl Fn(&[num_dual::HyperDual64]) -> num_dual::HyperDual64,
) {
    let v = &v[..x.len()];
    check_hvp(&autodiff_core::hvp::<F>(x, v), x, v, oracle);
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

/// [`check_scalar`] for `f(x: &[f64], t: f64) -> f64` with `(Dual, Dual, Dual)` and
/// `(Duplicated, Active, Active)`. `v` has one component more than `x`, for `t`.
#[track_caller]
pub fn check_slice_scalar(
    name: &str,
    (x, t, v, shadow0, seed): (&[f64], f64, &[f64], &[f64], f64),
    f: impl Fn(&[f64], f64) -> f64,
    fwd: impl Fn(&[f64], &[f64], f64, f64) -> (f64, f64),
    rev: impl Fn(&[f64], &mut [f64], f64, f64) -> (f64, f64),
    oracle: impl Fn(&[Dual64], Dual64) -> Dual64,
) {
    let n = x.len();
    assert_eq!(v.len(), n + 1);
    let mut shadow = shadow0.to_vec();
    let (r, gt) = rev(x, &mut shadow, t, seed);
    let mut grad: Vec<f64> = shadow.iter().zip(shadow0).map(|(a, b)| a - b).collect();
    grad.push(gt);
    let got = Got {
        primal: f(x, t),
        fwd: fwd(x, &v[..n], t, v[n]),
        rev: r,
        grad,
    };
    let mut z = x.to_vec();
    z.push(t);
    check_scalar(name, &z, v, seed, got, |d| oracle(&d[..n], d[n]));
}

/// A slice of `lens` floats in `lo..hi`, a direction with `extra` more components (for
/// scalar parameters), and a starting shadow for the slice.
pub fn slice_case(
    lo: f64,
    hi: f64,
    lens: std::ops::Range<usize>,
    extra: usize,
) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>)> {
    lens.prop_flat_map(move |n| (vecf(lo, hi, n), dirs(n + extra), dirs(n)))
}

/// [`slice_case`] without extra components, with a seed: `(x, v, shadow0, seed)`.
pub fn slice_seed_case(
    lo: f64,
    hi: f64,
    lens: std::ops::Range<usize>,
) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>, f64)> {
    (slice_case(lo, hi, lens, 0), seed()).prop_map(|((x, v, s0), seed)| (x, v, s0, seed))
}

/// The values of a function's slice arguments, tangents, and cotangents for
/// [`check_args`]. A scalar argument is a slice of one element.
#[derive(Clone, Debug)]
pub struct Args {
    /// Initial values of the arguments.
    pub x: Vec<Vec<f64>>,
    /// Which arguments the function overwrites (`&mut`): their final values are outputs.
    pub out: Vec<bool>,
    /// Tangents of the initial values (forward mode).
    pub v: Vec<Vec<f64>>,
    /// Reverse mode: for an input, the shadow's initial value (the gradient is added to
    /// it); for an output, the cotangent of its final value.
    pub w: Vec<Vec<f64>>,
    /// The seed of the return value (reverse mode); 0 for a function returning `()`.
    pub seed: f64,
}

/// The concatenated values of the arguments marked in `out`.
fn outputs(vs: &[Vec<f64>], out: &[bool]) -> Vec<f64> {
    vs.iter()
        .zip(out)
        .filter(|(_, o)| **o)
        .flat_map(|(v, _)| v.iter().copied())
        .collect()
}

/// Checks a function of slice arguments (some of them overwritten) against its oracle:
/// - `primal(args) -> ret` runs the function on copies of the arguments;
/// - `fwd(args, tangents) -> (ret, dret)` runs the forward companion; the tangents of the
///   outputs must then be those of their final values;
/// - `rev(args, shadows, seed) -> ret` runs the reverse companion: the shadows of inputs
///   must have the gradient added, those of outputs must hold the cotangent of their
///   initial values;
/// - `oracle(args) -> ret` overwrites the outputs like the function does.
///
/// For a function returning `()`, closures return `0.0` / `(0.0, 0.0)`.
#[track_caller]
pub fn check_args(
    name: &str,
    a: &Args,
    primal: impl Fn(&mut [Vec<f64>]) -> f64,
    fwd: impl Fn(&mut [Vec<f64>], &mut [Vec<f64>]) -> (f64, f64),
    rev: impl Fn(&mut [Vec<f64>], &mut [Vec<f64>], f64) -> f64,
    oracle: impl Fn(&mut [Vec<Dual64>]) -> Dual64,
) {
    let k = a.x.len();
    assert!(a.out.len() == k && a.v.len() == k && a.w.len() == k);
    let lens: Vec<usize> = a.x.iter().map(Vec::len).collect();
    let flat = |vs: &[Vec<f64>]| -> Vec<f64> { vs.iter().flatten().copied().collect() };
    // The oracle as a map from all initial values to (final outputs.., ret).
    let map = |z: &[Dual64]| -> Vec<Dual64> {
        let mut args = Vec::new();
        let mut at = 0;
        for n in &lens {
            args.push(z[at..at + n].to_vec());
            at += n;
        }
        let r = oracle(&mut args);
        let mut outs: Vec<Dual64> = Vec::new();
        for (arg, is_out) in args.iter().zip(&a.out) {
            if *is_out {
                outs.extend(arg);
            }
        }
        outs.push(r);
        outs
    };
    let z = flat(&a.x);
    let (values, tangents) = oracle_jvp(map, &z, &flat(&a.v));
    let ret = *values.last().unwrap();
    let at = format!("{name} at {:?}", a.x);

    // Primal.
    let mut args = a.x.clone();
    check(&format!("{at}: primal"), primal(&mut args), ret);
    let finals = outputs(&args, &a.out);
    check_all(
        &format!("{at}: primal outputs"),
        &finals,
        &values[..values.len() - 1],
    );

    // Forward.
    let mut args = a.x.clone();
    let mut t = a.v.clone();
    let (r, dr) = fwd(&mut args, &mut t);
    check(&format!("{at}: forward primal"), r, ret);
    check(
        &format!("{at}, v = {:?}: tangent of the return value", a.v),
        dr,
        *tangents.last().unwrap(),
    );
    let got_vals = outputs(&args, &a.out);
    let got_tans = outputs(&t, &a.out);
    check_all(
        &format!("{at}: forward outputs"),
        &got_vals,
        &values[..values.len() - 1],
    );
    check_all(
        &format!("{at}, v = {:?}: tangents of the outputs", a.v),
        &got_tans,
        &tangents[..tangents.len() - 1],
    );

    // Reverse.
    let mut wy = outputs(&a.w, &a.out);
    wy.push(a.seed);
    let vjp = oracle_vjp(map, &z, &wy);
    let mut args = a.x.clone();
    let mut shadows = a.w.clone();
    let r = rev(&mut args, &mut shadows, a.seed);
    check(&format!("{at}: reverse primal"), r, ret);
    let got_vals = outputs(&args, &a.out);
    check_all(
        &format!("{at}: reverse outputs"),
        &got_vals,
        &values[..values.len() - 1],
    );
    let mut grad = Vec::new();
    for ((shadow, w0), is_out) in shadows.iter().zip(&a.w).zip(&a.out) {
        for (s, s0) in shadow.iter().zip(w0) {
            grad.push(if *is_out { *s } else { s - s0 });
        }
    }
    check_all(
        &format!("{at}, cotangents {:?}: gradient", a.w),
        &grad,
        &vjp,
    );

    // Forward against reverse.
    let lhs: f64 = grad.iter().zip(flat(&a.v)).map(|(g, v)| g * v).sum();
    let mut ft = got_tans.clone();
    ft.push(dr);
    let rhs: f64 = ft.iter().zip(&wy).map(|(t, w)| t * w).sum();
    check(&format!("{at}: ⟨J^T w, v⟩ against ⟨w, J v⟩"), lhs, rhs);
}

/// [`Args`] for arguments of lengths `lens` with values in `lo..hi`, the ones marked in
/// `out` overwritten.
pub fn args_case(
    lo: f64,
    hi: f64,
    lens: Vec<usize>,
    out: Vec<bool>,
) -> impl Strategy<Value = Args> {
    let vals: Vec<_> = lens.iter().map(|n| vecf(lo, hi, *n)).collect();
    let vs: Vec<_> = lens.iter().map(|n| dirs(*n)).collect();
    let ws: Vec<_> = lens.iter().map(|n| dirs(*n)).collect();
    (vals, vs, ws, seed()).prop_map(move |(x, v, w, seed)| Args {
        x,
        out: out.clone(),
        v,
        w,
        seed,
    })
}

/// The `m × n` `ndarray` matrix of the row-major values `v`.
pub fn matrix(m: usize, n: usize, v: &[f64]) -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_vec((m, n), v.to_vec()).unwrap()
}

/// The elements of a matrix, row by row.
pub fn flat(a: &ndarray::Array2<f64>) -> Vec<f64> {
    a.iter().copied().collect()
}

/// A direction of `len` components, varied by `seed`.
pub fn direction(len: usize, seed: usize) -> Vec<f64> {
    (0..len)
        .map(|i| (((i + seed) * 5 % 9) as f64 - 4.0) * 0.2)
        .collect()
}
