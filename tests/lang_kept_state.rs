//! Callees whose pullback keeps what their forward sweep recorded instead of computing it
//! again: a `logsumexp` over a buffer the caller overwrites between calls, a cell that
//! updates `&mut` state and calls a scalar helper, a callee that calls a custom rule
//! whose pullback borrows its arguments, generic and recursive callees, a callee whose
//! arguments carry no adjoint, callees that view their arguments, and a callee inside a
//! closure that a higher-order function receives, and a callee that runs a loop nest
//! without libm calls (GMM's `Q x`). Gradients against num-dual (central
//! differences for the views), H·v of a caller through forward over reverse against
//! finite differences of the gradient, and a count of how often a callee's body runs
//! per gradient.

// Index loops are the construct under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;
mod nested_common;

use autodiff_core::prelude::*;
use lang_common::*;
use nested_common::{assert_all_close, fd_hvp};
use proptest::prelude::*;
use std::cell::Cell;

/// Max-shifted `log Σ exp`: a leaf that calls into libm.
#[differentiable]
fn lse(x: &[f64]) -> f64 {
    let mut mx = x[0];
    for i in 1..x.len() {
        mx = mx.max(x[i]);
    }
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] - mx).exp();
    }
    s.ln() + mx
}

fn lse_o<D: Num>(x: &[D]) -> D {
    let mut mx = x[0];
    for i in 1..x.len() {
        if x[i].re() > mx.re() {
            mx = x[i];
        }
    }
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        s += (x[i] - mx).exp();
    }
    s.ln() + mx
}

/// GMM's shape: one buffer overwritten per row, `lse` of it after each overwrite.
#[autodiff_forward(rows_fwd, Dual, Dual)]
#[autodiff_reverse(rows_rev, Duplicated, Active)]
fn rows(x: &[f64]) -> f64 {
    let k = 3;
    let mut row = vec![0.0; k];
    let mut total = 0.0;
    for r in 0..x.len() {
        for j in 0..k {
            row[j] = x[r] * (j as f64 + 1.0) - x[(r + j) % x.len()];
        }
        total += lse(&row) * (r as f64 + 0.5);
    }
    total
}

fn rows_o<D: Num>(x: &[D]) -> D {
    let k = 3;
    let mut total = c::<D>(0.0);
    for r in 0..x.len() {
        let row: Vec<D> = (0..k)
            .map(|j| x[r] * (j as f64 + 1.0) - x[(r + j) % x.len()])
            .collect();
        total += lse_o(&row) * (r as f64 + 0.5);
    }
    total
}

/// A scalar helper with `exp`.
#[differentiable]
fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// LSTM's shape: `&mut` state updated in place with `tanh`, through a scalar helper.
#[differentiable]
fn cell_step(b: usize, w: &[f64], h: &mut [f64], c: &mut [f64], input: &[f64]) {
    for i in 0..b {
        let f = sig(input[i] * w[i] + w[b + i]);
        let g = (h[i] * w[2 * b + i]).tanh();
        c[i] = c[i] * f + g;
        h[i] = c[i].tanh() * sig(h[i]);
    }
}

#[autodiff_forward(run_fwd, Dual, Dual)]
#[autodiff_reverse(run_rev, Duplicated, Active)]
fn run(w: &[f64]) -> f64 {
    let b = w.len() / 3;
    let mut h = vec![0.1; b];
    let mut c = vec![-0.2; b];
    let mut loss = 0.0;
    for t in 0..4 {
        let input: Vec<f64> = (0..b).map(|i| (t * b + i) as f64 * 0.1).collect();
        cell_step(b, w, &mut h, &mut c, &input);
        for i in 0..b {
            loss += h[i] * c[i];
        }
    }
    loss
}

fn run_o<D: Num>(w: &[D]) -> D {
    let b = w.len() / 3;
    let sig = |x: D| (c::<D>(1.0) + (-x).exp()).recip();
    let mut h = vec![c::<D>(0.1); b];
    let mut cs = vec![c::<D>(-0.2); b];
    let mut loss = c::<D>(0.0);
    for t in 0..4 {
        for i in 0..b {
            let input = (t * b + i) as f64 * 0.1;
            let f = sig(w[i] * input + w[b + i]);
            let g = (h[i] * w[2 * b + i]).tanh();
            cs[i] = cs[i] * f + g;
            h[i] = cs[i].tanh() * sig(h[i]);
        }
        for i in 0..b {
            loss += h[i] * cs[i];
        }
    }
    loss
}

/// The gradient of [`run`], differentiated again (forward over reverse).
#[autodiff_forward(run_hvp, Dual, Dual)]
fn run_grad(w: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    run_rev(w, g, 1.0);
}

/// A dot product with a custom reverse rule whose pullback borrows both arguments.
#[custom_rule(reverse = dot_rev)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

fn dot_rev<'a>(a: &'a [f64], b: &'a [f64]) -> (f64, impl FnOnce(&mut [f64], &mut [f64], f64) + 'a) {
    (dot(a, b), move |da: &mut [f64], db: &mut [f64], g: f64| {
        for i in 0..a.len() {
            da[i] += g * b[i];
            db[i] += g * a[i];
        }
    })
}

/// A callee with `exp` that calls the borrowing rule.
#[differentiable]
fn soft_dot(x: &[f64], w: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].exp() * w[i];
    }
    s + dot(x, w)
}

/// Calls [`soft_dot`] on a buffer it overwrites between the calls.
#[autodiff_reverse(soft_rev, Duplicated, Active)]
fn soft(x: &[f64]) -> f64 {
    let mut y = vec![0.0; x.len()];
    let mut s = 0.0;
    for r in 0..3 {
        for i in 0..x.len() {
            y[i] = x[i] * (r as f64 - 0.5);
        }
        s += soft_dot(x, &y);
    }
    s
}

fn soft_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for r in 0..3 {
        let y: Vec<D> = x.iter().map(|v| *v * (r as f64 - 0.5)).collect();
        for i in 0..x.len() {
            s += x[i].exp() * y[i] + x[i] * y[i];
        }
    }
    s
}

/// A generic callee with `exp`, at `f64` and `f32`.
#[differentiable]
fn soft_max<T: Real>(x: &[T], k: usize) -> T {
    let mut s = T::zero();
    for i in 0..k.min(x.len()) {
        s += x[i].exp();
    }
    s.ln()
}

#[autodiff_reverse(gen64_rev, Duplicated, Active)]
fn gen64(x: &[f64]) -> f64 {
    soft_max(x, x.len()) * soft_max(&x[1..], 2)
}

#[autodiff_reverse(gen32_rev, Duplicated, Active)]
fn gen32(x: &[f32]) -> f32 {
    soft_max(x, x.len()) * 2.0
}

fn gen_o<D: Num>(x: &[D], k: usize) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..k.min(x.len()) {
        s += x[i].exp();
    }
    s.ln()
}

/// A recursive callee with `sin` and `exp`.
#[differentiable]
fn rec(x: f64, n: u32) -> f64 {
    if n == 0 {
        x.exp()
    } else {
        rec(x.sin() + 0.5, n - 1) * 0.75
    }
}

fn rec_o<D: Num>(x: D, n: u32) -> D {
    if n == 0 {
        x.exp()
    } else {
        rec_o(x.sin() + 0.5, n - 1) * 0.75
    }
}

#[autodiff_reverse(recs_rev, Duplicated, Active)]
fn recs(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += rec(x[i], (i % 4) as u32);
    }
    s
}

/// `lse` of a constant buffer (no adjoint to propagate) and of an active one.
#[autodiff_reverse(mixed_rev, Duplicated, Const, Active)]
fn mixed(x: &[f64], y: &[f64]) -> f64 {
    lse(y) * lse(x) + lse(y)
}

/// A callee that reads its slice through a copy of the reference.
#[differentiable]
fn alias(x: &[f64]) -> f64 {
    let y = x;
    let n = y.len();
    let mut s = 0.0;
    for i in 0..n {
        s += y[i].exp();
    }
    s
}
#[differentiable]
fn alias2(x: &[f64], k: usize) -> f64 {
    let y = &x[k..];
    let w = y;
    w[0].exp() + y[1].sin()
}
#[differentiable]
fn alias3(x: &[f64]) -> f64 {
    let (a, b) = x.split_at(1);
    a[0].exp() * b[0]
}
#[differentiable]
fn alias4(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += v.exp();
    }
    for (i, v) in x.iter().enumerate() {
        s += v.tanh() * i as f64;
    }
    s + x.iter().map(|v| v.sin()).sum::<f64>()
}
#[differentiable]
fn alias5(x: &[f64]) -> f64 {
    let m = x.len() / 2;
    let lo = &x[..m];
    let mut s = 0.0;
    for c in x.chunks(2) {
        s += c[0].exp();
    }
    s + lo.iter().sum::<f64>()
}
/// Calls callees that view their argument through locals, sub-slices, `split_at`,
/// iterators and chunks (some of them keep their state, some recompute), on a buffer it
/// overwrites between the calls.
#[autodiff_reverse(views_rev, Duplicated, Active)]
fn views(x: &[f64]) -> f64 {
    let mut b = x.to_vec();
    let mut s = 0.0;
    for r in 0..2 {
        s += alias(&b) + alias2(&b, 1) + alias3(&b) + alias4(&b) + alias5(&b);
        b[0] += 1.0 + r as f64;
    }
    s
}
/// A scalar callee with `exp` and `ln`, called inside a closure that a higher-order
/// function receives.
#[differentiable]
fn softplus(x: f64) -> f64 {
    (x.exp() + 1.0).ln()
}

#[differentiable]
fn apply<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
    f(x) * 2.0 + f(x * 0.5)
}

#[autodiff_reverse(through_closure_rev, Active, Active)]
#[autodiff_forward(through_closure_fwd, Dual, Dual)]
fn through_closure(x: f64) -> f64 {
    apply(|t| softplus(t * x), x) + softplus(x)
}

fn through_closure_o<D: Num>(x: D) -> D {
    let sp = |t: D| (t.exp() + 1.0).ln();
    sp(x * x) * 2.0 + sp(x * 0.5 * x) + sp(x)
}

thread_local! {
    static RUNS: Cell<usize> = const { Cell::new(0) };
}

fn bump() -> bool {
    RUNS.with(|r| r.set(r.get() + 1));
    true
}

/// Counts how often its body runs; an iterator chain.
#[differentiable]
fn counted(x: &[f64]) -> f64 {
    assert!(bump());
    x.iter().map(|v| v.exp()).sum::<f64>().ln()
}

#[autodiff_reverse(two_calls_rev, Duplicated, Active)]
fn two_calls(x: &[f64]) -> f64 {
    counted(x) * counted(&x[1..])
}

thread_local! {
    static TRI_RUNS: Cell<usize> = const { Cell::new(0) };
}

fn bump_tri() -> bool {
    TRI_RUNS.with(|r| r.set(r.get() + 1));
    true
}

/// `out = Q x` with `Q` lower triangular (diagonal `q`, strict triangle `l` column by
/// column): a loop nest with no libm call, whose forward sweep records only the `d`
/// values `out[i] = ..` overwrites.
#[differentiable]
fn tri(q: &[f64], l: &[f64], x: &[f64], out: &mut [f64]) {
    assert!(bump_tri());
    let d = x.len();
    for i in 0..d {
        out[i] = q[i] * x[i];
    }
    let mut k = 0;
    for i in 0..d {
        for j in i + 1..d {
            out[j] += l[k] * x[i];
            k += 1;
        }
    }
}

/// `Σ_r Σ_j (j + ½) (Q x_r)_j²` over rows `x_r` of `p[6..]`, with `q = p[..3]` and
/// `l = p[3..6]`: GMM's `Q (x − μ)` per point, through one reused buffer.
#[autodiff_forward(tri_rows_fwd, Dual, Dual)]
#[autodiff_reverse(tri_rows_rev, Duplicated, Active)]
fn tri_rows(p: &[f64]) -> f64 {
    let d = 3;
    let mut out = vec![0.0; d];
    let mut s = 0.0;
    for r in 0..(p.len() - 6) / d {
        tri(&p[..3], &p[3..6], &p[6 + d * r..6 + d * (r + 1)], &mut out);
        for j in 0..d {
            s += out[j] * out[j] * (j as f64 + 0.5);
        }
    }
    s
}

fn tri_rows_o<D: Num>(p: &[D]) -> D {
    let d = 3;
    let mut s = c::<D>(0.0);
    for r in 0..(p.len() - 6) / d {
        let x = &p[6 + d * r..6 + d * (r + 1)];
        let mut out: Vec<D> = (0..d).map(|i| p[i] * x[i]).collect();
        let mut k = 3;
        for i in 0..d {
            for j in i + 1..d {
                out[j] += p[k] * x[i];
                k += 1;
            }
        }
        for j in 0..d {
            s += out[j] * out[j] * c::<D>(j as f64 + 0.5);
        }
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn callee_over_an_overwritten_buffer((x, v, s0) in slice_case(-2.0, 2.0, 2..7, 0), seed in seed()) {
        check_slice("rows", (&x, &v, &s0, seed), rows, rows_fwd, rows_rev, rows_o);
    }

    #[test]
    fn callee_with_mut_state_and_calls((w, v, s0) in slice_case(-1.0, 1.0, 3..10, 0), seed in seed()) {
        let n = w.len() / 3 * 3;
        let (w, v, s0) = (&w[..n], &v[..n], &s0[..n]);
        check_slice("run", (w, v, s0, seed), run, run_fwd, run_rev, run_o);
    }

    #[test]
    fn loop_nest_callee_over_a_reused_buffer(
        (p, v, s0) in (1usize..4).prop_flat_map(|r| slice_case(-1.0, 1.0, 6 + 3 * r..7 + 3 * r, 0)),
        seed in seed(),
    ) {
        check_slice("tri_rows", (&p, &v, &s0, seed), tri_rows, tri_rows_fwd, tri_rows_rev, tri_rows_o);
        check_hvp_of::<tri_rows_rev>(&p, &v, tri_rows_o);
    }

    #[test]
    fn hvp_through_callees_with_kept_state((w, v, _s0) in slice_case(-1.0, 1.0, 3..10, 0)) {
        let n = w.len() / 3 * 3;
        let (w, v) = (&w[..n], &v[..n]);
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        run_hvp(w, v, &mut g, &mut hv);
        let grad = |z: &[f64]| {
            let mut g = vec![0.0; n];
            run_rev(z, &mut g, 1.0);
            g
        };
        assert_all_close("run H·v", &hv, &fd_hvp(grad, w, v), 1e-6);
    }

    #[test]
    fn callee_calling_a_borrowing_rule((x, _v, s0) in slice_case(-1.0, 1.0, 1..6, 0), seed in seed()) {
        let mut g = s0.clone();
        let f = soft_rev(&x, &mut g, seed);
        let (want_f, want) = oracle_grad(soft_o, &x);
        check("soft", f, want_f);
        let got: Vec<f64> = g.iter().zip(&s0).map(|(a, b)| (a - b) / seed).collect();
        check_all("soft grad", &got, &want);
    }

    #[test]
    fn generic_callee_at_both_float_types((x, _v, _s0) in slice_case(-1.0, 1.0, 3..6, 0)) {
        let mut g = vec![0.0; x.len()];
        gen64_rev(&x, &mut g, 1.0);
        let (_, want) = oracle_grad(|d| gen_o(d, d.len()) * gen_o(&d[1..], 2), &x);
        check_all("gen64", &g, &want);
        let x32: Vec<f32> = x.iter().map(|v| *v as f32).collect();
        let mut g32 = vec![0.0f32; x.len()];
        gen32_rev(&x32, &mut g32, 1.0);
        let (_, want) = oracle_grad(|d| gen_o(d, d.len()) * 2.0, &x);
        for (a, b) in g32.iter().zip(&want) {
            prop_assert!((*a as f64 - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn recursive_callee((x, _v, _s0) in slice_case(-1.0, 1.0, 1..7, 0)) {
        let mut g = vec![0.0; x.len()];
        recs_rev(&x, &mut g, 1.0);
        let (_, want) = oracle_grad(
            |d| d.iter().enumerate().fold(c::<Dual64>(0.0), |s, (i, v)| s + rec_o(*v, (i % 4) as u32)),
            &x,
        );
        check_all("recs", &g, &want);
    }

    #[test]
    fn callee_without_adjoints((x, y) in (2usize..6).prop_flat_map(|n| (vecf(-1.0, 1.0, n), vecf(-1.0, 1.0, n)))) {
        let mut g = vec![0.0; x.len()];
        let f = mixed_rev(&x, &mut g, &y, 1.0);
        let yv: Vec<Dual64> = y.iter().map(|v| Dual64::from(*v)).collect();
        let (want_f, want) = oracle_grad(|d| lse_o(&yv) * lse_o(d) + lse_o(&yv), &x);
        check("mixed", f, want_f);
        check_all("mixed grad", &g, &want);
    }
}

/// [`through_closure`] in both modes against num-dual.
#[test]
fn kept_callee_inside_a_closure_argument() {
    for x in [-1.3, 0.2, 0.9] {
        let want = through_closure_o(Dual64::new(x, 1.0));
        let (f, g) = through_closure_rev(x, 1.0);
        check("through_closure", f, want.re);
        check("through_closure grad", g, want.eps);
        let (f, t) = through_closure_fwd(x, 1.0);
        check("through_closure fwd", f, want.re);
        check("through_closure tangent", t, want.eps);
    }
}

/// A callee's forward sweep runs once per call in a gradient: its pullback reuses what it
/// recorded instead of running it again.
#[test]
fn callee_body_runs_once_per_call() {
    let x = [0.3, -0.2, 0.9];
    let mut g = [0.0; 3];
    RUNS.with(|r| r.set(0));
    let f = two_calls_rev(&x, &mut g, 1.0);
    assert_eq!(RUNS.with(Cell::get), 2);
    assert_eq!(f, two_calls(&x));
    let (_, want) = oracle_grad(
        |d| {
            let l = |s: &[Dual64]| s.iter().fold(c::<Dual64>(0.0), |a, v| a + v.exp()).ln();
            l(d) * l(&d[1..])
        },
        &x,
    );
    check_all("two_calls", &g, &want);
}

/// [`views`] against central differences (the callees' oracles would repeat them).
#[test]
fn callees_that_view_their_arguments() {
    let x = [0.3, 0.5, -0.2, 0.7];
    let mut g = [0.0; 4];
    views_rev(&x, &mut g, 1.0);
    let h = 1e-6;
    for i in 0..4 {
        let (mut xp, mut xm) = (x, x);
        xp[i] += h;
        xm[i] -= h;
        let fd = (views(&xp) - views(&xm)) / (2.0 * h);
        check_tol(&format!("views[{i}]"), g[i], fd, 1e-6);
    }
}

/// A callee that runs a loop nest keeps its forward sweep too: one run per call.
#[test]
fn loop_nest_callee_runs_once_per_call() {
    let p: Vec<f64> = (0..12).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut g = vec![0.0; p.len()];
    TRI_RUNS.with(|r| r.set(0));
    let f = tri_rows_rev(&p, &mut g, 1.0);
    assert_eq!(TRI_RUNS.with(Cell::get), 2);
    check("tri_rows", f, tri_rows(&p));
    let (_, want) = oracle_grad(tri_rows_o, &p);
    check_all("tri_rows grad", &g, &want);
}

/// A kept-state pullback reaches the elements its augmented call checked without
/// checking them again, so it refuses a slice of another length than the call's (the
/// generated callers always pass the same one; this calls the protocol by hand).
#[test]
#[should_panic(
    expected = "a pullback was given a slice of length 2, its augmented call one of length 3"
)]
fn a_kept_state_pullback_refuses_a_slice_of_another_length() {
    let (value, state) = lse::__ad_aug(&[0.1, 0.2, 0.3]);
    assert!(value.is_finite());
    let mut shadow = [0.0; 2];
    lse::__ad_pull(state, &[0.1, 0.2], &mut shadow[..], 1.0, ());
}
