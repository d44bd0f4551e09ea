//! Statements kept for their effects: a call wrapped in `no_grad(..)`, `let _ = ..` of
//! such a call, and a method called on a static. Their values carry no derivative, but
//! every companion still runs them, as the function does, and a value drawn with effects
//! (`no_grad(rng.next())` in a loop) is drawn once and kept for the reverse sweep.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::testing::close;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One counter per statement form below.
static COUNTS: [AtomicUsize; 6] = [const { AtomicUsize::new(0) }; 6];

fn bump(i: usize) -> usize {
    COUNTS[i].fetch_add(1, Ordering::SeqCst)
}

fn take_counts() -> Vec<usize> {
    COUNTS.iter().map(|c| c.swap(0, Ordering::SeqCst)).collect()
}

#[autodiff_reverse(d_logged, Duplicated, Active)]
#[autodiff_forward(logged_jvp, Dual, Dual)]
fn logged(x: &[f64]) -> f64 {
    no_grad(bump(0));
    let _ = no_grad(bump(1));
    let _k = no_grad(bump(2));
    COUNTS[3].fetch_add(1, Ordering::SeqCst);
    let _ = COUNTS[4].fetch_add(1, Ordering::SeqCst);
    let s = x[0] * x[1];
    if s > 0.0 {
        no_grad(bump(5));
    }
    s * x[0]
}

#[test]
fn effects_run_once_per_call_in_every_mode() {
    let x = [2.0, 3.0];
    take_counts();
    let mut g = [0.0; 2];
    let y = d_logged(&x, &mut g, 1.0);
    assert_eq!(take_counts(), vec![1; 6], "reverse");
    // y = x0² x1: gradient (2 x0 x1, x0²).
    close("value", y, 12.0, 0.0).unwrap();
    close("∂0", g[0], 12.0, 1e-15).unwrap();
    close("∂1", g[1], 4.0, 1e-15).unwrap();

    let (_, t) = logged_jvp(&x, &[1.0, -1.0]);
    assert_eq!(take_counts(), vec![1; 6], "forward");
    close("tangent", t, 12.0 - 4.0, 1e-15).unwrap();

    // H = [[2 x1, 2 x0], [2 x0, 0]].
    let hv = autodiff_core::hvp::<d_logged>(&x, &[1.0, 0.0]);
    assert_eq!(take_counts(), vec![1; 6], "forward over reverse");
    close("H·v 0", hv[0], 6.0, 1e-15).unwrap();
    close("H·v 1", hv[1], 4.0, 1e-15).unwrap();

    // The branch not taken runs nothing.
    let mut g = [0.0; 2];
    d_logged(&[2.0, -3.0], &mut g, 1.0);
    assert_eq!(take_counts(), vec![1, 1, 1, 1, 1, 0], "branch not taken");
}

// ---------------------------------------------------------------- random draws

/// A generator of reproducible draws in `(0, 1)` (`Clone`: a reverse sweep saves a struct
/// behind `&mut` around calls; `#[differentiable]`: a `Const` one lent to a
/// `#[differentiable]` helper gets a scratch shadow, a zero of its type).
#[differentiable]
#[derive(Clone)]
pub struct Draws {
    pub state: u64,
}

impl Draws {
    fn next(&mut self) -> f64 {
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// A draw from a local integer state.
fn uniform(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(2862933555777941757)
        .wrapping_add(3037000493);
    ((*state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A Monte Carlo estimate over paths of a geometric random walk: each draw, taken with
/// `no_grad(..)` from a generator passed in and from a local state, must be the same
/// value in the forward sweep and in the reverse sweep (drawn once, kept), and the
/// generator must advance once per draw.
#[autodiff_reverse(d_walk, Active, Const, Active)]
#[autodiff_forward(walk_jvp, Dual, Const, Dual)]
fn walk(sigma: f64, draws: &mut Draws) -> f64 {
    let mut state: u64 = 11;
    let mut total = 0.0;
    for _ in 0..4 {
        let mut x = 1.0;
        for _ in 0..3 {
            let z = no_grad(draws.next());
            let u = no_grad(uniform(&mut state));
            x *= (sigma * (z - 0.5)).exp() + 0.1 * sigma * u;
            total += sigma * sigma * z * u;
        }
        total += x;
    }
    total / 4.0
}

/// A sum over draws, each weighed by `x²`: a loop whose reverse runs an iteration at a
/// time, right after its forward sweep.
#[autodiff_reverse(d_weighed, Active, Const, Active)]
#[autodiff_forward(weighed_jvp, Dual, Const, Dual)]
fn weighed(x: f64, draws: &mut Draws) -> f64 {
    let mut state: u64 = 3;
    let mut s = 0.0;
    for _ in 0..5 {
        let z = no_grad(draws.next());
        let u = no_grad(uniform(&mut state));
        s += x * x * z + x * u;
        // A draw written where it is used.
        s += x.sin() * no_grad(draws.next());
    }
    s
}

/// `walk`, written out with the same draws.
fn walk_oracle(sigma: f64, seed: u64) -> (f64, f64) {
    let mut draws = Draws { state: seed };
    let mut state: u64 = 11;
    let (mut total, mut d_total) = (0.0, 0.0);
    for _ in 0..4 {
        let (mut x, mut dx) = (1.0, 0.0);
        for _ in 0..3 {
            let z0 = draws.next();
            let u = uniform(&mut state);
            let z = z0 - 0.5;
            let f = (sigma * z).exp() + 0.1 * sigma * u;
            let df = z * (sigma * z).exp() + 0.1 * u;
            (x, dx) = (x * f, dx * f + x * df);
            total += sigma * sigma * z0 * u;
            d_total += 2.0 * sigma * z0 * u;
        }
        total += x;
        d_total += dx;
    }
    (total / 4.0, d_total / 4.0)
}

/// A draw inside a `#[differentiable]` helper, the generator lent to it.
#[differentiable]
fn jittered(x: f64, draws: &mut Draws) -> f64 {
    x * (1.0 + no_grad(draws.next()))
}

/// The generator `Const`, passed on to the helper: the helper may store values with
/// derivatives in what it is lent, so the companions give it a scratch shadow.
#[autodiff_reverse(d_jitter_sum, Active, Const, Active)]
#[autodiff_forward(jitter_sum_jvp, Dual, Const, Dual)]
fn jitter_sum(x: f64, draws: &mut Draws) -> f64 {
    let mut s = 0.0;
    for _ in 0..3 {
        s += jittered(x * x, draws);
    }
    s
}

#[test]
fn a_constant_generator_is_lent_to_a_helper() {
    for (x, seed) in [(0.7, 5), (-1.3, 42)] {
        let mut zs = Draws { state: seed };
        let (mut want, mut d_want) = (0.0, 0.0);
        for _ in 0..3 {
            let z = zs.next();
            want += x * x * (1.0 + z);
            d_want += 2.0 * x * (1.0 + z);
        }
        let mut draws = Draws { state: seed };
        let (y, g) = d_jitter_sum(x, &mut draws, 1.0);
        close("value", y, want, 1e-14).unwrap();
        close("gradient", g, d_want, 1e-14).unwrap();
        assert_eq!(
            draws.state, zs.state,
            "the generator advances once per draw"
        );
        let mut draws = Draws { state: seed };
        let (y, t) = jitter_sum_jvp(x, 1.0, &mut draws);
        close("forward value", y, want, 1e-14).unwrap();
        close("tangent", t, d_want, 1e-14).unwrap();
        assert_eq!(draws.state, zs.state, "forward: once per draw");
    }
}

/// A `Const` `&mut f64` that the function stores active values in and reads back, itself
/// and through a helper: its scratch shadow carries their derivatives to the result, and
/// it ends holding what the function leaves in it.
#[autodiff_reverse(d_stored, Active, Const, Active)]
#[autodiff_forward(stored_jvp, Dual, Const, Dual)]
fn stored(x: f64, t: &mut f64) -> f64 {
    *t = x * x;
    for _ in 0..2 {
        add_sine(x, t);
    }
    *t * x
}

#[differentiable]
fn add_sine(x: f64, t: &mut f64) {
    *t += x.sin();
}

#[test]
fn a_constant_float_behind_mut_carries_derivatives_it_stores() {
    for x in [0.3f64, -1.7, 2.2] {
        let t_end = x * x + 2.0 * x.sin();
        let (want, d_want) = (t_end * x, t_end + x * (2.0 * x + 2.0 * x.cos()));
        let mut t = 5.0;
        let (y, g) = d_stored(x, &mut t, 1.0);
        close("value", y, want, 1e-14).unwrap();
        close("gradient", g, d_want, 1e-14).unwrap();
        close("what it leaves", t, t_end, 1e-15).unwrap();
        let mut t = -1.0;
        let (y, d) = stored_jvp(x, 1.0, &mut t);
        close("forward value", y, want, 1e-14).unwrap();
        close("tangent", d, d_want, 1e-14).unwrap();
        close("forward: what it leaves", t, t_end, 1e-15).unwrap();
    }
}

#[test]
fn random_draws_are_taken_once_and_kept() {
    let x = 1.5;
    let (mut zs, mut us) = (Draws { state: 5 }, 3u64);
    let (mut want, mut d_want) = (0.0, 0.0);
    for _ in 0..5 {
        let (z, u) = (zs.next(), uniform(&mut us));
        let w = zs.next();
        want += x * x * z + x * u + x.sin() * w;
        d_want += 2.0 * x * z + u + x.cos() * w;
    }
    let mut draws = Draws { state: 5 };
    let (y, g) = d_weighed(x, &mut draws, 1.0);
    close("weighed value", y, want, 1e-14).unwrap();
    close("weighed gradient", g, d_want, 1e-14).unwrap();
    assert_eq!(
        draws.state, zs.state,
        "the generator advances once per draw"
    );
    let (_, t) = weighed_jvp(x, 1.0, &mut Draws { state: 5 });
    close("weighed tangent", t, d_want, 1e-14).unwrap();

    for (sigma, seed) in [(0.3, 7), (-0.8, 12345), (1.4, 99)] {
        let (want, d_want) = walk_oracle(sigma, seed);
        let mut draws = Draws { state: seed };
        let (y, g) = d_walk(sigma, &mut draws, 1.0);
        close("value", y, want, 1e-14).unwrap();
        close("gradient", g, d_want, 1e-13).unwrap();
        let mut once = Draws { state: seed };
        for _ in 0..12 {
            once.next();
        }
        assert_eq!(
            draws.state, once.state,
            "the generator advances once per draw"
        );
        let (y, t) = walk_jvp(sigma, 1.0, &mut Draws { state: seed });
        close("forward value", y, want, 1e-14).unwrap();
        close("tangent", t, d_want, 1e-13).unwrap();
    }
}

// ---------------------------------------------------------------- through helpers

static HELPER_EFFECTS: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];

/// A helper with effects: a reverse caller augments it (running it) and later runs its
/// pullback, which computes it again without running the effects a second time.
#[differentiable]
fn counted(a: f64) -> f64 {
    HELPER_EFFECTS[0].fetch_add(1, Ordering::SeqCst);
    no_grad(HELPER_EFFECTS[1].fetch_add(1, Ordering::SeqCst));
    a * a.sin()
}

#[autodiff_reverse(d_two_counted, Active, Active)]
#[autodiff_forward(two_counted_jvp, Dual, Dual)]
fn two_counted(x: f64) -> f64 {
    let mut s = 0.0;
    for k in 1..=3 {
        s += counted(k as f64 * x);
    }
    s
}

fn helper_counts() -> [usize; 2] {
    [0, 1].map(|i| HELPER_EFFECTS[i].swap(0, Ordering::SeqCst))
}

#[test]
fn a_helpers_effects_run_once_per_call() {
    let x = 0.7_f64;
    // d/dx Σ_k (k x) sin(k x) = Σ_k k (sin(k x) + k x cos(k x)).
    let want: f64 = (1..=3)
        .map(|k| {
            let (k, kx) = (k as f64, k as f64 * x);
            k * (kx.sin() + kx * kx.cos())
        })
        .sum();
    helper_counts();
    let (_, g) = d_two_counted(x, 1.0);
    assert_eq!(helper_counts(), [3, 3], "reverse");
    close("gradient", g, want, 1e-14).unwrap();
    let (_, t) = two_counted_jvp(x, 1.0);
    assert_eq!(helper_counts(), [3, 3], "forward");
    close("tangent", t, want, 1e-14).unwrap();
}

// ---------------------------------------------------------------- writes through `&mut` integers

/// Counts what it skips through `&mut` parameters that carry no derivative.
#[differentiable]
fn clipped_sum(x: &[f64], clipped: &mut bool, skipped: &mut u32) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if x[i] > 1.0 {
            *clipped = true;
            *skipped += 1;
            continue;
        }
        s += x[i] * x[i];
    }
    s
}

#[autodiff_reverse(d_clipped_twice, Duplicated, Const, Const, Active)]
#[autodiff_forward(clipped_twice_jvp, Dual, Const, Const, Dual)]
fn clipped_twice(x: &[f64], clipped: &mut bool, skipped: &mut u32) -> f64 {
    let a = clipped_sum(x, clipped, skipped);
    *skipped *= 10;
    a * clipped_sum(&x[1..], clipped, skipped)
}

#[test]
fn writes_through_integer_and_bool_references() {
    let x = [0.5, 2.0, 0.25];
    // a = x0² + x2², b = x2²: f = a b, ∂f/∂x0 = 2 x0 b, ∂f/∂x2 = 2 x2 (b + a).
    let (a, b) = (0.25 + 0.0625, 0.0625);
    let want = [2.0 * x[0] * b, 0.0, 2.0 * x[2] * (a + b)];
    let (mut clipped, mut skipped) = (false, 0);
    let mut g = [0.0; 3];
    let y = d_clipped_twice(&x, &mut g, &mut clipped, &mut skipped, 1.0);
    // One skip, times ten, then one more: as the function counts.
    assert_eq!((clipped, skipped), (true, 11), "reverse");
    close("value", y, a * b, 1e-15).unwrap();
    for i in 0..3 {
        close(&format!("∂{i}"), g[i], want[i], 1e-15).unwrap();
    }
    let (mut clipped, mut skipped) = (false, 0);
    let v = [1.0, 1.0, -1.0];
    let (_, t) = clipped_twice_jvp(&x, &v, &mut clipped, &mut skipped);
    assert_eq!((clipped, skipped), (true, 11), "forward");
    close("tangent", t, want[0] - want[2], 1e-15).unwrap();
}
