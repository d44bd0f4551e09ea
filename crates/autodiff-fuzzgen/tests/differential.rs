//! Differential test: a batch of random functions (written by the build script, see
//! `src/gen.rs`) is compiled with `#[autodiff_forward]` and `#[autodiff_reverse]`, and each
//! function is checked at random points against
//!
//! - its oracle, the same body generic over a num-dual number, evaluated with `Dual64`:
//!   primal values, forward tangents and reverse gradients (exact derivatives, compared to
//!   `TOL` relative);
//! - itself: `⟨∇f, v⟩ = J·v` between its reverse and forward companions;
//! - central finite differences (Richardson-extrapolated) of the primal, against the oracle's
//!   directional derivative (`FD_TOL`), a second opinion on the oracle;
//! - the same batch written in `f32`: its companions against the `f64` ones (`F32_TOL`).
//!
//! The batch size and seed come from `AUTODIFF_FUZZ_COUNT` / `AUTODIFF_FUZZ_SEED` at build
//! time (CI: 300 functions, a fixed seed); `AUTODIFF_FUZZ_POINTS` sets the points per
//! function. See `TESTING.md`.

use autodiff_core::prelude::*;
use autodiff_fuzzgen::{Rng, SHADOW_INIT};
use num_dual::{Dual64, DualNum};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A num-dual scalar over `f64`: the oracles are generic over it (and run with `Dual64`
/// and `f64`).
pub trait Num: DualNum<Primitive = f64> + Copy {
    /// The derivative part (0 for `f64`).
    fn tangent(self) -> f64;
    /// `self` with its real part replaced by `re`.
    fn with_re(self, re: f64) -> Self;
    /// `self` mapped through a function with value `f` and derivative `df` at `self.re()`
    /// (first order, as the oracles run).
    fn lift(self, f: f64, df: f64) -> Self;
}
impl Num for f64 {
    fn tangent(self) -> f64 {
        0.0
    }
    fn with_re(self, re: f64) -> Self {
        re
    }
    fn lift(self, f: f64, _: f64) -> Self {
        f
    }
}
impl Num for Dual64 {
    fn tangent(self) -> f64 {
        self.eps
    }
    fn with_re(self, re: f64) -> Self {
        Dual64::new(re, self.eps)
    }
    fn lift(self, f: f64, df: f64) -> Self {
        Dual64::new(f, self.eps * df)
    }
}

thread_local! {
    /// The largest tangent of a local seen by [`tr`] since the last reset.
    static LARGEST_TANGENT: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
}

/// The oracles pass every value they bind or assign through `tr`, which records the size
/// of its tangent: derivatives summed from large terms are only as exact as those terms
/// allow, so the comparisons of derivatives scale their tolerance by it.
/// A value or a tangent that is not finite counts as an infinite term: the point is not
/// checked (a function can overflow in a computation it then overwrites, where reverse
/// mode multiplies the infinite partial derivatives by zero adjoints: NaN).
pub fn tr<D: Num>(v: D) -> D {
    let t = v.tangent().abs();
    let t = if t.is_finite() && v.re().is_finite() {
        t
    } else {
        f64::INFINITY
    };
    LARGEST_TANGENT.with(|c| {
        if t > c.get() {
            c.set(t)
        }
    });
    v
}

/// Exact derivatives (forward, reverse, oracle) agree to this, relative to the larger
/// magnitude or absolute below 1.
const TOL: f64 = 1e-9;
/// The most [`close_terms`] loosens [`TOL`] for large terms.
const MAX_LOOSENING: f64 = 1e4;
/// Points where |f| is larger than this are not checked (see `Stats::large`).
const LARGE: f64 = 1e8;
/// Points where a local's tangent is larger than this (or not finite) are not checked: with
/// inputs of order 1, such functions are numerically wild (terms of 1e80 that cancel to a
/// derivative of order 1, formulas that overflow differently in the engine and num-dual).
const LARGE_TERM: f64 = 1e12;
/// Finite differences agree with the oracle to this.
const FD_TOL: f64 = 1e-5;
/// Central differences of the gradient (step `FD_H`) agree with H·v to this.
const HVP_TOL: f64 = 1e-5;
/// Finite-difference step (along a direction of norm at most `sqrt(N)`).
const FD_H: f64 = 1e-4;
/// The Richardson extrapolations from steps (h, h/2) and (h/32, h/64) disagreeing by more than
/// this (relative) means a kink or a jump within `h` of the point (or derivatives too large
/// for finite differences): its finite-difference check is skipped, as where the directional
/// derivative is larger than `LARGE`.
const FD_SMOOTH: f64 = 1e-6;

// ------------------------------------------------------------------ oracle helpers
// The oracle spelling of the float methods num-dual lacks or defines differently. Where
// num-dual's formula rounds differently from the `f64` operation (`a / b` as `a * (1 / b)`,
// `tan` as `sin / cos`, `powf` and `powi` as `x^(n-3) x x x`, `tanh` as `sinh / cosh`,
// unfused `mul_add`, `hypot`), the real part is replaced by the `f64` operation's, so that
// the plain function and its oracle agree to the last bit and take the same branches.

/// `v` with its real part replaced by `re` (bitwise: the sign of a zero matters to
/// `signum`).
pub fn exact<D: Num>(v: D, re: f64) -> D {
    v.with_re(re)
}

/// `|a|`, with derivative 0 at either zero: the engine's convention (`d::abs`), which a
/// value computed to exactly 0 (`acc - no_grad(acc)`) reaches where no finite difference
/// shows a kink.
pub fn oabs<D: Num>(a: D) -> D {
    if a.re() == 0.0 {
        D::from(0.0)
    } else if a.re() < 0.0 {
        -a
    } else {
        a
    }
}
pub fn osignum<D: Num>(a: D) -> D {
    D::from(a.re().signum())
}
pub fn ofloor<D: Num>(a: D) -> D {
    D::from(a.re().floor())
}
pub fn oceil<D: Num>(a: D) -> D {
    D::from(a.re().ceil())
}
pub fn oround<D: Num>(a: D) -> D {
    D::from(a.re().round())
}
pub fn otrunc<D: Num>(a: D) -> D {
    D::from(a.re().trunc())
}
pub fn ofract<D: Num>(a: D) -> D {
    a - D::from(a.re().trunc())
}
/// The argument `f64::max` returns (bitwise, for `max(-0.0, 0.0)`).
pub fn omax<D: Num>(a: D, b: D) -> D {
    if a.re().max(b.re()).to_bits() == a.re().to_bits() {
        a
    } else {
        b
    }
}
pub fn omin<D: Num>(a: D, b: D) -> D {
    if a.re().min(b.re()).to_bits() == a.re().to_bits() {
        a
    } else {
        b
    }
}
pub fn oclamp<D: Num>(a: D, lo: f64, hi: f64) -> D {
    if a.re() < lo {
        D::from(lo)
    } else if a.re() > hi {
        D::from(hi)
    } else {
        a
    }
}
thread_local! {
    /// Set while the oracle serves as the reference of finite differences, which see
    /// through `no_grad`.
    static NO_GRAD_TRANSPARENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `no_grad(a)`: the value without its derivative (with it for finite differences).
pub fn ong<D: Num>(a: D) -> D {
    if NO_GRAD_TRANSPARENT.with(|t| t.get()) {
        a
    } else {
        D::from(a.re())
    }
}
/// `f64`'s `Sum` starts from -0.0 (an empty sum is -0.0, which `signum` tells from 0.0);
/// num-dual's from 0.0.
pub fn osum<D: Num>(it: impl Iterator<Item = D>) -> D {
    it.fold(D::from(-0.0), |a, b| a + b)
}
/// `sqrt(a² + b²)`, scaled so that large arguments do not overflow.
pub fn ohypot<D: Num>(a: D, b: D) -> D {
    let m = D::from(a.re().abs().max(b.re().abs()).max(f64::MIN_POSITIVE));
    let (x, y) = (a / m, b / m);
    exact((x * x + y * y).sqrt() * m, a.re().hypot(b.re()))
}
/// `a` lifted through `f` with derivative `df` at `a.re()`.
pub fn lift<D: Num>(a: D, f: f64, df: f64) -> D {
    a.lift(f, df)
}
/// num-dual 0.15 computes `tanh` as `sinh / cosh`: NaN beyond |x| ≈ 710, and rounded
/// unlike `f64::tanh`.
pub fn otanh<D: Num>(a: D) -> D {
    let t = a.re().tanh();
    lift(a, t, 1.0 - t * t)
}
/// num-dual rounds `powi` for exponents other than 0, 1, 2 unlike `f64::powi`.
/// (Where num-dual's formula overflows, as `x^(n-3)` underflowing to 0 times `x³`
/// overflowing, the value and derivative come from the `f64` method.)
pub fn opowi<D: Num>(a: D, n: i32) -> D {
    let v = a.powi(n);
    if v.re().is_finite() && v.tangent().is_finite() {
        exact(v, a.re().powi(n))
    } else {
        lift(a, a.re().powi(n), n as f64 * a.re().powi(n - 1))
    }
}
/// num-dual computes `tan` as `sin / cos` and `powf` as `x^(n-3) x x x`.
pub fn otan<D: Num>(a: D) -> D {
    exact(a.tan(), a.re().tan())
}
pub fn opowf<D: Num>(a: D, n: f64) -> D {
    let v = a.powf(n);
    if v.re().is_finite() && v.tangent().is_finite() {
        exact(v, a.re().powf(n))
    } else {
        lift(a, a.re().powf(n), n * a.re().powf(n - 1.0))
    }
}
pub fn omul_add<D: Num>(a: D, b: D, c: D) -> D {
    exact(a * b + c, a.re().mul_add(b.re(), c.re()))
}
pub fn opowd<D: Num>(a: D, b: D) -> D {
    exact(a.powd(b), a.re().powf(b.re()))
}
pub fn olog<D: Num>(a: D, base: D) -> D {
    odiv(a.ln(), base.ln())
}
/// num-dual divides as `a * (1 / b)`.
pub fn odiv<D: Num>(a: D, b: D) -> D {
    exact(a / b, a.re() / b.re())
}
pub fn odeg<D: Num>(a: D) -> D {
    a * D::from(180.0 / std::f64::consts::PI)
}
pub fn orad<D: Num>(a: D) -> D {
    a * D::from(std::f64::consts::PI / 180.0)
}

// ------------------------------------------------------------------ the batch

/// `(z, dz, n, m) -> (primal, tangent)`.
pub type FwdFn<T> = fn(&[T], &[T], usize, usize) -> (Option<T>, T);
/// `(z, shadow, seed, n, m) -> primal`.
pub type RevFn<T> = fn(&[T], &mut [T], T, usize, usize) -> Option<T>;
/// `(z, v, hv, n, m)`: `H·v` into `hv` (forward over reverse), laid out as the gradient.
pub type HvpFn<T> = fn(&[T], &[T], &mut [T], usize, usize);
/// `(z, n, m) -> f` in num-dual numbers.
pub type OracleFn = fn(&[Dual64], usize, usize) -> Dual64;

/// One generated function, through wrappers over its flattened inputs `z`: the elements of
/// its slice parameters (each of length `n`), then its scalar parameters. `m` is the value
/// of its `usize` parameter, if it has one. `T` is `f64`, or `f32` in the batch's twin.
pub struct Case<T: 'static = f64> {
    pub name: &'static str,
    pub index: usize,
    pub slices: usize,
    pub scalars: usize,
    /// Per slice then per scalar parameter: `Dual` in the forward companion.
    pub fwd_mask: &'static [bool],
    /// Per slice then per scalar parameter: `Duplicated`/`Active` in the reverse companion.
    pub rev_mask: &'static [bool],
    pub primal: fn(&[T], usize, usize) -> T,
    /// The oracle (none in the `f32` twin).
    pub oracle: Option<OracleFn>,
    /// `(primal unless DualOnly, tangent)` along `dz` (its components for `Const`
    /// parameters are not passed).
    pub fwd: Option<FwdFn<T>>,
    /// Adds the gradient times `seed` into `g` (shadows of slices, adjoints of scalars);
    /// returns the primal unless ActiveOnly.
    pub rev: Option<RevFn<T>>,
    /// The Hessian-vector product of the reverse companion's inputs (`Duplicated` and
    /// `Active` parameters) along `v` over all float inputs.
    pub hvp: Option<HvpFn<T>>,
}

impl<T> Case<T> {
    /// The parameter that input component `i` belongs to, with slices of length `n`
    /// first, then the scalars: the index into `fwd_mask` and `rev_mask`.
    fn param_of(&self, i: usize, n: usize) -> usize {
        if i < self.slices * n {
            i / n
        } else {
            self.slices + i - self.slices * n
        }
    }
}

/// The functions and the struct that generated code calls besides its helpers, in the
/// float type `$f` (`f64` for the batch, `f32` for its twin).
macro_rules! called_by_batches {
    ($f:ident) => {
        /// The higher-order function of the `hof` construct: `Σ_{i<n} f(a + i/4)`,
        /// differentiated through its closure argument.
        #[differentiable]
        pub fn hof_sum<F: Fn($f) -> $f>(f: F, a: $f, n: usize) -> $f {
            let mut s = 0.0;
            for i in 0..n {
                s += f(a + i as $f * 0.25);
            }
            s
        }

        /// The struct of the `struct_value` construct: neither `Clone` nor `Copy`, which
        /// struct values built in differentiated code do not need.
        pub struct Pt {
            pub a: $f,
            pub b: $f,
        }

        impl Pt {
            #[differentiable]
            pub fn dot(&self, o: &Pt) -> $f {
                self.a * o.a + self.b * o.b
            }
        }

        #[differentiable]
        pub fn pt_cross(p: &Pt, q: &Pt) -> $f {
            p.a * q.b - p.b * q.a
        }

        /// The struct of the `method` construct, whose `&mut self` helper methods the
        /// batch defines. Marked, so that derivative code has a zero of it where it needs
        /// one (a struct built in the function and lent to a method), and `Clone`, so
        /// that the reverse sweep can save it around a method that changes it.
        #[differentiable]
        #[derive(Clone)]
        pub struct Acc {
            pub v: Vec<$f>,
            pub s: $f,
        }
    };
}

called_by_batches!(f64);

/// The oracle of [`Pt`].
pub struct OPt<D> {
    pub a: D,
    pub b: D,
}

impl<D: Num> OPt<D> {
    pub fn dot(&self, o: &OPt<D>) -> D {
        self.a * o.a + self.b * o.b
    }
}

/// The oracle of [`Acc`] (its methods are the batch's).
pub struct OAcc<D> {
    pub v: Vec<D>,
    pub s: D,
}

/// The oracle of [`pt_cross`].
pub fn opt_cross<D: Num>(p: &OPt<D>, q: &OPt<D>) -> D {
    p.a * q.b - p.b * q.a
}

/// The oracle of [`hof_sum`].
pub fn hof_sum_o<D: Num>(f: impl Fn(D) -> D, a: D, n: usize) -> D {
    let mut s = D::from(0.0);
    for i in 0..n {
        s += f(a + D::from(i as f64 * 0.25));
    }
    s
}

#[allow(
    clippy::all,
    unused,
    unused_mut,
    unused_variables,
    unused_assignments,
    unreachable_code,
    non_camel_case_types
)]
mod batch {
    use super::*;
    #[cfg(not(clippy))]
    include!(concat!(env!("OUT_DIR"), "/batch.rs"));
    // Clippy is not run on the batch: it is machine-written code, compiled and checked
    // by the tests, and linting it took half of clippy's time on the workspace.
    #[cfg(clippy)]
    pub const SEED: u64 = 0;
    #[cfg(clippy)]
    pub static CASES: &[Case] = &[];
}

/// The batch in `f32` (`autodiff_fuzzgen::in_f32`), without oracles: checked against the
/// `f64` batch by [`f32_companions_match_f64_companions`].
#[allow(
    clippy::all,
    unused,
    unused_mut,
    unused_variables,
    unused_assignments,
    unreachable_code,
    non_camel_case_types
)]
mod batch_f32 {
    use autodiff_core::prelude::*;

    pub type Case = super::Case<f32>;

    called_by_batches!(f32);

    #[cfg(not(clippy))]
    include!(concat!(env!("OUT_DIR"), "/batch_f32.rs"));
    #[cfg(clippy)]
    pub static CASES: &[Case] = &[];
}

// ------------------------------------------------------------------ checks

fn close(what: &str, got: f64, want: f64, tol: f64) -> Result<(), String> {
    let scale = 1.0_f64.max(got.abs()).max(want.abs());
    if (got - want).abs() <= tol * scale && got.is_finite() && want.is_finite() {
        Ok(())
    } else {
        Err(format!(
            "{what}: got {got:e}, expected {want:e} (difference {:e}, tolerance {tol:e} relative to {scale:e})",
            (got - want).abs()
        ))
    }
}

/// [`TOL`] relative to the larger of `got`, `want`, 1 and `terms`, the largest tangent of
/// the oracle's locals (but at most [`MAX_LOOSENING`] times the first three): a derivative
/// summed from large terms that cancel is only exact to the rounding of those terms, and
/// the modes sum them in different orders. In the CI batch 94% of the comparisons are not
/// loosened by more than 10 times, 0.5% by more than 10^4.
fn close_terms(what: &str, got: f64, want: f64, terms: f64) -> Result<(), String> {
    let own = 1.0_f64.max(got.abs()).max(want.abs());
    let scale = own.max(terms.abs().min(MAX_LOOSENING * own));
    if (got - want).abs() <= TOL * scale && got.is_finite() && want.is_finite() {
        Ok(())
    } else {
        Err(format!(
            "{what}: got {got:e}, expected {want:e} (difference {:e}, tolerance {TOL:e} \
             relative to {scale:e}; largest term {terms:e})",
            (got - want).abs()
        ))
    }
}

/// `x <= bound`, false for NaN.
fn within(x: f64, bound: f64) -> bool {
    x <= bound
}

#[derive(Default)]
struct Stats {
    points: usize,
    fd_checked: usize,
    fd_skipped: usize,
    /// H·v components compared with differences of the gradient, and skipped near kinks.
    hvp_checked: usize,
    hvp_skipped: usize,
    /// The largest |f| checked, and how many points were not checked because |f| > LARGE,
    /// a tangent > LARGE_TERM, or either is not finite (the generator keeps values
    /// moderate; few such points).
    largest: f64,
    large: usize,
}

/// Checks one case at one random point.
fn check_point(case: &Case, rng: &mut Rng, stats: &mut Stats) -> Result<(), String> {
    let n = rng.range(2, 5);
    let m = rng.range(1, 3);
    let len = case.slices * n + case.scalars;
    let z: Vec<f64> = (0..len).map(|_| rng.uniform(-1.5, 1.5)).collect();
    let v: Vec<f64> = (0..len).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let seed = rng.uniform(0.5, 2.0);
    let at = format!("n = {n}, m = {m}, z = {z:?}");
    // The masks per component.
    let fmask: Vec<bool> = (0..len)
        .map(|i| case.fwd_mask[case.param_of(i, n)])
        .collect();
    let rmask: Vec<bool> = (0..len)
        .map(|i| case.rev_mask[case.param_of(i, n)])
        .collect();
    let oracle = case.oracle.ok_or("a case without an oracle")?;
    // The oracle along a direction: its value and the largest tangent of its locals.
    let along = |dir: &[f64]| -> (Dual64, f64) {
        let zd: Vec<Dual64> = z
            .iter()
            .zip(dir)
            .map(|(a, b)| Dual64::new(*a, *b))
            .collect();
        LARGEST_TANGENT.with(|c| c.set(0.0));
        let r = oracle(&zd, n, m);
        (r, LARGEST_TANGENT.with(|c| c.get()))
    };

    // Primal against the oracle's real part. Points where the function is huge (or not
    // finite) say nothing at these tolerances: they are counted, not checked.
    let p = (case.primal)(&z, n, m);
    if !within(p.abs(), LARGE) {
        stats.large += 1;
        return Ok(());
    }
    stats.largest = stats.largest.max(p.abs());
    let (o, overflow) = along(&vec![0.0; len]);
    if !within(overflow, LARGE_TERM) {
        // A local of the oracle overflows (and is then overwritten).
        stats.large += 1;
        return Ok(());
    }
    close("primal vs oracle", p, o.re, TOL).map_err(|e| format!("{e} at {at}"))?;

    // Forward: the tangent along v restricted to the Dual parameters.
    let vf: Vec<f64> = v
        .iter()
        .zip(&fmask)
        .map(|(a, on)| if *on { *a } else { 0.0 })
        .collect();
    if let Some(fwd) = case.fwd {
        let (pf, t) = fwd(&z, &vf, n, m);
        if let Some(pf) = pf {
            close("forward primal", pf, p, TOL).map_err(|e| format!("{e} at {at}"))?;
        }
        let (want_t, big) = along(&vf);
        if !within(big, LARGE_TERM) || !want_t.eps.is_finite() {
            // Derivatives overflow inside the function: nothing to compare.
            stats.large += 1;
            return Ok(());
        }
        close_terms("forward tangent vs oracle", t, want_t.eps, big)
            .map_err(|e| format!("{e} at {at}, v = {vf:?}"))?;
    }

    // Reverse: shadows start at SHADOW_INIT (gradients must be added), scalar adjoints at 0.
    if let Some(rev) = case.rev {
        let mut g: Vec<f64> = (0..len)
            .map(|i| {
                if i < case.slices * n {
                    SHADOW_INIT
                } else {
                    0.0
                }
            })
            .collect();
        let pr = rev(&z, &mut g, seed, n, m);
        if let Some(pr) = pr {
            close("reverse primal", pr, p, TOL).map_err(|e| format!("{e} at {at}"))?;
        }
        for (i, gi) in g.iter_mut().enumerate() {
            if i < case.slices * n {
                *gi -= SHADOW_INIT;
            }
        }
        for i in 0..len {
            let what = format!("reverse gradient[{i}] (seed {seed})");
            if rmask[i] {
                let mut e = vec![0.0; len];
                e[i] = 1.0;
                let (want, big) = along(&e);
                if !within(big, LARGE_TERM) || !want.eps.is_finite() {
                    stats.large += 1;
                    return Ok(());
                }
                close_terms(&what, g[i], seed * want.eps, seed * big)
                    .map_err(|e| format!("{e} at {at}"))?;
            } else if g[i] != 0.0 {
                return Err(format!("{what}: Const input got {} at {at}", g[i]));
            }
        }

        // Forward and reverse agree: ⟨∇f, v⟩ = J·v over the inputs active in both.
        let vb: Vec<f64> = (0..len)
            .map(|i| if fmask[i] && rmask[i] { v[i] } else { 0.0 })
            .collect();
        if let Some(fwd) = case.fwd
            && vb.iter().any(|x| *x != 0.0)
        {
            let (_, tb) = fwd(&z, &vb, n, m);
            let dot: f64 = g.iter().zip(&vb).map(|(a, b)| a * b).sum();
            let (_, big) = along(&vb);
            close_terms("⟨∇f, v⟩ vs J·v", dot, seed * tb, seed * big)
                .map_err(|e| format!("{e} at {at}, v = {vb:?}"))?;
        }
    }

    // Hessian-vector product against central differences of the reverse gradient along
    // v (two step sizes; where they disagree, a kink is near and the point is skipped).
    if let (Some(rev), Some(hvp)) = (case.rev, case.hvp) {
        let mut hv = vec![0.0; len];
        hvp(&z, &v, &mut hv, n, m);
        let grad_at = |h: f64| {
            let zh: Vec<f64> = z.iter().zip(&v).map(|(a, b)| a + h * b).collect();
            let mut g = vec![0.0; len];
            rev(&zh, &mut g, 1.0, n, m);
            g
        };
        let fd = |h: f64| -> Vec<f64> {
            let (gp, gm) = (grad_at(h), grad_at(-h));
            gp.iter()
                .zip(&gm)
                .map(|(a, b)| (a - b) / (2.0 * h))
                .collect()
        };
        let (f1, f2) = (fd(FD_H), fd(FD_H / 32.0));
        for i in 0..len {
            let scale = 1.0_f64.max(f1[i].abs()).max(f2[i].abs());
            if !within((f1[i] - f2[i]).abs(), FD_SMOOTH * scale) || !within(scale, LARGE) {
                stats.hvp_skipped += 1;
                continue;
            }
            if rmask[i] {
                close(
                    &format!("H·v[{i}] vs differences of the gradient"),
                    hv[i],
                    f1[i],
                    HVP_TOL,
                )
                .map_err(|e| format!("{e} at {at}, v = {v:?}"))?;
                stats.hvp_checked += 1;
            } else if hv[i] != 0.0 {
                return Err(format!("H·v[{i}]: Const input got {} at {at}", hv[i]));
            }
        }
    }

    // Finite differences of the primal along v against the oracle.
    let fd = |h: f64| {
        let zp: Vec<f64> = z.iter().zip(&v).map(|(a, b)| a + h * b).collect();
        let zm: Vec<f64> = z.iter().zip(&v).map(|(a, b)| a - h * b).collect();
        ((case.primal)(&zp, n, m) - (case.primal)(&zm, n, m)) / (2.0 * h)
    };
    // Two Richardson extrapolations, from steps (h, h/2) and (h/32, h/64): where they
    // disagree, a kink or jumps lie within h of the point.
    let richardson = |h: f64| (4.0 * fd(h / 2.0) - fd(h)) / 3.0;
    let (r1, r2) = (richardson(FD_H), richardson(FD_H / 32.0));
    let scale = 1.0_f64.max(r1.abs()).max(r2.abs());
    NO_GRAD_TRANSPARENT.with(|t| t.set(true));
    let want = along(&v).0.eps;
    NO_GRAD_TRANSPARENT.with(|t| t.set(false));
    if !within((r1 - r2).abs(), FD_SMOOTH * scale) || !within(want.abs(), LARGE) {
        stats.fd_skipped += 1;
    } else {
        close("finite differences vs oracle", r1, want, FD_TOL)
            .map_err(|e| format!("{e} at {at}, v = {v:?}"))?;
        stats.fd_checked += 1;
    }
    stats.points += 1;
    Ok(())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

#[test]
fn generated_functions_match_oracles() {
    let points = env_usize("AUTODIFF_FUZZ_POINTS", 3);
    let cases = batch::CASES;
    println!(
        "differential: seed {}, {} functions, {points} points each (rebuild with \
         AUTODIFF_FUZZ_SEED={} AUTODIFF_FUZZ_COUNT=.. to reproduce)",
        batch::SEED,
        cases.len(),
        batch::SEED
    );
    let mut stats = Stats::default();
    let mut failures = Vec::new();
    // Silence the default hook: panics of generated code are reported as failures.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for case in cases {
        let mut rng = Rng::stream(batch::SEED ^ 0x7E57, case.index as u64);
        for _ in 0..points {
            let r = catch_unwind(AssertUnwindSafe(|| check_point(case, &mut rng, &mut stats)));
            let err = match r {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e,
                Err(p) => format!(
                    "panicked: {}",
                    p.downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| p.downcast_ref::<&str>().copied())
                        .unwrap_or("?")
                ),
            };
            failures.push(format!(
                "{} (show it with `cargo run -p autodiff-fuzzgen -- show --seed {} --index {}`): {err}",
                case.name,
                batch::SEED,
                case.index
            ));
            break;
        }
    }
    std::panic::set_hook(hook);
    println!(
        "differential: {} points checked, {} finite-difference checks, {} skipped (kinks, steep), \
         {} H·v components checked, {} skipped, \
         largest |f| {:.3e}, {} points skipped with |f| > 1e8 or huge derivatives, {} failures",
        stats.points,
        stats.fd_checked,
        stats.fd_skipped,
        stats.hvp_checked,
        stats.hvp_skipped,
        stats.largest,
        stats.large,
        failures.len()
    );
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} generated functions failed",
        failures.len(),
        cases.len()
    );
    // Near-kink and large-value skips are rare at random points (a few percent); many of
    // them mean the checks lost their teeth.
    assert!(
        stats.fd_skipped * 10 <= stats.points.max(1),
        "{} of {} finite-difference checks skipped",
        stats.fd_skipped,
        stats.points
    );
    assert!(
        stats.large * 20 <= stats.points.max(1),
        "{} points with |f| > {LARGE:e} skipped, {} checked",
        stats.large,
        stats.points
    );
}

/// The checks can fail: a wrong tangent, gradient or oracle is caught.
#[test]
fn checks_catch_wrong_derivatives() {
    fn sq_primal(z: &[f64], _: usize, _: usize) -> f64 {
        z.iter().map(|v| v * v).sum()
    }
    fn sq_oracle(z: &[Dual64], _: usize, _: usize) -> Dual64 {
        z.iter().map(|v| *v * *v).sum()
    }
    fn wrong_oracle(z: &[Dual64], _: usize, _: usize) -> Dual64 {
        z.iter().map(|v| *v * *v * 1.0000001).sum::<Dual64>() - Dual64::from(0.0)
    }
    fn wrong_tangent_oracle(z: &[Dual64], _: usize, _: usize) -> Dual64 {
        // Right values, derivatives 1% off: only the finite differences can tell.
        z.iter()
            .map(|v| Dual64::new(v.re * v.re, 2.02 * v.re * v.eps))
            .sum()
    }
    fn sq_fwd(z: &[f64], dz: &[f64], _: usize, _: usize) -> (Option<f64>, f64) {
        (
            Some(sq_primal(z, 0, 0)),
            z.iter().zip(dz).map(|(a, b)| 2.0 * a * b).sum(),
        )
    }
    fn bad_fwd(z: &[f64], dz: &[f64], _: usize, _: usize) -> (Option<f64>, f64) {
        (
            Some(sq_primal(z, 0, 0)),
            z.iter().zip(dz).map(|(a, b)| 2.0 * a * b).sum::<f64>() * (1.0 + 1e-7),
        )
    }
    fn sq_rev(z: &[f64], g: &mut [f64], s: f64, _: usize, _: usize) -> Option<f64> {
        for (gi, a) in g.iter_mut().zip(z) {
            *gi += 2.0 * a * s;
        }
        Some(sq_primal(z, 0, 0))
    }
    fn assigning_rev(z: &[f64], g: &mut [f64], s: f64, _: usize, _: usize) -> Option<f64> {
        for (gi, a) in g.iter_mut().zip(z) {
            *gi = 2.0 * a * s;
        }
        Some(sq_primal(z, 0, 0))
    }
    fn sq_hvp(_: &[f64], v: &[f64], hv: &mut [f64], _: usize, _: usize) {
        for (h, b) in hv.iter_mut().zip(v) {
            *h = 2.0 * b;
        }
    }
    fn bad_hvp(_: &[f64], v: &[f64], hv: &mut [f64], _: usize, _: usize) {
        for (h, b) in hv.iter_mut().zip(v) {
            *h = 2.0001 * b;
        }
    }
    let good = Case {
        name: "sq",
        index: 0,
        slices: 1,
        scalars: 0,
        fwd_mask: &[true],
        rev_mask: &[true],
        primal: sq_primal,
        oracle: Some(sq_oracle),
        fwd: Some(sq_fwd),
        rev: Some(sq_rev),
        hvp: Some(sq_hvp),
    };
    let mut stats = Stats::default();
    let mut rng = Rng::new(1);
    check_point(&good, &mut rng, &mut stats).unwrap();
    for (what, case) in [
        (
            "forward",
            Case {
                fwd: Some(bad_fwd),
                ..good
            },
        ),
        (
            "reverse accumulation",
            Case {
                rev: Some(assigning_rev),
                ..good
            },
        ),
        (
            "oracle",
            Case {
                oracle: Some(wrong_oracle),
                ..good
            },
        ),
        (
            "masks",
            Case {
                rev_mask: &[false],
                ..good
            },
        ),
        (
            "Hessian-vector product",
            Case {
                hvp: Some(bad_hvp),
                ..good
            },
        ),
        (
            "oracle derivative (finite differences)",
            Case {
                oracle: Some(wrong_tangent_oracle),
                fwd: None,
                rev: None,
                ..good
            },
        ),
    ] {
        let mut rng = Rng::new(1);
        assert!(
            check_point(&case, &mut rng, &mut stats).is_err(),
            "a wrong {what} passed"
        );
    }
}

// ------------------------------------------------------------------ f32

/// How far an `f32` derivative may be from the `f64` one, relative to the largest
/// component (and 1): rounding in `f32`, amplified by the function, reaches a few 1e-3
/// (TESTING.md); a wrong rule, a dropped term or a wrong sign is off by far more.
const F32_TOL: f64 = 1e-2;

/// The signs of the moves by a rounding of `f32` with which [`f32_companions_match_f64_companions`]
/// tells a derivative too steep for `f32`, per input: alternating, all up, and in runs
/// of three.
const STEADY_SIGNS: [fn(usize) -> f64; 3] = [
    |i| if i % 2 == 0 { 1.0 } else { -1.0 },
    |_| 1.0,
    |i| if (i / 3) % 2 == 0 { -1.0 } else { 1.0 },
];

/// The same batch in `f32` against the `f64` batch, at inputs that both represent: the
/// values, tangents, gradients and H·v of the `f32` companions must be those of the `f64`
/// ones, to `f32` precision. Points where the `f32` value already differs (a branch taken
/// the other way on a rounded value, or a steep function) say nothing and are skipped.
#[test]
fn f32_companions_match_f64_companions() {
    let (mut checked, mut skipped, mut steep, mut overflowed, mut other) = (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for (c, c32) in batch::CASES.iter().zip(batch_f32::CASES) {
        assert_eq!(c.name, c32.name);
        let mut rng = Rng::stream(batch::SEED ^ 0xF32, c.index as u64);
        for _ in 0..3 {
            let n = rng.range(2, 5);
            let m = rng.range(1, 3);
            let len = c.slices * n + c.scalars;
            let z: Vec<f32> = (0..len).map(|_| rng.uniform(-1.5, 1.5) as f32).collect();
            let v: Vec<f32> = (0..len).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
            let (z64, v64) = (widen(&z), widen(&v));
            let p = (c.primal)(&z64, n, m);
            let p32 = f64::from((c32.primal)(&z, n, m));
            if !within(p.abs(), 1e4) || (p - p32).abs() > 1e-4 * (1.0 + p.abs()) {
                skipped += 1;
                continue;
            }
            // The derivatives in f64, and again at inputs moved by a rounding of f32 (in
            // three patterns of signs: one pattern can miss the direction in which a
            // derivative moves): a derivative that moves by more than a part of the
            // tolerance there is too steep for f32 to match (its Hessian amplifies the
            // inputs' rounding, and the rounding of every intermediate value).
            let want = derivatives(c, &z64, &v64, n, m);
            let steady = STEADY_SIGNS.iter().all(|sign| {
                let moved: Vec<f64> = z64
                    .iter()
                    .enumerate()
                    .map(|(i, x)| x * (1.0 + f64::from(f32::EPSILON) * sign(i)))
                    .collect();
                want.iter()
                    .zip(derivatives(c, &moved, &v64, n, m))
                    .all(|((_, a), (_, b))| {
                        let scale = a.iter().fold(1.0_f64, |s, w| s.max(w.abs()));
                        a.iter()
                            .zip(&b)
                            .all(|(a, b)| (a - b).abs() <= F32_TOL / 4.0 * scale)
                    })
            });
            if !steady {
                steep += 1;
                continue;
            }
            let got = derivatives(c32, &z, &v, n, m);
            assert_eq!(
                want.len(),
                got.len(),
                "{}: the f32 twin has other companions",
                c.name
            );
            // Non-finite in f32 only, where every f64 derivative is finite: an intermediate
            // beyond f32's range (3.4e38; f64 reaches 1.8e308), such as `inf - inf` of a
            // value that a later branch or empty sum drops from the result but not from
            // the derivatives' products with a zero adjoint.
            let finite_in_f64 = want.iter().all(|(_, w)| w.iter().all(|w| w.is_finite()));
            let finite_in_f32 = got.iter().all(|(_, g)| g.iter().all(|g| g.is_finite()));
            if finite_in_f64 && !finite_in_f32 {
                overflowed += 1;
                continue;
            }
            let mut errs = Vec::new();
            let mut other_function = true;
            for ((what, want), (_, got)) in want.iter().zip(&got) {
                let scale = want.iter().fold(1.0_f64, |s, w| s.max(w.abs()));
                for (i, (w, g)) in want.iter().zip(got).enumerate() {
                    let g = f64::from(*g);
                    let err = (w - g).abs();
                    if err.is_nan() || err > F32_TOL * scale {
                        errs.push(format!("{what}[{i}]: f32 {g:e}, f64 {w:e}"));
                        other_function &=
                            f32_slope_agrees(c32, &z, &v, n, m, what, i, g, *w, F32_TOL * scale);
                    }
                }
            }
            // The f32 function itself has another slope here (its central differences
            // give the f32 derivative, not the f64 one: a branch or a rounding step taken
            // otherwise by its own rounding, while its value stays close): the f32
            // companions are right for the function f32 computes.
            if !errs.is_empty() && other_function {
                other += 1;
                continue;
            }
            checked += 1;
            if !errs.is_empty() {
                failures.push(format!(
                    "{} (show it with `cargo run -p autodiff-fuzzgen -- show --seed {} --index {}`) \
                     at n = {n}, m = {m}, z = {z:?}: {}",
                    c.name,
                    batch::SEED,
                    c.index,
                    errs.join("; ")
                ));
                break;
            }
        }
    }
    println!(
        "f32: {checked} points checked against f64, {skipped} skipped (value off in f32), \
         {steep} skipped (derivatives too steep for f32), {overflowed} skipped (f32 overflowed), \
         {other} skipped (another slope in f32)"
    );
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} functions differ in f32",
        failures.len()
    );
    let skipped = skipped + steep + overflowed + other;
    assert!(
        skipped * 5 <= checked,
        "{} of {} points skipped",
        skipped,
        checked + skipped
    );
}

/// The seed of the gradients that [`derivatives`] takes.
const GRADIENT_SEED: f32 = 1.25;

/// The tangent along `v`, the gradient (seed [`GRADIENT_SEED`]) and `H·v` at `z`, of those
/// the case has.
fn derivatives<T>(c: &Case<T>, z: &[T], v: &[T], n: usize, m: usize) -> Vec<(&'static str, Vec<T>)>
where
    T: Copy + Default + From<f32>,
{
    let len = z.len();
    let mut out = Vec::new();
    if let Some(f) = c.fwd {
        out.push(("tangent", vec![f(z, v, n, m).1]));
    }
    if let Some(r) = c.rev {
        let mut g = vec![T::default(); len];
        r(z, &mut g, T::from(GRADIENT_SEED), n, m);
        out.push(("gradient", g));
    }
    if let Some(h) = c.hvp {
        let mut hv = vec![T::default(); len];
        h(z, v, &mut hv, n, m);
        out.push(("H·v", hv));
    }
    out
}

/// Whether the f32 primal's central difference (a step of `1e-3`, along `z[i]` for a
/// gradient's component, scaled by [`GRADIENT_SEED`], or along the `Dual` components of `v`
/// for the tangent) agrees with the f32 derivative `got` and not with the f64 one, `want`,
/// to `tol`. Other derivatives (H·v) never do.
#[allow(clippy::too_many_arguments)]
fn f32_slope_agrees(
    c: &Case<f32>,
    z: &[f32],
    v: &[f32],
    n: usize,
    m: usize,
    what: &str,
    i: usize,
    got: f64,
    want: f64,
    tol: f64,
) -> bool {
    let h = 1e-3_f32;
    let dir: Vec<f32> = match what {
        "gradient" => (0..z.len())
            .map(|k| if k == i { 1.0 } else { 0.0 })
            .collect(),
        "tangent" => (0..z.len())
            .map(|k| {
                if c.fwd_mask[c.param_of(k, n)] {
                    v[k]
                } else {
                    0.0
                }
            })
            .collect(),
        _ => return false,
    };
    let at = |t: f32| -> Vec<f32> { z.iter().zip(&dir).map(|(x, d)| x + t * d).collect() };
    let slope = f64::from(((c.primal)(&at(h), n, m) - (c.primal)(&at(-h), n, m)) / (2.0 * h));
    let slope = if what == "gradient" {
        slope * f64::from(GRADIENT_SEED)
    } else {
        slope
    };
    (slope - got).abs() <= tol && (slope - want).abs() > tol
}

fn widen(x: &[f32]) -> Vec<f64> {
    x.iter().map(|v| f64::from(*v)).collect()
}
