//! Differential test: a batch of random functions (written by the build script, see
//! `src/gen.rs`) is compiled with `#[autodiff_forward]` and `#[autodiff_reverse]`, and each
//! function is checked at random points against
//!
//! - its oracle, the same body generic over a num-dual number, evaluated with `Dual64`:
//!   primal values, forward tangents and reverse gradients (exact derivatives, compared to
//!   `TOL` relative);
//! - itself: `⟨∇f, v⟩ = J·v` between its reverse and forward companions;
//! - central finite differences (Richardson-extrapolated) of the primal, against the oracle's
//!   directional derivative (`FD_TOL`), a second opinion on the oracle.
//!
//! The batch size and seed come from `AUTODIFF_FUZZ_COUNT` / `AUTODIFF_FUZZ_SEED` at build
//! time (CI: 300 functions, a fixed seed); `AUTODIFF_FUZZ_POINTS` sets the points per
//! function. See `TESTING.md`.

use autodiff_core::prelude::*;
use autodiff_fuzzgen::{Rng, SHADOW_INIT};
use num_dual::{Dual64, DualNum};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A num-dual scalar over `f64`: the oracles are generic over it.
pub trait Num: DualNum<Primitive = f64> + Copy {}
impl<T: DualNum<Primitive = f64> + Copy> Num for T {}

/// Exact derivatives (forward, reverse, oracle) agree to this, relative to the larger
/// magnitude or absolute below 1.
const TOL: f64 = 1e-9;
/// Finite differences agree with the oracle to this.
const FD_TOL: f64 = 1e-5;
/// Finite-difference step (along a direction of norm at most `sqrt(N)`).
const FD_H: f64 = 1e-4;
/// The two finite differences (steps `h` and `h/2`) disagreeing by more than this (relative)
/// means a kink or a jump within `h` of the point: its finite-difference check is skipped.
const FD_SMOOTH: f64 = 1e-6;

// ------------------------------------------------------------------ oracle helpers
// The oracle spelling of the float methods num-dual lacks or defines differently. Where
// num-dual's formula rounds differently from the `f64` operation (`a / b` as `a * (1 / b)`,
// `tan` as `sin / cos`, `powf` and `powi` as `x^(n-3) x x x`, `tanh` as `sinh / cosh`,
// unfused `mul_add`, `hypot`), the real part is replaced by the `f64` operation's, so that
// the plain function and its oracle agree to the last bit and take the same branches.

/// `v` with its real part replaced by `re` (close to it): `re - v.re()` is exact.
pub fn exact<D: Num>(v: D, re: f64) -> D {
    v + D::from(re - v.re())
}

pub fn oabs<D: Num>(a: D) -> D {
    if a.re() < 0.0 { -a } else { a }
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
pub fn omax<D: Num>(a: D, b: D) -> D {
    if a.re() >= b.re() { a } else { b }
}
pub fn omin<D: Num>(a: D, b: D) -> D {
    if a.re() <= b.re() { a } else { b }
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
/// `sqrt(a² + b²)`, scaled so that large arguments do not overflow.
pub fn ohypot<D: Num>(a: D, b: D) -> D {
    let m = D::from(a.re().abs().max(b.re().abs()).max(f64::MIN_POSITIVE));
    let (x, y) = (a / m, b / m);
    exact((x * x + y * y).sqrt() * m, a.re().hypot(b.re()))
}
/// `a` lifted through `f` with derivative `df` at `a.re()`: exact for first-order dual
/// numbers (the oracle runs with `Dual64` and `f64`).
pub fn lift<D: Num>(a: D, f: f64, df: f64) -> D {
    D::from(f) + (a - D::from(a.re())) * D::from(df)
}
/// num-dual 0.15 computes `tanh` as `sinh / cosh`: NaN beyond |x| ≈ 710, and rounded
/// unlike `f64::tanh`.
pub fn otanh<D: Num>(a: D) -> D {
    let t = a.re().tanh();
    lift(a, t, 1.0 - t * t)
}
/// num-dual rounds `powi` for exponents other than 0, 1, 2 unlike `f64::powi`.
pub fn opowi<D: Num>(a: D, n: i32) -> D {
    exact(a.powi(n), a.re().powi(n))
}
/// num-dual computes `tan` as `sin / cos` and `powf` as `x^(n-3) x x x`.
pub fn otan<D: Num>(a: D) -> D {
    exact(a.tan(), a.re().tan())
}
pub fn opowf<D: Num>(a: D, n: f64) -> D {
    exact(a.powf(n), a.re().powf(n))
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

/// One generated function, through wrappers over its flattened inputs `z`: the elements of
/// its slice parameters (each of length `n`), then its scalar parameters. `m` is the value
/// of its `usize` parameter, if it has one.
pub struct Case {
    pub name: &'static str,
    pub index: usize,
    pub slices: usize,
    pub scalars: usize,
    /// Per slice then per scalar parameter: `Dual` in the forward companion.
    pub fwd_mask: &'static [bool],
    /// Per slice then per scalar parameter: `Duplicated`/`Active` in the reverse companion.
    pub rev_mask: &'static [bool],
    pub primal: fn(&[f64], usize, usize) -> f64,
    pub oracle: fn(&[Dual64], usize, usize) -> Dual64,
    /// `(primal unless DualOnly, tangent)` along `dz` (its components for `Const`
    /// parameters are not passed).
    pub fwd: fn(&[f64], &[f64], usize, usize) -> (Option<f64>, f64),
    /// Adds the gradient times `seed` into `g` (shadows of slices, adjoints of scalars);
    /// returns the primal unless ActiveOnly.
    pub rev: fn(&[f64], &mut [f64], f64, usize, usize) -> Option<f64>,
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
    include!(concat!(env!("OUT_DIR"), "/batch.rs"));
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

#[derive(Default)]
struct Stats {
    points: usize,
    fd_checked: usize,
    fd_skipped: usize,
    /// The largest |f| met, and how many points had |f| > 1e8 (the generator keeps
    /// values moderate so that the tolerances mean something).
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
    // The parameter of each component, and the masks per component.
    let param = |i: usize| {
        if i < case.slices * n {
            i / n
        } else {
            case.slices + i - case.slices * n
        }
    };
    let fmask: Vec<bool> = (0..len).map(|i| case.fwd_mask[param(i)]).collect();
    let rmask: Vec<bool> = (0..len).map(|i| case.rev_mask[param(i)]).collect();
    let along = |dir: &[f64]| -> Dual64 {
        let zd: Vec<Dual64> = z
            .iter()
            .zip(dir)
            .map(|(a, b)| Dual64::new(*a, *b))
            .collect();
        (case.oracle)(&zd, n, m)
    };

    // Primal against the oracle's real part.
    let p = (case.primal)(&z, n, m);
    if !p.is_finite() {
        return Err(format!(
            "primal is not finite ({p}) at {at} (a generator problem)"
        ));
    }
    stats.largest = stats.largest.max(p.abs());
    if p.abs() > 1e8 {
        stats.large += 1;
    }
    let o = along(&vec![0.0; len]);
    close("primal vs oracle", p, o.re, TOL).map_err(|e| format!("{e} at {at}"))?;

    // Forward: the tangent along v restricted to the Dual parameters.
    let vf: Vec<f64> = v
        .iter()
        .zip(&fmask)
        .map(|(a, on)| if *on { *a } else { 0.0 })
        .collect();
    let (pf, t) = (case.fwd)(&z, &vf, n, m);
    if let Some(pf) = pf {
        close("forward primal", pf, p, TOL).map_err(|e| format!("{e} at {at}"))?;
    }
    let want_t = along(&vf).eps;
    close("forward tangent vs oracle", t, want_t, TOL)
        .map_err(|e| format!("{e} at {at}, v = {vf:?}"))?;

    // Reverse: shadows start at SHADOW_INIT (gradients must be added), scalar adjoints at 0.
    let mut g: Vec<f64> = (0..len)
        .map(|i| {
            if i < case.slices * n {
                SHADOW_INIT
            } else {
                0.0
            }
        })
        .collect();
    let pr = (case.rev)(&z, &mut g, seed, n, m);
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
            let want = seed * along(&e).eps;
            close(&what, g[i], want, TOL).map_err(|e| format!("{e} at {at}"))?;
        } else if g[i] != 0.0 {
            return Err(format!("{what}: Const input got {} at {at}", g[i]));
        }
    }

    // Forward and reverse agree: ⟨∇f, v⟩ = J·v over the inputs active in both.
    let vb: Vec<f64> = (0..len)
        .map(|i| if fmask[i] && rmask[i] { v[i] } else { 0.0 })
        .collect();
    if vb.iter().any(|x| *x != 0.0) {
        let (_, tb) = (case.fwd)(&z, &vb, n, m);
        let dot: f64 = g.iter().zip(&vb).map(|(a, b)| a * b).sum();
        close("⟨∇f, v⟩ vs J·v", dot, seed * tb, TOL)
            .map_err(|e| format!("{e} at {at}, v = {vb:?}"))?;
    }

    // Finite differences of the primal along v against the oracle.
    let fd = |h: f64| {
        let zp: Vec<f64> = z.iter().zip(&v).map(|(a, b)| a + h * b).collect();
        let zm: Vec<f64> = z.iter().zip(&v).map(|(a, b)| a - h * b).collect();
        ((case.primal)(&zp, n, m) - (case.primal)(&zm, n, m)) / (2.0 * h)
    };
    let (d1, d2) = (fd(FD_H), fd(FD_H / 2.0));
    let scale = 1.0_f64.max(d1.abs()).max(d2.abs());
    if (d1 - d2).abs() > FD_SMOOTH * scale || !d1.is_finite() || !d2.is_finite() {
        stats.fd_skipped += 1;
    } else {
        let richardson = (4.0 * d2 - d1) / 3.0;
        let want = along(&v).eps;
        close("finite differences vs oracle", richardson, want, FD_TOL)
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
        "differential: {} points checked, {} finite-difference checks, {} skipped near kinks, \
         largest |f| {:.3e} ({} points above 1e8), {} failures",
        stats.points,
        stats.fd_checked,
        stats.fd_skipped,
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
    // Near-kink skips are rare at random points (a few percent: `floor`, `round` and the
    // like jump every unit); many of them mean the check lost its teeth.
    assert!(
        stats.fd_skipped * 10 <= stats.points.max(1),
        "{} of {} finite-difference checks skipped",
        stats.fd_skipped,
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
    let good = Case {
        name: "sq",
        index: 0,
        slices: 1,
        scalars: 0,
        fwd_mask: &[true],
        rev_mask: &[true],
        primal: sq_primal,
        oracle: sq_oracle,
        fwd: sq_fwd,
        rev: sq_rev,
    };
    let mut stats = Stats::default();
    let mut rng = Rng::new(1);
    check_point(&good, &mut rng, &mut stats).unwrap();
    for (what, case) in [
        (
            "forward",
            Case {
                fwd: bad_fwd,
                ..good
            },
        ),
        (
            "reverse accumulation",
            Case {
                rev: assigning_rev,
                ..good
            },
        ),
        (
            "oracle",
            Case {
                oracle: wrong_oracle,
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
    ] {
        let mut rng = Rng::new(1);
        assert!(
            check_point(&case, &mut rng, &mut stats).is_err(),
            "a wrong {what} passed"
        );
    }
}
