//! Three custom rules, each used by differentiated code in both modes.
//!
//! 1. A numerically stable `logsumexp`, whose gradient is the softmax.
//! 2. An opaque function: `erf` from the C math library, called through FFI.
//! 3. An all-constant `synchronize`: no float argument, no result, a no-op here. Its rule
//!    still runs, once per call, in the augmented sweep and in the pullback.
//!
//! Run: `cargo run --release --example custom_rules`

use autodiff_core::prelude::*;
use autodiff_core::testing::{central_directional, central_gradient};
use std::sync::atomic::{AtomicUsize, Ordering};

// ------------------------------------------------------------------ 1. logsumexp

#[custom_rule(forward = logsumexp_fwd, reverse = logsumexp_rev)]
fn logsumexp(x: &[f64]) -> f64 {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

fn softmax(x: &[f64], lse: f64) -> impl Iterator<Item = f64> + '_ {
    x.iter().map(move |v| (v - lse).exp())
}

fn logsumexp_fwd(x: &[f64], dx: &[f64]) -> (f64, f64) {
    let y = logsumexp(x);
    (y, softmax(x, y).zip(dx).map(|(p, d)| p * d).sum())
}

/// The pullback borrows `x`: the borrow checker keeps the caller from overwriting it
/// before the reverse sweep.
fn logsumexp_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    let y = logsumexp(x);
    (y, move |dx: &mut [f64], dy: f64| {
        for (d, p) in dx.iter_mut().zip(softmax(x, y)) {
            *d += dy * p;
        }
    })
}

/// A log-likelihood whose inputs are far beyond `exp`'s range: the naive formula
/// overflows, the rule does not.
#[autodiff_reverse(d_log_likelihood, Duplicated, Active)]
#[autodiff_forward(log_likelihood_jvp, Dual, Dual)]
fn log_likelihood(z: &[f64]) -> f64 {
    z[0] - logsumexp(z)
}

// ------------------------------------------------------------------ 2. an opaque FFI function

unsafe extern "C" {
    #[link_name = "erf"]
    fn c_erf(x: f64) -> f64;
}

/// The error function from the C library: opaque to differentiation, so it has a rule.
#[custom_rule(forward = erf_fwd, reverse = erf_rev)]
fn erf(x: f64) -> f64 {
    // SAFETY: `erf` is a pure function of its argument.
    unsafe { c_erf(x) }
}

fn erf_slope(x: f64) -> f64 {
    2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp()
}

fn erf_fwd(x: f64, dx: f64) -> (f64, f64) {
    (erf(x), erf_slope(x) * dx)
}

fn erf_rev(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (erf(x), move |dy: f64| dy * erf_slope(x))
}

/// The normal CDF at `(x - mu) / sigma`.
#[autodiff_reverse(d_normal_cdf, Active, Active, Active, Active)]
#[autodiff_forward(normal_cdf_jvp, Dual, Dual, Dual, Dual)]
fn normal_cdf(x: f64, mu: f64, sigma: f64) -> f64 {
    0.5 * (1.0 + erf((x - mu) / (sigma * std::f64::consts::SQRT_2)))
}

// ------------------------------------------------------------------ 3. an all-constant rule

/// A device handle; on this CPU backend synchronising does nothing.
struct Stream;

static SYNCS_AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static SYNCS_PULLED_BACK: AtomicUsize = AtomicUsize::new(0);

#[custom_rule(forward = synchronize_fwd, reverse = synchronize_rev)]
fn synchronize(_stream: &Stream) {}

fn synchronize_fwd(_stream: &Stream) -> ((), ()) {
    ((), ())
}

#[allow(clippy::unused_unit)]
fn synchronize_rev(_stream: &Stream) -> ((), impl FnOnce()) {
    SYNCS_AUGMENTED.fetch_add(1, Ordering::SeqCst);
    ((), || {
        // A real backend waits for the device here before the gradients are read.
        SYNCS_PULLED_BACK.fetch_add(1, Ordering::SeqCst);
    })
}

#[autodiff_reverse(d_scaled_sum, Duplicated, Const, Active)]
fn scaled_sum(x: &[f64], stream: &Stream) -> f64 {
    synchronize(stream);
    let s: f64 = x.iter().map(|v| 3.0 * v).sum();
    synchronize(stream);
    s
}

fn main() {
    // 1. logsumexp far beyond exp's range.
    let z = [1000.0, 999.0, 1001.5, -500.0];
    let mut g = [0.0; 4];
    let ll = d_log_likelihood(&z, &mut g, 1.0);
    let fd = central_gradient(log_likelihood, &z, 1e-9);
    println!("log-likelihood at {z:?} = {ll:.12}");
    println!("  gradient (rule)   {g:?}");
    println!("  finite difference {fd:?}");
    let v = [1.0, -1.0, 0.5, 2.0];
    let (_, t) = log_likelihood_jvp(&z, &v);
    let want: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    println!("  forward rule along {v:?}: {t:.12} (⟨∇f, v⟩ = {want:.12})");
    assert!(g.iter().zip(&fd).all(|(a, b)| (a - b).abs() < 1e-5));
    assert!((t - want).abs() < 1e-12);

    // 2. erf through FFI.
    let (x, mu, sigma) = (0.3, -0.2, 1.7);
    let (p, dx, dmu, dsigma) = d_normal_cdf(x, mu, sigma, 1.0);
    let density =
        (-0.5 * ((x - mu) / sigma).powi(2)).exp() / (sigma * (2.0 * std::f64::consts::PI).sqrt());
    println!("normal CDF({x}; mu = {mu}, sigma = {sigma}) = {p:.12}");
    println!("  d/dx {dx:.12} (density {density:.12}), d/dmu {dmu:.12}, d/dsigma {dsigma:.12}");
    let f = |q: &[f64]| normal_cdf(q[0], q[1], q[2]);
    let fd = central_gradient(f, &[x, mu, sigma], 1e-7);
    let (_, t) = normal_cdf_jvp(x, 0.0, mu, 0.0, sigma, 1.0);
    assert!((dx - density).abs() < 1e-12 && (dmu + density).abs() < 1e-12);
    assert!((dsigma - fd[2]).abs() < 1e-7 && (t - dsigma).abs() < 1e-12);
    let dir = central_directional(f, &[x, mu, sigma], &[1.0, 1.0, 0.0], 1e-6);
    assert!((dx + dmu - dir).abs() < 1e-7);

    // 3. The all-constant rule fires once per call, in both sweeps.
    let xs = [1.0, 2.0, 3.0];
    let mut gx = [0.0; 3];
    let s = d_scaled_sum(&xs, &mut gx, &Stream, 1.0);
    let (aug, pulled) = (
        SYNCS_AUGMENTED.load(Ordering::SeqCst),
        SYNCS_PULLED_BACK.load(Ordering::SeqCst),
    );
    println!(
        "scaled sum {s}, gradient {gx:?}; synchronize: {aug} augmented calls, {pulled} pullbacks"
    );
    assert_eq!((aug, pulled), (2, 2));
    assert_eq!(gx, [3.0; 3]);
}
