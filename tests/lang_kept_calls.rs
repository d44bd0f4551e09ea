//! Callees that keep their forward sweep, calling other callees: three levels (LSTM's
//! shape: a step calls a cell calls a scalar helper); callees that call each other
//! recursively; a custom rule (whose pullback may borrow) and a rule writing a `&mut`
//! output reached through such a callee, each firing once per call; a generic callee
//! with calls. Gradients against num-dual, H·v against the oracle's second derivatives,
//! and counts of how often each rule runs per gradient.

// Index loops are the construct under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;
use std::cell::Cell;

thread_local! {
    static RULE_AUGS: Cell<usize> = const { Cell::new(0) };
    static RULE_PULLS: Cell<usize> = const { Cell::new(0) };
}

fn bump(c: &'static std::thread::LocalKey<Cell<usize>>) -> bool {
    c.with(|r| r.set(r.get() + 1));
    true
}

fn runs(c: &'static std::thread::LocalKey<Cell<usize>>) -> usize {
    c.with(Cell::get)
}

fn reset() {
    for c in [&RULE_AUGS, &RULE_PULLS] {
        c.with(|r| r.set(0));
    }
}

/// A scalar helper with `exp`, calling nothing.
#[differentiable]
fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Updates `h` and `c` in place, through [`sig`] and `tanh`.
#[differentiable]
fn cell(w: &[f64], h: &mut [f64], c: &mut [f64], input: &[f64]) {
    let b = h.len();
    for i in 0..b {
        let f = sig(input[i] * w[i] + w[b + i]);
        let g = (h[i] * w[2 * b + i]).tanh();
        c[i] = c[i] * f + g;
        h[i] = c[i].tanh() * sig(h[i]);
    }
}

/// One step through two layers of [`cell`], the second fed by the first's `h`; no libm
/// call of its own.
#[differentiable]
fn step(w: &[f64], h: &mut [f64], c: &mut [f64], input: &[f64]) {
    let b = input.len();
    let mut x = vec![0.0; b];
    for i in 0..b {
        x[i] = input[i] * 0.5;
    }
    for l in 0..2 {
        cell(
            &w[..3 * b],
            &mut h[l * b..(l + 1) * b],
            &mut c[l * b..(l + 1) * b],
            &x,
        );
        x.copy_from_slice(&h[l * b..(l + 1) * b]);
    }
}

#[autodiff_forward(steps_fwd, Dual, Dual)]
#[autodiff_reverse(steps_rev, Duplicated, Active)]
fn steps(w: &[f64]) -> f64 {
    let b = w.len() / 3;
    let mut h = vec![0.1; 2 * b];
    let mut c = vec![-0.2; 2 * b];
    let mut loss = 0.0;
    for t in 0..3 {
        let input: Vec<f64> = (0..b).map(|i| (t * b + i) as f64 * 0.1 - 0.3).collect();
        step(w, &mut h, &mut c, &input);
        for i in 0..2 * b {
            loss += h[i] * c[i];
        }
    }
    loss
}

fn steps_o<D: Num>(w: &[D]) -> D {
    let b = w.len() / 3;
    let sig = |x: D| (c::<D>(1.0) + (-x).exp()).recip();
    let mut h = vec![c::<D>(0.1); 2 * b];
    let mut cs = vec![c::<D>(-0.2); 2 * b];
    let mut loss = c::<D>(0.0);
    for t in 0..3 {
        let mut x: Vec<D> = (0..b)
            .map(|i| c::<D>(((t * b + i) as f64 * 0.1 - 0.3) * 0.5))
            .collect();
        for l in 0..2 {
            for i in 0..b {
                let (hi, ci) = (l * b + i, l * b + i);
                let f = sig(x[i] * w[i] + w[b + i]);
                let g = (h[hi] * w[2 * b + i]).tanh();
                cs[ci] = cs[ci] * f + g;
                h[hi] = cs[ci].tanh() * sig(h[hi]);
            }
            x.copy_from_slice(&h[l * b..(l + 1) * b]);
        }
        for i in 0..2 * b {
            loss += h[i] * cs[i];
        }
    }
    loss
}

/// `even` and `odd` call each other, and each keeps its forward sweep (`exp`): their
/// states must never contain each other.
#[differentiable]
fn even(x: f64, n: u32) -> f64 {
    if n == 0 {
        x.exp()
    } else {
        odd(x.sin() * 0.9, n - 1) + x.exp() * 0.1
    }
}

#[differentiable]
fn odd(x: f64, n: u32) -> f64 {
    if n == 0 {
        x.cos()
    } else {
        even(x.tanh() + 0.2, n - 1) * x.exp()
    }
}

fn even_o<D: Num>(x: D, n: u32) -> D {
    if n == 0 {
        x.exp()
    } else {
        odd_o(x.sin() * 0.9, n - 1) + x.exp() * 0.1
    }
}

fn odd_o<D: Num>(x: D, n: u32) -> D {
    if n == 0 {
        x.cos()
    } else {
        even_o(x.tanh() + 0.2, n - 1) * x.exp()
    }
}

#[autodiff_forward(chain_fwd, Dual, Dual)]
#[autodiff_reverse(chain_rev, Duplicated, Active)]
fn chain(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += even(x[i], (i % 5) as u32);
    }
    s
}

fn chain_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        s += even_o(x[i], (i % 5) as u32);
    }
    s
}

/// `Σ x_i²` with a deliberately wrong reverse rule (`dx_i += 3·dret·x_i`), which counts
/// its augmented calls and its pullbacks; its pullback borrows `x`.
#[custom_rule(reverse = sq_rev)]
fn sq(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

fn sq_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    assert!(bump(&RULE_AUGS));
    (sq(x), move |dx: &mut [f64], g: f64| {
        assert!(bump(&RULE_PULLS));
        for i in 0..x.len() {
            dx[i] += 3.0 * g * x[i];
        }
    })
}

/// `out_i = x_i · k` with a reverse rule; it writes a `&mut` output.
#[custom_rule(reverse = scale_into_rev)]
fn scale_into(x: &[f64], k: f64, out: &mut [f64]) {
    for i in 0..x.len() {
        out[i] = x[i] * k;
    }
}

#[allow(clippy::type_complexity)]
fn scale_into_rev<'a>(
    x: &'a [f64],
    k: f64,
    out: &mut [f64],
) -> ((), impl FnOnce(&mut [f64], &mut [f64]) -> f64 + use<'a>) {
    scale_into(x, k, out);
    ((), move |dx: &mut [f64], dout: &mut [f64]| {
        let mut dk = 0.0;
        for i in 0..x.len() {
            dx[i] += k * dout[i];
            dk += x[i] * dout[i];
            dout[i] = 0.0;
        }
        dk
    })
}

/// Keeps its forward sweep (`exp`), calls both rules in a loop, and overwrites the
/// rule's output buffer between the calls.
#[differentiable]
fn ruled(x: &[f64]) -> f64 {
    let mut y = vec![0.0; x.len()];
    let mut s = 0.0;
    for r in 0..3 {
        scale_into(x, r as f64 - 0.5, &mut y);
        s += sq(&y).exp() * 0.1 + y[0];
    }
    s
}

#[autodiff_reverse(outer_ruled_rev, Duplicated, Active)]
fn outer_ruled(x: &[f64]) -> f64 {
    ruled(x) * 2.0 + ruled(&x[1..])
}

/// [`ruled`] as its rules define it: `sq`'s gradient is `3 x` instead of `2 x`.
fn ruled_grad(x: &[f64]) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    for r in 0..3 {
        let k = r as f64 - 0.5;
        let y: Vec<f64> = x.iter().map(|v| v * k).collect();
        let e = y.iter().map(|v| v * v).sum::<f64>().exp() * 0.1;
        for i in 0..x.len() {
            g[i] += e * 3.0 * y[i] * k;
        }
        g[0] += k;
    }
    g
}

/// A generic callee with calls of its own, at `f64`.
#[differentiable]
fn soft<T: Real>(x: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..x.len() {
        s += x[i].exp() * lift(x[i]);
    }
    s.ln()
}

#[differentiable]
fn lift<T: Real>(v: T) -> T {
    v.sin() + v * v
}

#[autodiff_reverse(generic_chain_rev, Duplicated, Active)]
fn generic_chain(x: &[f64]) -> f64 {
    soft(x) * soft(&x[1..])
}

fn soft_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        s += x[i].exp() * (x[i].sin() + x[i] * x[i]);
    }
    s.ln()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn three_levels_of_kept_callees((w, v, s0) in slice_case(-1.0, 1.0, 3..10, 0), seed in seed()) {
        let n = w.len() / 3 * 3;
        let (w, v, s0) = (&w[..n], &v[..n], &s0[..n]);
        check_slice("steps", (w, v, s0, seed), steps, steps_fwd, steps_rev, steps_o);
    }

    #[test]
    fn hvp_through_three_levels((w, v, _s0) in slice_case(-1.0, 1.0, 3..7, 0)) {
        let n = w.len() / 3 * 3;
        check_hvp_of::<steps_rev>(&w[..n], &v[..n], steps_o);
    }

    #[test]
    fn callees_calling_each_other((x, v, s0) in slice_case(-1.0, 1.0, 1..8, 0), seed in seed()) {
        check_slice("chain", (&x, &v, &s0, seed), chain, chain_fwd, chain_rev, chain_o);
        check_hvp_of::<chain_rev>(&x, &v, chain_o);
    }

    #[test]
    fn generic_callee_with_calls((x, _v, _s0) in slice_case(0.1, 1.0, 2..6, 0)) {
        let mut g = vec![0.0; x.len()];
        let f = generic_chain_rev(&x, &mut g, 1.0);
        let (want_f, want) = oracle_grad(|d| soft_o(d) * soft_o(&d[1..]), &x);
        check("generic_chain", f, want_f);
        check_all("generic_chain grad", &g, &want);
    }
}

/// Rules reached through a callee that keeps its forward sweep fire once per call: one
/// augmented call and one pullback each, and the gradient is the one they define.
#[test]
fn rules_through_a_kept_callee_fire_once_per_call() {
    let x = [0.3, -0.2, 0.45];
    reset();
    let mut g = [0.0; 3];
    let f = outer_ruled_rev(&x, &mut g, 1.0);
    check("outer_ruled", f, outer_ruled(&x));
    // Two calls of `ruled`, three calls of `sq` each.
    assert_eq!((runs(&RULE_AUGS), runs(&RULE_PULLS)), (6, 6));
    let (a, b) = (ruled_grad(&x), ruled_grad(&x[1..]));
    let want: Vec<f64> = (0..3)
        .map(|i| 2.0 * a[i] + if i > 0 { b[i - 1] } else { 0.0 })
        .collect();
    check_all("outer_ruled grad", &g, &want);
}
