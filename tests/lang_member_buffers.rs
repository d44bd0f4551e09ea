//! Whole vectors given to members of struct parameters: `s.w = x.to_vec();`,
//! `self.w = v;` of a vector built in the function, and `clear`, `truncate` and `resize`
//! of a member, whose length then changes, in the function or in the methods it calls
//! (the caller reads the member after them, and may seed its final values). A member that holds integers (`ids:
//! Vec<usize>`, cleared and filled again) carries no derivative. A matrix member
//! (`[[f64; 2]; 2]`) copied whole and assigned a matrix literal. Members of a struct built
//! in the function (`let mut st = Pool { v: x.to_vec(), .. };`): reordered, lent, read
//! through `get` and resized, by the function and by the struct's methods. Checked against num-dual
//! in both modes and under forward over reverse.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// A history of values and a scale.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Hist {
    pub w: Vec<f64>,
    pub scale: f64,
}

#[differentiable]
impl Hist {
    /// Keeps `sin(scale x)` in `w` (a vector built here, moved into the member), then
    /// reads it back.
    pub fn remember(&mut self, x: &[f64]) -> f64 {
        let mut v = vec![0.0; x.len()];
        for i in 0..x.len() {
            v[i] = (x[i] * self.scale).sin();
        }
        self.w = v;
        let mut s = 0.0;
        for i in 0..self.w.len() {
            s += self.w[i] * x[i];
        }
        s
    }
}

/// Methods that change the length of `w`, for callers that read it after them.
#[differentiable]
impl Hist {
    /// Starts `w` again: a new vector, then `k` multiples of `scale` pushed.
    pub fn restart(&mut self, k: usize) {
        self.w = Vec::new();
        for i in 0..k {
            self.w.push(self.scale * (i as f64 + 1.0));
        }
    }

    /// Appends `scale²`.
    pub fn record(&mut self) {
        self.w.push(self.scale * self.scale);
    }

    /// Appends the values of `x`.
    pub fn append(&mut self, x: &[f64]) {
        self.w.extend_from_slice(x);
    }
}

/// Lets methods grow `w`, empty it and fill it again, and extend it from a slice, reading
/// it by index after each.
#[autodiff_reverse(regrown_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(regrown_fwd, Dual, Dual, Dual)]
fn regrown(x: &[f64], s: &mut Hist) -> f64 {
    s.scale *= x[0];
    s.record();
    let mut t = s.w[s.w.len() - 1] * x[1];
    s.restart(2);
    t += s.w[0] * s.w[1] + x[2];
    s.record();
    s.append(&x[..2]);
    t + s.w[2] * s.w[0] + s.w[3] * s.w[4]
}

/// `regrown`, and the final `w` (`[c, 2c, c², x₀, x₁]` with `c = scale x₀`) weighed by
/// `seed`: what the reverse companion differentiates when the caller seeds `w`.
fn regrown_o<D: Num>(x: &[D], scale: D, seed: &[f64]) -> D {
    let c = scale * x[0];
    let value = c * c * x[1] + c * c * 2.0 + x[2] + c * c * c + x[0] * x[1];
    value + c * seed[0] + c * 2.0 * seed[1] + c * c * seed[2] + x[0] * seed[3] + x[1] * seed[4]
}

/// The gradient with respect to `x`, for H·v.
#[autodiff_forward(regrown_hvp, Dual, Dual, Dual, Dual)]
fn regrown_grad(x: &[f64], g: &mut [f64], s: &mut Hist, ds: &mut Hist) {
    regrown_rev(x, g, s, ds, 1.0);
}

/// A location and the residuals of data about it, which one method fills and another
/// reads: the caller never indexes them.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Residuals {
    pub mu: f64,
    pub resid: Vec<f64>,
}

#[differentiable]
impl Residuals {
    pub fn fill(&mut self, y: &[f64]) {
        for &v in y {
            self.resid.push(v - self.mu);
        }
    }

    pub fn sse(&self) -> f64 {
        self.resid.iter().map(|e| e * e).sum()
    }
}

#[autodiff_reverse(residual_loss_rev, Duplicated, Const, Active)]
#[autodiff_forward(residual_loss_fwd, Dual, Const, Dual)]
fn residual_loss(m: &mut Residuals, y: &[f64]) -> f64 {
    m.fill(y);
    m.sse()
}

/// A damper inside a body: a struct member with a `&mut self` method of its own.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Damper {
    pub c: f64,
}

#[differentiable]
impl Damper {
    pub fn damp(&mut self, v: f64) -> f64 {
        self.c *= v.cos();
        self.c * v
    }
}

#[differentiable]
#[derive(Clone, Debug)]
pub struct Body {
    pub m: f64,
    pub damper: Damper,
}

/// A method of a member struct called twice, the member read between and after.
#[autodiff_reverse(damped_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(damped_fwd, Dual, Dual, Dual)]
fn damped(x: &[f64], b: &mut Body) -> f64 {
    let f = b.damper.damp(x[0]);
    let g = b.damper.damp(x[1] * b.m);
    f * b.damper.c + g * b.m
}

fn damped_o<D: Num>(x: &[D], m: D, c0: D) -> D {
    let c1 = c0 * x[0].cos();
    let f = c1 * x[0];
    let v = x[1] * m;
    let c2 = c1 * v.cos();
    let g = c2 * v;
    f * c2 + g * m
}

/// The gradient with respect to `x`, for H·v.
#[autodiff_forward(damped_hvp, Dual, Dual, Dual, Dual)]
fn damped_grad(x: &[f64], g: &mut [f64], b: &mut Body, db: &mut Body) {
    damped_rev(x, g, b, db, 1.0);
}

/// Two histories.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Twin {
    pub hist: Vec<f64>,
    pub w: Vec<f64>,
}

/// `s.w = s.hist.clone();`: a copy of one member given to another.
#[autodiff_reverse(cloned_rev, Duplicated, Duplicated, Active)]
fn cloned(x: &[f64], s: &mut Twin) -> f64 {
    s.hist[0] = x[0] * x[1];
    s.w = s.hist.clone();
    s.hist[1] = 0.0;
    s.w[0] * s.w[1]
}

/// `a u`, a vector of its own.
#[differentiable]
fn scaled_copy(u: &[f64], a: f64) -> Vec<f64> {
    u.iter().map(|v| v * a).collect()
}

/// `s.w = scaled_copy(..)`: a call's vector given to a member.
#[autodiff_reverse(given_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(given_fwd, Dual, Dual, Dual)]
fn given(x: &[f64], s: &mut Twin) -> f64 {
    s.w = scaled_copy(&s.hist, x[0]);
    s.w[0] * s.w[1] + s.w[0] * x[1]
}

/// The gradient with respect to `x`, for H·v.
#[autodiff_forward(given_hvp, Dual, Dual, Dual, Dual)]
fn given_grad(x: &[f64], g: &mut [f64], s: &mut Twin, ds: &mut Twin) {
    given_rev(x, g, s, ds, 1.0);
}

fn given_o<D: Num>(x: &[D], h: &[D]) -> D {
    let (w0, w1) = (h[0] * x[0], h[1] * x[0]);
    w0 * w1 + w0 * x[1]
}

/// A point set whole through `&mut`.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
}

/// `*p = Pt { .. }`: each member assigned, from values computed first (one reads the old
/// point), then the point read.
#[autodiff_reverse(reset_rev, Active, Duplicated, Active)]
#[autodiff_forward(reset_fwd, Dual, Dual, Dual)]
fn reset(a: f64, p: &mut Pt) -> f64 {
    *p = Pt {
        x: a * a,
        y: p.x + a,
    };
    p.x * p.y
}

/// Reads the old `w[0]`, replaces `w` by a copy of `x` (of another length), reads it, and
/// lets a method replace it again.
#[autodiff_reverse(store_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(store_fwd, Dual, Dual, Dual)]
fn store(x: &[f64], s: &mut Hist) -> f64 {
    let before = s.w[0];
    s.w = x.to_vec();
    let mut t = before * s.w[0];
    for i in 1..s.w.len() {
        t += s.w[i] * s.w[i - 1] * s.scale;
    }
    t + s.remember(x)
}

fn store_o<D: Num>(x: &[D], w0: D, scale: D) -> D {
    let mut t = w0 * x[0];
    for i in 1..x.len() {
        t += x[i] * x[i - 1] * scale;
    }
    for i in 0..x.len() {
        t += (x[i] * scale).sin() * x[i];
    }
    t
}

/// The gradient with respect to `x`, for H·v (forward over reverse).
#[autodiff_forward(store_hvp, Dual, Dual, Dual, Dual)]
fn store_grad(x: &[f64], g: &mut [f64], s: &mut Hist, ds: &mut Hist) {
    store_rev(x, g, s, ds, 1.0);
}

/// A member shortened, grown with a constant, emptied and filled again by pushes.
#[autodiff_reverse(resized_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(resized_fwd, Dual, Dual, Dual)]
fn resized(x: &[f64], s: &mut Hist) -> f64 {
    s.w.truncate(2);
    s.w.resize(3, 0.5);
    let mut t = s.w[1] * s.w[2] * x[0];
    s.w.clear();
    for i in 0..x.len() {
        s.w.push(x[i] * x[i] * s.scale);
    }
    for i in 0..s.w.len() {
        t += s.w[i] * x[i];
    }
    t
}

fn resized_o<D: Num>(x: &[D], w1: D, scale: D) -> D {
    let mut t = w1 * 0.5 * x[0];
    for i in 0..x.len() {
        t += x[i] * x[i] * x[i] * scale;
    }
    t
}

/// The gradient with respect to `x`, for H·v.
#[autodiff_forward(resized_hvp, Dual, Dual, Dual, Dual)]
fn resized_grad(x: &[f64], g: &mut [f64], s: &mut Hist, ds: &mut Hist) {
    resized_rev(x, g, s, ds, 1.0);
}

/// Positions of the positive inputs, kept in a member of integers, and weights.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Picker {
    pub ids: Vec<usize>,
    pub w: Vec<f64>,
}

/// Empties the list of indices, fills it again, and sums over it; then replaces it
/// whole.
#[autodiff_reverse(picked_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(picked_fwd, Dual, Dual, Dual)]
fn picked(x: &[f64], s: &mut Picker) -> f64 {
    s.ids.clear();
    for i in 0..x.len() {
        if x[i] > 0.0 {
            s.ids.push(i);
        }
    }
    let mut t = 0.0;
    for &i in &s.ids {
        t += x[i] * x[i] * s.w[i];
    }
    s.ids = s.ids[..s.ids.len().min(1)].to_vec();
    t
}

fn picked_o<D: Num>(x: &[D], w: &[D]) -> D {
    let mut t = D::zero();
    for i in 0..x.len() {
        if x[i].re() > 0.0 {
            t += x[i] * x[i] * w[i];
        }
    }
    t
}

/// The gradient with respect to `x`, for H·v.
#[autodiff_forward(picked_hvp, Dual, Dual, Dual, Dual)]
fn picked_grad(x: &[f64], g: &mut [f64], s: &mut Picker, ds: &mut Picker) {
    picked_rev(x, g, s, ds, 1.0);
}

/// A 2×2 state and its covariance, as a Kalman filter holds them.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Filter {
    pub p: [[f64; 2]; 2],
}

#[differentiable]
impl Filter {
    /// One step: the covariance copied whole, then a new one assigned as a matrix literal
    /// that reads the old one.
    pub fn step(&mut self, q: f64) -> f64 {
        let old = self.p;
        self.p = [
            [old[0][0] + q * old[1][1], old[0][1] * q],
            [old[1][0] + old[0][1], old[1][1] * old[0][0] + q],
        ];
        self.p[0][0] * self.p[1][1] - self.p[0][1] * self.p[1][0]
    }
}

/// Two steps from a covariance set from `x`.
#[autodiff_reverse(filtered_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(filtered_fwd, Dual, Dual, Dual)]
fn filtered(x: &[f64], f: &mut Filter) -> f64 {
    f.p[0][0] = x[0];
    f.p[0][1] = x[1];
    f.p[1][0] = x[1] * x[0];
    f.p[1][1] = x[2];
    f.step(x[3]) + f.step(0.5 * x[3])
}

/// The gradient with respect to `x`, for H·v.
#[autodiff_forward(filtered_hvp, Dual, Dual, Dual, Dual)]
fn filtered_grad(x: &[f64], g: &mut [f64], f: &mut Filter, df: &mut Filter) {
    filtered_rev(x, g, f, df, 1.0);
}

fn zero_filter() -> Filter {
    Filter { p: [[0.0; 2]; 2] }
}

fn step_o<D: Num>(p: &mut [[D; 2]; 2], q: D) -> D {
    let old = *p;
    *p = [
        [old[0][0] + q * old[1][1], old[0][1] * q],
        [old[1][0] + old[0][1], old[1][1] * old[0][0] + q],
    ];
    p[0][0] * p[1][1] - p[0][1] * p[1][0]
}

fn filtered_o<D: Num>(x: &[D]) -> D {
    let mut p = [[x[0], x[1]], [x[1] * x[0], x[2]]];
    step_o(&mut p, x[3]) + step_o(&mut p, x[3] * 0.5)
}

/// `x` followed by the struct's parameters that the oracle reads.
fn joined(x: &[f64], rest: &[f64]) -> Vec<f64> {
    x.iter().chain(rest).copied().collect()
}

/// A struct with a vector member built anew in each step of a loop and lent `&mut` to a
/// callee that writes it.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Acc {
    pub w: Vec<f64>,
    pub b: f64,
}

#[differentiable]
fn fill_acc(x: &[f64], k: usize, g: &mut Acc) {
    g.b += x[k] * x[k];
    g.w[0] = x[0] * x[1];
}

#[autodiff_forward(lent_in_loop_fwd, Dual, Dual)]
#[autodiff_reverse(lent_in_loop_rev, Duplicated, Active)]
fn lent_in_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..2 {
        let mut g = Acc {
            w: vec![0.0; 2],
            b: 0.0,
        };
        fill_acc(x, k, &mut g);
        s += g.b + g.w[0] * x[k];
    }
    s
}

fn lent_in_loop_o<D: Num>(x: &[D]) -> D {
    (0..2).fold(c::<D>(0.0), |s, k| s + x[k] * x[k] + x[0] * x[1] * x[k])
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_struct_with_a_vector_built_in_each_step_and_lent(
        (x, v, s0) in slice_case(-1.5, 1.5, 2..4, 0), s in seed(),
    ) {
        check_slice("lent_in_loop", (&x, &v, &s0, s), lent_in_loop, lent_in_loop_fwd, lent_in_loop_rev, lent_in_loop_o::<Dual64>);
        check_hvp_of::<lent_in_loop_rev>(&x, &v, lent_in_loop_o);
    }

    #[test]
    fn a_member_replaced_by_a_copy_and_by_a_built_vector(
        x in vecf(-1.5, 1.5, 4),
        w0 in float(-2.0, 2.0),
        scale in float(0.5, 2.0),
        v in dirs(6),
    ) {
        let n = x.len();
        let all = joined(&x, &[w0, scale]);
        let (want, g) = oracle_grad(|d| store_o(&d[..n], d[n], d[n + 1]), &all);
        // `remember` leaves `w = sin(scale x)`, whatever the length before.
        let w_final: Vec<f64> = x.iter().map(|xi| (scale * xi).sin()).collect();

        let mut s = Hist { w: vec![w0, 2.0], scale };
        let mut ds = Hist { w: vec![0.0; 2], scale: 0.0 };
        let mut dx = vec![0.0; n];
        check("value", store_rev(&x, &mut dx, &mut s, &mut ds, 1.0), want);
        check_all("dx", &dx, &g[..n]);
        check("dw[0]", ds.w[0], g[n]);
        check_all("dw after the call", &ds.w, &[g[n], 0.0]);
        check("dscale", ds.scale, g[n + 1]);
        check_all("w", &s.w, &w_final);

        let mut s = Hist { w: vec![w0, 2.0], scale };
        let mut ts = Hist { w: vec![v[4], 0.0], scale: v[5] };
        let (value, tangent) = store_fwd(&x, &v[..n], &mut s, &mut ts);
        check("forward value", value, want);
        let along: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
        check("tangent", tangent, along);
        let tw: Vec<f64> = (0..n)
            .map(|i| (scale * x[i]).cos() * (scale * v[i] + v[5] * x[i]))
            .collect();
        check_all("tangent of w", &ts.w, &tw);

        let mut s = Hist { w: vec![w0, 2.0], scale };
        let mut ts = Hist { w: vec![0.0; 2], scale: 0.0 };
        let mut ds = Hist { w: vec![0.0; 2], scale: 0.0 };
        let mut tds = Hist { w: vec![0.0; 2], scale: 0.0 };
        let (mut g2, mut hv) = (vec![0.0; n], vec![0.0; n]);
        store_hvp(&x, &v[..n], &mut g2, &mut hv, &mut s, &mut ts, &mut ds, &mut tds);
        check_all("gradient under H·v", &g2, &g[..n]);
        check_hvp(&hv, &x, &v[..n], |d| store_o(d, c(w0), c(scale)));
    }

    /// A method pushes onto `w` (empty on entry, or not), another empties it and fills
    /// it again, a third extends it from a slice; the caller reads `w` after each, and
    /// seeds its final values.
    #[test]
    fn a_member_whose_length_callees_change(
        x in vecf(-1.5, 1.5, 3),
        w0 in proptest::collection::vec(float(-2.0, 2.0), 0..3),
        scale in float(0.5, 2.0),
        seed in vecf(-1.0, 1.0, 5),
        v in dirs(4),
    ) {
        let n = x.len();
        let all = joined(&x, &[scale]);
        let (want, g) = oracle_grad(|d| regrown_o(&d[..n], d[n], &[0.0; 5]), &all);
        let (_, g_seeded) = oracle_grad(|d| regrown_o(&d[..n], d[n], &seed), &all);

        let mut s = Hist { w: w0.clone(), scale };
        let mut ds = Hist { w: vec![0.0; w0.len()], scale: 0.0 };
        let mut dx = vec![0.0; n];
        check("value", regrown_rev(&x, &mut dx, &mut s, &mut ds, 1.0), want);
        check_all("dx", &dx, &g[..n]);
        check("dscale", ds.scale, g[n]);
        // The values `w` held on entry are never read.
        check_all("dw after the call", &ds.w, &vec![0.0; w0.len()]);
        let cw = scale * x[0];
        check_all("w", &s.w, &[cw, 2.0 * cw, cw * cw, x[0], x[1]]);

        // The caller's seed of the final `w` (five values, whatever its length on entry).
        let mut s = Hist { w: w0.clone(), scale };
        let mut ds = Hist { w: seed.clone(), scale: 0.0 };
        let mut dx = vec![0.0; n];
        regrown_rev(&x, &mut dx, &mut s, &mut ds, 1.0);
        check_all("dx with w seeded", &dx, &g_seeded[..n]);
        check("dscale with w seeded", ds.scale, g_seeded[n]);

        let mut s = Hist { w: w0.clone(), scale };
        let mut ts = Hist { w: vec![0.0; w0.len()], scale: v[n] };
        let (value, tangent) = regrown_fwd(&x, &v[..n], &mut s, &mut ts);
        check("forward value", value, want);
        let along: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
        check("tangent", tangent, along);
        let tc = v[n] * x[0] + scale * v[0];
        check_all("tangent of w", &ts.w, &[tc, 2.0 * tc, 2.0 * cw * tc, v[0], v[1]]);

        let mut s = Hist { w: w0.clone(), scale };
        let mut ts = Hist { w: vec![0.0; w0.len()], scale: 0.0 };
        let mut ds = Hist { w: vec![0.0; w0.len()], scale: 0.0 };
        let mut tds = Hist { w: vec![0.0; w0.len()], scale: 0.0 };
        let (mut g2, mut hv) = (vec![0.0; n], vec![0.0; n]);
        regrown_hvp(&x, &v[..n], &mut g2, &mut hv, &mut s, &mut ts, &mut ds, &mut tds);
        check_all("gradient under H·v", &g2, &g[..n]);
        check_hvp(&hv, &x, &v[..n], |d| regrown_o(d, c(scale), &[0.0; 5]));
    }

    /// The shadow of a member that a callee grew, read by another callee's pullback,
    /// grows with it.
    #[test]
    fn a_member_grown_by_one_method_and_read_by_another(
        mu in float(-1.0, 1.0),
        y in vecf(-2.0, 2.0, 3),
        dmu in float(-1.0, 1.0),
    ) {
        // Σ (y_i − μ)²: derivative −2 Σ (y_i − μ).
        let want: f64 = y.iter().map(|v| (v - mu) * (v - mu)).sum();
        let d_want: f64 = -2.0 * y.iter().map(|v| v - mu).sum::<f64>();
        let mut m = Residuals { mu, resid: vec![] };
        let mut dm = Residuals { mu: 0.0, resid: vec![] };
        check("value", residual_loss_rev(&mut m, &mut dm, &y, 1.0), want);
        check("dmu", dm.mu, d_want);
        let mut m = Residuals { mu, resid: vec![] };
        let mut tm = Residuals { mu: dmu, resid: vec![] };
        let (value, tangent) = residual_loss_fwd(&mut m, &mut tm, &y);
        check("forward value", value, want);
        check("tangent", tangent, d_want * dmu);
    }

    #[test]
    fn a_member_given_a_clone_of_another(x in vecf(-1.5, 1.5, 2), h1 in float(-2.0, 2.0)) {
        // x₀ x₁ h₁: the gradient (x₁ h₁, x₀ h₁), and h₁'s adjoint x₀ x₁.
        let mut s = Twin { hist: vec![5.0, h1], w: vec![] };
        let mut ds = Twin { hist: vec![0.0; 2], w: vec![] };
        let mut dx = vec![0.0; 2];
        check("value", cloned_rev(&x, &mut dx, &mut s, &mut ds, 1.0), x[0] * x[1] * h1);
        check_all("dx", &dx, &[x[1] * h1, x[0] * h1]);
        check_all("dhist", &ds.hist, &[0.0, x[0] * x[1]]);
    }

    #[test]
    fn a_member_given_a_calls_vector(x in vecf(-1.5, 1.5, 2), h in vecf(-1.5, 1.5, 2), v in dirs(4)) {
        let all = joined(&x, &h);
        let (want, g) = oracle_grad(|d| given_o(&d[..2], &d[2..]), &all);
        let mut s = Twin { hist: h.clone(), w: vec![] };
        let mut ds = Twin { hist: vec![0.0; 2], w: vec![] };
        let mut dx = vec![0.0; 2];
        check("value", given_rev(&x, &mut dx, &mut s, &mut ds, 1.0), want);
        check_all("gradient", &[dx[0], dx[1], ds.hist[0], ds.hist[1]], &g);
        let mut s = Twin { hist: h.clone(), w: vec![] };
        let mut ts = Twin { hist: v[2..].to_vec(), w: vec![] };
        let (value, tangent) = given_fwd(&x, &v[..2], &mut s, &mut ts);
        check("forward value", value, want);
        check("tangent", tangent, g.iter().zip(&v).map(|(a, b)| a * b).sum());
        let mut s = Twin { hist: h.clone(), w: vec![] };
        let mut ts = Twin { hist: vec![0.0; 2], w: vec![] };
        let mut ds = Twin { hist: vec![0.0; 2], w: vec![] };
        let mut tds = Twin { hist: vec![0.0; 2], w: vec![] };
        let (mut g2, mut hv) = (vec![0.0; 2], vec![0.0; 2]);
        given_hvp(&x, &v[..2], &mut g2, &mut hv, &mut s, &mut ts, &mut ds, &mut tds);
        check_all("gradient under H·v", &g2, &g[..2]);
        check_hvp(&hv, &x, &v[..2], |d| given_o(d, &[c(h[0]), c(h[1])]));
    }

    #[test]
    fn a_struct_parameter_assigned_a_literal(a in float(-1.5, 1.5), x0 in float(-1.5, 1.5), s in float(-1.0, 1.0)) {
        // a² (x₀ + a): ∂a = 2a (x₀ + a) + a², ∂x₀ = a².
        let want = a * a * (x0 + a);
        let mut p = Pt { x: x0, y: 7.0 };
        let mut dp = Pt { x: 0.0, y: 0.0 };
        let (value, da) = reset_rev(a, &mut p, &mut dp, s);
        check("value", value, want);
        check("da", da, s * (2.0 * a * (x0 + a) + a * a));
        check("dx0", dp.x, s * a * a);
        check("dy0", dp.y, 0.0);
        let mut p = Pt { x: x0, y: 7.0 };
        let mut tp = Pt { x: 0.5, y: 3.0 };
        let (_, t) = reset_fwd(a, 1.0, &mut p, &mut tp);
        check("tangent", t, 2.0 * a * (x0 + a) + a * a + 0.5 * a * a);
        check("tangent of x", tp.x, 2.0 * a);
    }

    /// `b.damper.damp(v)`: a `&mut self` method of a member struct.
    #[test]
    fn methods_of_a_member_struct(x in vecf(-1.5, 1.5, 2), m in float(0.5, 2.0), c0 in float(-2.0, 2.0), v in dirs(4)) {
        let all = joined(&x, &[m, c0]);
        let (want, g) = oracle_grad(|d| damped_o(&d[..2], d[2], d[3]), &all);
        let body = || Body { m, damper: Damper { c: c0 } };
        let mut b = body();
        let mut db = Body { m: 0.0, damper: Damper { c: 0.0 } };
        let mut dx = vec![0.0; 2];
        check("value", damped_rev(&x, &mut dx, &mut b, &mut db, 1.0), want);
        check_all("gradient", &[dx[0], dx[1], db.m, db.damper.c], &g);
        let mut b = body();
        let mut tb = Body { m: v[2], damper: Damper { c: v[3] } };
        let (value, tangent) = damped_fwd(&x, &v[..2], &mut b, &mut tb);
        check("forward value", value, want);
        check("tangent", tangent, g.iter().zip(&v).map(|(a, b)| a * b).sum());
        let mut b = body();
        let mut tb = Body { m: 0.0, damper: Damper { c: 0.0 } };
        let mut db = Body { m: 0.0, damper: Damper { c: 0.0 } };
        let mut tdb = Body { m: 0.0, damper: Damper { c: 0.0 } };
        let (mut g2, mut hv) = (vec![0.0; 2], vec![0.0; 2]);
        damped_hvp(&x, &v[..2], &mut g2, &mut hv, &mut b, &mut tb, &mut db, &mut tdb);
        check_all("gradient under H·v", &g2, &g[..2]);
        check_hvp(&hv, &x, &v[..2], |d| damped_o(d, c(m), c(c0)));
    }

    #[test]
    fn a_member_truncated_resized_cleared_and_pushed(
        x in vecf(-1.5, 1.5, 5),
        w1 in float(-2.0, 2.0),
        scale in float(0.5, 2.0),
        v in dirs(7),
    ) {
        let n = x.len();
        let all = joined(&x, &[w1, scale]);
        let (want, g) = oracle_grad(|d| resized_o(&d[..n], d[n], d[n + 1]), &all);

        let mut s = Hist { w: vec![0.25, w1, -1.0, 3.0], scale };
        let mut ds = Hist { w: vec![0.0; 4], scale: 0.0 };
        let mut dx = vec![0.0; n];
        check("value", resized_rev(&x, &mut dx, &mut s, &mut ds, 1.0), want);
        check_all("dx", &dx, &g[..n]);
        check_all("dw", &ds.w, &[0.0, g[n], 0.0, 0.0]);
        check("dscale", ds.scale, g[n + 1]);
        let w_final: Vec<f64> = x.iter().map(|xi| xi * xi * scale).collect();
        check_all("w", &s.w, &w_final);

        let mut s = Hist { w: vec![0.25, w1, -1.0, 3.0], scale };
        let mut ts = Hist { w: vec![0.0, v[5], 0.0, 0.0], scale: v[6] };
        let (value, tangent) = resized_fwd(&x, &v[..n], &mut s, &mut ts);
        check("forward value", value, want);
        let along: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
        check("tangent", tangent, along);

        let mut s = Hist { w: vec![0.25, w1, -1.0, 3.0], scale };
        let mut ts = Hist { w: vec![0.0; 4], scale: 0.0 };
        let mut ds = Hist { w: vec![0.0; 4], scale: 0.0 };
        let mut tds = Hist { w: vec![0.0; 4], scale: 0.0 };
        let (mut g2, mut hv) = (vec![0.0; n], vec![0.0; n]);
        resized_hvp(&x, &v[..n], &mut g2, &mut hv, &mut s, &mut ts, &mut ds, &mut tds);
        check_all("gradient under H·v", &g2, &g[..n]);
        check_hvp(&hv, &x, &v[..n], |d| resized_o(d, c(w1), c(scale)));
    }

    #[test]
    fn a_matrix_member_copied_and_assigned_whole((x, v, s0) in slice_case(-1.0, 1.0, 4..5, 0), s in seed()) {
        check_slice(
            "filtered",
            (&x, &v, &s0, s),
            |x| filtered(x, &mut zero_filter()),
            |x, v| filtered_fwd(x, v, &mut zero_filter(), &mut zero_filter()),
            |x, dx, s| filtered_rev(x, dx, &mut zero_filter(), &mut zero_filter(), s),
            filtered_o::<Dual64>,
        );
        let n = x.len();
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        let (mut f, mut tf, mut df, mut tdf) = (zero_filter(), zero_filter(), zero_filter(), zero_filter());
        filtered_hvp(&x, &v, &mut g, &mut hv, &mut f, &mut tf, &mut df, &mut tdf);
        check_hvp(&hv, &x, &v, filtered_o);
    }

    #[test]
    fn a_member_of_integers_cleared_and_filled_again(
        x in vecf(-1.5, 1.5, 5),
        w in vecf(-2.0, 2.0, 5),
        v in dirs(10),
    ) {
        let n = x.len();
        let all = joined(&x, &w);
        let (want, g) = oracle_grad(|d| picked_o(&d[..n], &d[n..]), &all);
        let positive: Vec<usize> = (0..n).filter(|&i| x[i] > 0.0).collect();
        let ids_final: Vec<usize> = positive.iter().copied().take(1).collect();

        let mut s = Picker { ids: vec![7, 8, 9], w: w.clone() };
        let mut ds = Picker { ids: vec![7, 8, 9], w: vec![0.0; n] };
        let mut dx = vec![0.0; n];
        check("value", picked_rev(&x, &mut dx, &mut s, &mut ds, 1.0), want);
        check_all("dx", &dx, &g[..n]);
        check_all("dw", &ds.w, &g[n..]);
        prop_assert_eq!(&s.ids, &ids_final);

        let mut s = Picker { ids: vec![7, 8, 9], w: w.clone() };
        let mut ts = Picker { ids: vec![7, 8, 9], w: v[n..].to_vec() };
        let (value, tangent) = picked_fwd(&x, &v[..n], &mut s, &mut ts);
        check("forward value", value, want);
        let along: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
        check("tangent", tangent, along);
        prop_assert_eq!(&s.ids, &ids_final);

        let mut s = Picker { ids: vec![], w: w.clone() };
        let mut ts = Picker { ids: vec![], w: vec![0.0; n] };
        let mut ds = Picker { ids: vec![], w: vec![0.0; n] };
        let mut tds = Picker { ids: vec![], w: vec![0.0; n] };
        let (mut g2, mut hv) = (vec![0.0; n], vec![0.0; n]);
        picked_hvp(&x, &v[..n], &mut g2, &mut hv, &mut s, &mut ts, &mut ds, &mut tds);
        check_all("gradient under H·v", &g2, &g[..n]);
        check_hvp(&hv, &x, &v[..n], |d| {
            let wc: Vec<_> = w.iter().map(|&wi| c(wi)).collect();
            picked_o(d, &wc)
        });
    }
}

// ------------------------------------------------- members of structs built in the function

/// A struct that the function builds itself (not a parameter), with a buffer member.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Pool {
    pub v: Vec<f64>,
    pub s: f64,
}

#[differentiable]
impl Pool {
    /// Reorders `v` in place (`swap`, `reverse`, `sort_by` of `self.v`), then scales its
    /// first element.
    pub fn reorder(&mut self, a: f64) -> f64 {
        let n = self.v.len();
        self.v.swap(0, n - 1);
        self.v.reverse();
        self.v.sort_by(|p, q| p.partial_cmp(q).unwrap());
        self.v[0] *= a;
        self.s * self.v[0]
    }
}

/// `out[i] = out[i] a + x[i]`, for a member lent as `&mut st.v`.
#[differentiable]
fn relax_into(x: &[f64], a: f64, out: &mut [f64]) {
    for i in 0..x.len() {
        out[i] = out[i] * a + x[i];
    }
}

/// The member of a local struct reordered by its method and by the function, lent to a
/// callee that writes it, read through `get`, then shortened, grown and emptied.
#[autodiff_forward(built_fwd, Dual, Dual)]
#[autodiff_reverse(built_rev, Duplicated, Active)]
fn built(x: &[f64]) -> f64 {
    let n = x.len();
    let mut st = Pool {
        v: x.to_vec(),
        s: x[0] * 0.5,
    };
    let t = st.reorder(x[1]);
    st.v.swap(0, n - 1);
    st.v.reverse();
    st.v.sort_by(|p, q| q.partial_cmp(p).unwrap());
    relax_into(x, st.s, &mut st.v);
    let mid = match st.v.get(n / 2) {
        Some(m) => *m * st.v[0],
        None => 0.0,
    };
    st.v.truncate(n - 1);
    st.v.resize(n + 1, t);
    let grown = st.v[n];
    st.v.clear();
    st.v.resize(2, mid);
    t + mid + grown + st.v[1] * st.s
}

fn built_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut v = x.to_vec();
    let s = x[0] * c::<D>(0.5);
    v.swap(0, n - 1);
    v.reverse();
    v.sort_by(|p, q| p.re().partial_cmp(&q.re()).unwrap());
    v[0] *= x[1];
    let t = s * v[0];
    v.swap(0, n - 1);
    v.reverse();
    v.sort_by(|p, q| q.re().partial_cmp(&p.re()).unwrap());
    for i in 0..n {
        v[i] = v[i] * s + x[i];
    }
    let mid = v[n / 2] * v[0];
    v.truncate(n - 1);
    v.resize(n + 1, t);
    let grown = v[n];
    v.clear();
    v.resize(2, mid);
    t + mid + grown + v[1] * s
}

/// A local struct's member read through `get` inside an iterator's closure.
#[autodiff_forward(read_in_closure_fwd, Dual, Dual)]
#[autodiff_reverse(read_in_closure_rev, Duplicated, Active)]
fn read_in_closure(x: &[f64]) -> f64 {
    let st = Pool {
        v: x.to_vec(),
        s: x[1],
    };
    let t: f64 = x
        .iter()
        .map(|u| {
            u * match st.v.get(1) {
                Some(w) => *w - st.v[0],
                None => st.s,
            }
        })
        .sum();
    t * st.s
}

fn read_in_closure_o<D: Num>(x: &[D]) -> D {
    let w = x[1] - x[0];
    x.iter().fold(c::<D>(-0.0), |acc, u| acc + *u * w) * x[1]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn members_of_structs_built_in_the_function(
        (x, v, s0, seed) in slice_seed_case(-1.2, 1.2, 2..8)
    ) {
        check_slice("built", (&x, &v, &s0, seed), built, built_fwd, built_rev, built_o);
        check_hvp_of::<built_rev>(&x, &v, built_o);
        check_slice(
            "read_in_closure",
            (&x, &v, &s0, seed),
            read_in_closure,
            read_in_closure_fwd,
            read_in_closure_rev,
            read_in_closure_o,
        );
        check_hvp_of::<read_in_closure_rev>(&x, &v, read_in_closure_o);
    }
}
