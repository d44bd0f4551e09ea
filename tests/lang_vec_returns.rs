//! Functions that return a vector of floats (`-> Vec<f64>`): helpers called from
//! differentiated code, whose result the caller indexes, iterates and passes on, and
//! named companions of such a function (the reverse one takes its seed as `&[f64]`, the
//! forward one returns the vector and its tangent). The vector is built with `collect`,
//! `to_vec`, `vec![..]`, `push`, by index, or by another call. Checked against num-dual
//! in both modes, under forward over reverse (H·v) and forward over forward.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// `softmax(x)`, max-shifted, with `collect`.
#[differentiable]
fn softmax(x: &[f64]) -> Vec<f64> {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f64> = x.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// `c · x`, from a copy updated in place.
#[differentiable]
fn scaled(x: &[f64], c: f64) -> Vec<f64> {
    let mut v = x.to_vec();
    for i in 0..v.len() {
        v[i] *= c;
    }
    v
}

/// `[a b, a + b]`, a literal.
#[differentiable]
fn pair(a: f64, b: f64) -> Vec<f64> {
    vec![a * b, a + b]
}

/// `x_i²`, pushed, generic over the float type.
#[differentiable]
fn squares<T: Real>(x: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    for v in x {
        out.push(*v * *v);
    }
    out
}

/// Another call's vector, returned as it is (the binding is the case under test).
#[allow(clippy::let_and_return)]
#[differentiable]
fn passed_on(x: &[f64]) -> Vec<f64> {
    let p = softmax(x);
    p
}

/// A layer whose method returns its output.
#[differentiable]
#[derive(Clone, Debug)]
struct Layer {
    w: Vec<f64>,
    b: Vec<f64>,
}

impl Layer {
    #[differentiable]
    fn forward(&self, x: &[f64]) -> Vec<f64> {
        let n = x.len();
        let mut out = vec![0.0; self.b.len()];
        for i in 0..out.len() {
            let mut s = self.b[i];
            for j in 0..n {
                s += self.w[i * n + j] * x[j];
            }
            out[i] = s.tanh();
        }
        out
    }
}

#[autodiff_reverse(d_loss, Duplicated, Active, Duplicated, Active)]
#[autodiff_forward(j_loss, Dual, Dual, Dual, Dual)]
fn loss(x: &[f64], c: f64, layer: &Layer) -> f64 {
    let h = layer.forward(x);
    let p = passed_on(&h);
    let q = scaled(&p, c);
    let r = pair(q[0], c);
    let sq = squares(&q);
    let s: f64 = q.iter().zip(sq.iter()).map(|(a, b)| a * b).sum();
    let mut t = 0.0;
    for v in softmax(&q) {
        t += v * v;
    }
    s + r[0] * r[1] + t.sqrt() + sq.len() as f64
}

fn softmax_o<D: Num>(x: &[D]) -> Vec<D> {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, b| a.max(b.re()));
    let e: Vec<D> = x.iter().map(|v| (*v - m).exp()).collect();
    let s = e.iter().fold(D::zero(), |a, b| a + *b);
    e.iter().map(|v| *v / s).collect()
}

/// The oracle over `(x, c, w, b)` flattened, with `nx` inputs and `nh` units.
fn loss_o<D: Num>(p: &[D], nx: usize, nh: usize) -> D {
    let (x, rest) = p.split_at(nx);
    let c = rest[0];
    let (w, b) = rest[1..].split_at(nh * nx);
    let h: Vec<D> = (0..nh)
        .map(|i| {
            let mut s = b[i];
            for j in 0..nx {
                s += w[i * nx + j] * x[j];
            }
            s.tanh()
        })
        .collect();
    let q: Vec<D> = softmax_o(&h).iter().map(|v| *v * c).collect();
    let r = [q[0] * c, q[0] + c];
    let s = q.iter().fold(D::zero(), |a, v| a + *v * *v * *v);
    let t = softmax_o(&q).iter().fold(D::zero(), |a, v| a + *v * *v);
    s + r[0] * r[1] + t.sqrt() + nh as f64
}

/// Calls' vectors beside a constant scale and a constant slice: companions that
/// differentiate with respect to `x` alone (the parameters with derivatives are a subset,
/// so the companions differentiate the function's code rather than delegate), and a
/// call's vector from constants alone (`scaled(w, c)`, a fixed feature map of data).
#[autodiff_forward(weighted_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(weighted_rev, Duplicated, Const, Const, Active)]
fn weighted(x: &[f64], c: f64, w: &[f64]) -> f64 {
    let p = softmax(x);
    let q = scaled(&p, c);
    let fixed = scaled(w, c);
    q[0] * w[0] + q[1] * w[1] + fixed[1] * x[2]
}

fn weighted_o<D: Num>(x: &[D], c: f64, w: &[f64]) -> D {
    let p = softmax_o(x);
    p[0] * c * w[0] + p[1] * c * w[1] + x[2] * (w[1] * c)
}

/// The gradient of `loss` in `x`, `c` and the layer, whose forward companion is H·v.
#[autodiff_forward(loss_hvp, Dual, Dual, Dual, Dual, Dual, Dual)]
fn loss_grad(x: &[f64], gx: &mut [f64], c: f64, layer: &Layer, gl: &mut Layer) -> f64 {
    d_loss(x, gx, c, layer, gl, 1.0).1
}

/// Named companions of a function that returns a vector.
#[autodiff_reverse(d_direct, Duplicated, Active, Active)]
#[autodiff_forward(j_direct, Dual, Dual, Dual)]
fn direct(x: &[f64], c: f64) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for i in 0..x.len() {
        out[i] = (x[i] * c).sin() * x[0];
    }
    out
}

fn direct_o<D: Num>(x: &[D], c: D) -> Vec<D> {
    x.iter().map(|v| (*v * c).sin() * x[0]).collect()
}

/// A curve fit's residuals: a vector result beside a constant slice of data, whose
/// forward companion is differentiated again in reverse mode (`fit_curvature`).
#[autodiff_forward(residuals_fwd, Dual, Const, Dual)]
fn residuals(p: &[f64], t: &[f64]) -> Vec<f64> {
    t.iter().map(|ti| p[0] * (p[1] * ti).exp() - ti).collect()
}

fn residuals_o<D: Num>(p: &[D], t: &[f64]) -> Vec<D> {
    t.iter().map(|ti| p[0] * (p[1] * *ti).exp() - *ti).collect()
}

/// `⟨r(p), J(p) v⟩`, through the forward companion of the residuals.
#[autodiff_reverse(fit_curvature_rev, Duplicated, Const, Const, Active)]
fn fit_curvature(p: &[f64], v: &[f64], t: &[f64]) -> f64 {
    let (r, jv) = residuals_fwd(p, v, t);
    let mut s = 0.0;
    for i in 0..r.len() {
        s += r[i] * jv[i];
    }
    s
}

/// The second derivative of a scalar function through vector-returning calls, by forward
/// over forward and by reverse over forward.
#[autodiff_forward(curve_fwd, Dual, Dual)]
fn curve(t: f64) -> f64 {
    let v = pair(t, t * t);
    let s = softmax(&v);
    v[0] * v[1] + s[0]
}

#[autodiff_forward(curve_fwd2, Dual, Dual)]
#[autodiff_reverse(curve_rev2, Active, Active)]
fn curve_slope(t: f64) -> f64 {
    curve_fwd(t, 1.0).1
}

fn curve_o<D: Num>(t: D) -> D {
    let v = [t * t * t, t + t * t];
    let s = softmax_o(&v);
    v[0] * v[1] + s[0]
}

/// `Σ x_i²` at `f32`, through the generic helper.
#[autodiff_reverse(d_sum_sq32, Duplicated, Active)]
fn sum_sq32(x: &[f32]) -> f32 {
    squares(x).iter().sum()
}

/// One step of a recurrence, returning the new state.
#[differentiable]
fn step(h: &[f64], w: f64) -> Vec<f64> {
    let mut o = vec![0.0; h.len()];
    for i in 0..h.len() {
        o[i] = (w * h[i] + h[(i + 1) % h.len()] * 0.5).tanh();
    }
    o
}

/// A rotation by `a`, as an array.
#[differentiable]
fn rot(a: f64, p: &[f64; 2]) -> [f64; 2] {
    [
        a.cos() * p[0] - a.sin() * p[1],
        a.sin() * p[0] + a.cos() * p[1],
    ]
}

/// Vector results in loops and branches, and assigned to an existing vector or array
/// (`h = step(&h, w)`, `p = rot(a, &p)`).
#[autodiff_forward(recurrent_fwd, Dual, Dual)]
#[autodiff_reverse(recurrent_rev, Duplicated, Active)]
fn recurrent(x: &[f64]) -> f64 {
    let w = x[0];
    let mut h = x[1..].to_vec();
    let mut s = 0.0;
    for k in 0..3 {
        h = step(&h, w);
        let g = step(&h, 0.5);
        s += g[0] * h[1];
        if k == 1 {
            s += step(&g, w)[1];
        }
    }
    let mut p = [x[1], x[2]];
    for _ in 0..2 {
        p = rot(w, &p);
    }
    let q = rot(0.25, &p);
    p = q;
    s + h[0] + p[0] * p[1]
}

/// The same recurrence started from a call's vector (`let mut h = step(..)`), assigned
/// again from calls that read it, from a vector built in the function and from an
/// iterator chain, and read in place and by index.
#[autodiff_forward(started_fwd, Dual, Dual)]
#[autodiff_reverse(started_rev, Duplicated, Active)]
fn started(x: &[f64]) -> f64 {
    let w = x[0];
    let mut h = step(&x[1..], w);
    for _ in 0..2 {
        h = step(&h, 0.75);
    }
    let g: Vec<f64> = h.iter().map(|v| v * w).collect();
    let before = h[0];
    h = g;
    h = h.iter().map(|v| v.sin()).collect();
    before * h[1] + h[0]
}

fn started_o<D: Num>(x: &[D]) -> D {
    let w = x[0];
    let mut h = step_o(&x[1..], w);
    for _ in 0..2 {
        h = step_o(&h, c(0.75));
    }
    let before = h[0];
    let h: Vec<D> = h.iter().map(|v| (*v * w).sin()).collect();
    before * h[1] + h[0]
}

/// A call's vector assigned again from calls and then only iterated, never indexed:
/// `let mut h = step(..); h = step(&h, ..);`, then `h.iter()`.
#[autodiff_forward(iterated_fwd, Dual, Dual)]
#[autodiff_reverse(iterated_rev, Duplicated, Active)]
fn iterated(x: &[f64]) -> f64 {
    let mut h = step(&x[1..], x[0]);
    h = step(&h, x[1]);
    for _ in 0..2 {
        h = step(&h, 0.5);
    }
    h.iter().map(|v| v * v).sum()
}

fn iterated_o<D: Num>(x: &[D]) -> D {
    let mut h = step_o(&x[1..], x[0]);
    h = step_o(&h, x[1]);
    for _ in 0..2 {
        h = step_o(&h, c(0.5));
    }
    h.iter().fold(c(0.0), |a, v| a + *v * *v)
}

/// Products of neighbours: one element fewer.
#[differentiable]
fn neighbour_products(x: &[f64]) -> Vec<f64> {
    let mut o = Vec::new();
    for i in 0..x.len() - 1 {
        o.push(x[i] * x[i + 1]);
    }
    o
}

/// A call's vector assigned again from calls that shorten it, then only iterated.
#[autodiff_reverse(shortened_rev, Duplicated, Active)]
fn shortened(x: &[f64]) -> f64 {
    let mut h = neighbour_products(x);
    h = neighbour_products(&h);
    h.iter().map(|v| v * v).sum()
}

fn shortened_o<D: Num>(x: &[D]) -> D {
    let products = |v: &[D]| -> Vec<D> { v.windows(2).map(|w| w[0] * w[1]).collect() };
    let h = products(&products(x));
    h.iter().fold(c(0.0), |a, v| a + *v * *v)
}

fn step_o<D: Num>(h: &[D], w: D) -> Vec<D> {
    (0..h.len())
        .map(|i| (w * h[i] + h[(i + 1) % h.len()] * 0.5).tanh())
        .collect()
}

fn rot_o<D: Num>(a: D, p: [D; 2]) -> [D; 2] {
    [
        a.cos() * p[0] - a.sin() * p[1],
        a.sin() * p[0] + a.cos() * p[1],
    ]
}

fn recurrent_o<D: Num>(x: &[D]) -> D {
    let w = x[0];
    let mut h = x[1..].to_vec();
    let mut s = D::zero();
    for k in 0..3 {
        h = step_o(&h, w);
        let g = step_o(&h, c(0.5));
        s += g[0] * h[1];
        if k == 1 {
            s += step_o(&g, w)[1];
        }
    }
    let mut p = [x[1], x[2]];
    for _ in 0..2 {
        p = rot_o(w, p);
    }
    let p = rot_o(c(0.25), p);
    s + h[0] + p[0] * p[1]
}

fn layer_of(p: &[f64], nx: usize, nh: usize) -> Layer {
    Layer {
        w: p[..nh * nx].to_vec(),
        b: p[nh * nx..nh * nx + nh].to_vec(),
    }
}

fn flat(gx: &[f64], gc: f64, gl: &Layer) -> Vec<f64> {
    let mut g = gx.to_vec();
    g.push(gc);
    g.extend(&gl.w);
    g.extend(&gl.b);
    g
}

const NX: usize = 3;
const NH: usize = 2;
const NP: usize = NX + 1 + NH * NX + NH;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn vectors_returned_by_helpers_in_both_modes_and_hvp(p in vecf(-1.0, 1.0, NP), dir in dirs(NP), seed in seed()) {
        let (x, c, layer) = (&p[..NX], p[NX], layer_of(&p[NX + 1..], NX, NH));
        let (value, grad) = oracle_grad(|d| loss_o(d, NX, NH), &p);
        check("primal", loss(x, c, &layer), value);

        let mut gx = [0.0; NX];
        let mut gl = layer_of(&[0.0; NH * NX + NH], NX, NH);
        let (f, gc) = d_loss(x, &mut gx, c, &layer, &mut gl, seed);
        check("value", f, value);
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient", &flat(&gx, gc, &gl), &want);

        let dl = layer_of(&dir[NX + 1..], NX, NH);
        let (fv, t) = j_loss(x, &dir[..NX], c, dir[NX], &layer, &dl);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut gx, mut hx) = ([0.0; NX], [0.0; NX]);
        let (mut gl, mut hl) = (layer_of(&[0.0; NH * NX + NH], NX, NH), layer_of(&[0.0; NH * NX + NH], NX, NH));
        let (gc, hc) = loss_hvp(x, &dir[..NX], &mut gx, &mut hx, c, dir[NX], &layer, &dl, &mut gl, &mut hl);
        check_all("gradient under H·v", &flat(&gx, gc, &gl), &grad);
        check_hvp(&flat(&hx, hc, &hl), &p, &dir, |d| loss_o(d, NX, NH));
    }

    #[test]
    fn vector_results_beside_constant_parameters(
        x in vecf(-1.5, 1.5, 3),
        c in float(-2.0, 2.0),
        w in vecf(-2.0, 2.0, 2),
        v in dirs(3),
    ) {
        let (want, g) = oracle_grad(|d| weighted_o(d, c, &w), &x);
        let (value, tangent) = weighted_fwd(&x, &v, c, &w);
        check("forward value", value, want);
        let along: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
        check("tangent", tangent, along);
        let mut dx = vec![0.0; 3];
        check("reverse value", weighted_rev(&x, &mut dx, c, &w, 1.0), want);
        check_all("gradient", &dx, &g);
    }

    #[test]
    fn vector_results_in_loops_and_assigned_again(x in vecf(-1.0, 1.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        check_slice("recurrent", (&x, &v, &s0, s), recurrent, recurrent_fwd, recurrent_rev, recurrent_o::<Dual64>);
        check_hvp_of::<recurrent_rev>(&x, &v, recurrent_o);
        check_slice("started", (&x, &v, &s0, s), started, started_fwd, started_rev, started_o::<Dual64>);
        check_hvp_of::<started_rev>(&x, &v, started_o);
        check_slice("iterated", (&x, &v, &s0, s), iterated, iterated_fwd, iterated_rev, iterated_o::<Dual64>);
        check_hvp_of::<iterated_rev>(&x, &v, iterated_o);
        let (want, grad) = oracle_grad(shortened_o, &x);
        let mut g = s0.clone();
        check("shortened", shortened_rev(&x, &mut g, s), want);
        let added: Vec<f64> = g.iter().zip(&s0).map(|(a, b)| a - b).collect();
        check_all("shortened gradient", &added, &grad.iter().map(|d| d * s).collect::<Vec<_>>());
        check_hvp_of::<shortened_rev>(&x, &v, shortened_o);
    }

    #[test]
    fn named_companions_of_a_function_returning_a_vector(x in vecf(-1.5, 1.5, 4), c in float(-1.5, 1.5), wbar in vecf(-1.0, 1.0, 4), dir in dirs(5)) {
        let mut inputs = x.clone();
        inputs.push(c);
        let oracle = |d: &[Dual64]| direct_o(&d[..4], d[4]);
        let (want_out, want_t) = oracle_jvp(oracle, &inputs, &dir);
        let (out, t) = j_direct(&x, &dir[..4], c, dir[4]);
        check_all("out", &out, &want_out);
        check_all("out tangent", &t, &want_t);

        // The seed is the vector's adjoint, as a slice.
        let want = oracle_vjp(oracle, &inputs, &wbar);
        let mut gx = [0.0; 4];
        let (out, gc) = d_direct(&x, &mut gx, c, &wbar);
        check_all("out (reverse)", &out, &want_out);
        let mut got = gx.to_vec();
        got.push(gc);
        check_all("vjp", &got, &want);
    }

    #[test]
    fn forward_companion_of_a_vector_result_with_a_constant_slice(
        p in vecf(-1.0, 1.0, 2),
        v in dirs(2),
        t in vecf(-1.5, 1.5, 3),
        s in seed(),
    ) {
        let (want_r, want_jv) = oracle_jvp(|d| residuals_o(d, &t), &p, &v);
        let (r, jv) = residuals_fwd(&p, &v, &t);
        check_all("residuals", &r, &want_r);
        check_all("J·v", &jv, &want_jv);
        // ∂/∂p_k of ⟨r, J v⟩: with ε₁ along e_k and ε₂ along v, Σ r'ₖ (Jv) + r ∂ₖ(Jv).
        let want: Vec<f64> = (0..2)
            .map(|k| {
                let d: Vec<num_dual::HyperDual64> = (0..2)
                    .map(|j| num_dual::HyperDual64::new(p[j], f64::from(u8::from(j == k)), v[j], 0.0))
                    .collect();
                residuals_o(&d, &t).iter().map(|r| r.eps1 * r.eps2 + r.re * r.eps1eps2).sum::<f64>() * s
            })
            .collect();
        let mut g = [0.0; 2];
        let value = fit_curvature_rev(&p, &mut g, &v, &t, s);
        check("⟨r, J v⟩", value, want_r.iter().zip(&want_jv).map(|(a, b)| a * b).sum());
        check_all("gradient of ⟨r, J v⟩", &g, &want);
    }

    #[test]
    fn second_derivatives_through_vector_results(t in float(-1.2, 1.2)) {
        let d2 = num_dual::second_derivative(curve_o, t).2;
        check("primal", curve(t), curve_o(num_dual::Dual64::from(t)).re);
        check("forward over forward", curve_fwd2(t, 1.0).1, d2);
        check("reverse over forward", curve_rev2(t, 1.0).1, d2);
    }

    #[test]
    fn a_generic_helper_at_f32(x in prop::collection::vec(-2.0f32..2.0, 1..6)) {
        let mut g = vec![0.0f32; x.len()];
        let f = d_sum_sq32(&x, &mut g, 1.0);
        let want: f32 = x.iter().map(|v| v * v).sum();
        prop_assert!((f - want).abs() <= 1e-5 * (1.0 + want.abs()));
        for i in 0..x.len() {
            prop_assert!((g[i] - 2.0 * x[i]).abs() <= 1e-5 * (1.0 + x[i].abs()));
        }
    }
}

/// One step of a recurrence whose input `x` is a constant of the caller.
#[differentiable]
fn recur_cell(u: &[f64], h: &[f64], x: &[f64]) -> Vec<f64> {
    vec![u[0] * h[0] + x[0], u[1] * h[1] - x[1] * h[0]]
}

/// The recurrence run over a constant input, its state assigned the cell's vector in
/// each step.
#[autodiff_forward(recur_fwd, Dual, Const, Dual)]
#[autodiff_reverse(recur_rev, Duplicated, Const, Active)]
fn recur(u: &[f64], x: &[f64]) -> f64 {
    let mut h = vec![1.0, 0.5];
    for _ in 0..3 {
        h = recur_cell(u, &h, x);
    }
    h[0] + h[1]
}

fn recur_o<D: Num>(u: &[D], x: &[f64]) -> D {
    let mut h = [c::<D>(1.0), c::<D>(0.5)];
    for _ in 0..3 {
        h = [u[0] * h[0] + x[0], u[1] * h[1] - h[0] * x[1]];
    }
    h[0] + h[1]
}

#[test]
fn a_vector_call_with_a_constant_argument_assigned_in_a_loop() {
    let (u, x, v) = ([0.8, -0.6], [0.3, 1.1], [0.4, -1.3]);
    let (want_f, want_g) = oracle_grad(|d| recur_o(d, &x), &u);
    let mut g = [0.0; 2];
    check("value", recur_rev(&u, &mut g, &x, 1.0), want_f);
    check_all("gradient", &g, &want_g);
    let (f, t) = recur_fwd(&u, &v, &x);
    check("value (forward)", f, want_f);
    check("tangent", t, want_g[0] * v[0] + want_g[1] * v[1]);
}

/// A vector a call returned, written through `iter_mut` and `fill`-free element loops
/// (an activation applied in place), then passed on.
#[autodiff_forward(activated_fwd, Dual, Dual)]
#[autodiff_reverse(activated_rev, Duplicated, Active)]
fn activated(x: &[f64]) -> f64 {
    let mut h = scaled(x, 0.5);
    for v in h.iter_mut() {
        *v = v.tanh();
    }
    for (k, v) in h.iter_mut().enumerate() {
        *v *= 1.0 + k as f64;
    }
    let s = softmax(&h);
    s[0] * x[0] + s.iter().map(|v| v * v).sum::<f64>()
}

fn activated_o<D: Num>(x: &[D]) -> D {
    let h: Vec<D> = (x.iter().enumerate())
        .map(|(k, v)| (*v * 0.5).tanh() * (1.0 + k as f64))
        .collect();
    let s = softmax_o(&h);
    s[0] * x[0] + s.iter().fold(D::zero(), |a, v| a + *v * *v)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_returned_vector_written_through_iter_mut(case in slice_seed_case(-1.5, 1.5, 1..6)) {
        let (x, v, s0, s) = case;
        check_slice("activated", (&x, &v, &s0, s), activated, activated_fwd, activated_rev, activated_o::<Dual64>);
        check_hvp_of::<activated_rev>(&x, &v, activated_o);
    }
}

/// `tanh(W x + b)` of a flat `W`.
#[differentiable]
fn dense(w: &[f64], b: &[f64], x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut out = vec![0.0; b.len()];
    for o in 0..b.len() {
        let mut s = b[o];
        for i in 0..n {
            s += w[o * n + i] * x[i];
        }
        out[o] = s.tanh();
    }
    out
}

fn dense_o<D: Num>(w: &[D], b: &[D], x: &[D]) -> Vec<D> {
    (0..b.len())
        .map(|o| {
            (0..x.len())
                .fold(b[o], |s, i| s + w[o * x.len() + i] * x[i])
                .tanh()
        })
        .collect()
}

/// Parameters split, and a half split again, before the parts go to calls that return
/// vectors.
#[autodiff_forward(split_layers_fwd, Dual, Dual)]
#[autodiff_reverse(split_layers_rev, Duplicated, Active)]
fn split_layers(p: &[f64]) -> f64 {
    let (w1, rest) = p.split_at(4);
    let (b1, rest) = rest.split_at(2);
    let (w2, b2) = rest.split_at(2);
    let h = dense(w1, b1, &[0.5, -1.0]);
    let o = dense(w2, b2, &h);
    o[0] * o[0]
}

fn split_layers_o<D: Num>(p: &[D]) -> D {
    let x = [D::from(0.5), D::from(-1.0)];
    let h = dense_o(&p[0..4], &p[4..6], &x);
    let o = dense_o(&p[6..8], &p[8..9], &h);
    o[0] * o[0]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn parameters_split_twice_for_calls(case in slice_seed_case(-1.5, 1.5, 9..10)) {
        let (x, v, s0, s) = case;
        check_slice("split_layers", (&x, &v, &s0, s), split_layers, split_layers_fwd, split_layers_rev, split_layers_o::<Dual64>);
        check_hvp_of::<split_layers_rev>(&x, &v, split_layers_o);
    }
}

/// Vectors pushed whole as the rows of a vector of vectors (`hs.push(next)`, rows of
/// different lengths, each a copy of the vector pushed), then read by index, by rows
/// iterated, and through `last()`.
#[autodiff_forward(pushed_rows_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_rows_rev, Duplicated, Active)]
fn pushed_rows(x: &[f64]) -> f64 {
    let n = x.len();
    let mut hs: Vec<Vec<f64>> = Vec::new();
    let h0 = x.to_vec();
    hs.push(h0);
    for l in 0..3 {
        let mut next = vec![0.0; n - l - 1];
        for i in 0..n - l - 1 {
            next[i] = (hs[l][i] * hs[l][i + 1]).sin() + hs[l][i];
        }
        hs.push(next);
    }
    let mut s = 0.0;
    for h in hs.iter() {
        s += h.iter().map(|v| v * v).sum::<f64>();
    }
    s + hs[3][0] * hs.last().unwrap()[0]
}

fn pushed_rows_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut hs = vec![x.to_vec()];
    for l in 0..3 {
        let next: Vec<D> = (0..n - l - 1)
            .map(|i| (hs[l][i] * hs[l][i + 1]).sin() + hs[l][i])
            .collect();
        hs.push(next);
    }
    let s = hs.iter().flatten().fold(D::from(0.0), |s, v| s + *v * *v);
    s + hs[3][0] * hs[3][0]
}

/// Vectors collected into a vector of vectors, named by the `let`'s type or a turbofish:
/// copies of parts (`c.to_vec()`), the vectors a call returns for each part, and inner
/// `collect`s; then zipped by rows.
#[autodiff_forward(collected_rows_fwd, Dual, Dual)]
#[autodiff_reverse(collected_rows_rev, Duplicated, Active)]
fn collected_rows(x: &[f64]) -> f64 {
    let parts: Vec<Vec<f64>> = x.chunks(2).map(|c| c.to_vec()).collect();
    let outs = parts
        .iter()
        .map(|r| dense(&x[..4], &x[4..6], r))
        .collect::<Vec<Vec<f64>>>();
    let squares: Vec<Vec<f64>> = (0..parts.len())
        .map(|i| parts[i].iter().map(|v| v * v).collect())
        .collect();
    let mut s = 0.0;
    for (o, q) in outs.iter().zip(squares.iter()) {
        s += o.iter().sum::<f64>() * q[0];
    }
    s
}

fn collected_rows_o<D: Num>(x: &[D]) -> D {
    x.chunks(2).fold(D::from(0.0), |s, r| {
        let o = dense_o(&x[..4], &x[4..6], r);
        s + o.iter().fold(D::from(0.0), |a, v| a + *v) * r[0] * r[0]
    })
}

/// The vectors a call returns pushed onto a vector of vectors named so by its type
/// (`hs.push(h)`, `hs.push(dense(..))`, `hs.push(x[..2].to_vec())`), read by index
/// and summed by rows into a vector collected with a turbofish.
#[autodiff_forward(layer_stack_fwd, Dual, Dual)]
#[autodiff_reverse(layer_stack_rev, Duplicated, Active)]
fn layer_stack(x: &[f64]) -> f64 {
    let mut hs: Vec<Vec<f64>> = Vec::new();
    hs.push(x[..2].to_vec());
    for l in 0..3 {
        let h = dense(&x[..4], &x[4..6], &hs[l]);
        hs.push(h);
    }
    hs.push(dense(&x[2..6], &x[..2], &hs[3]));
    let sums = (0..hs.len())
        .map(|i| hs[i].iter().sum::<f64>())
        .collect::<Vec<f64>>();
    sums.iter().sum::<f64>() + hs[4][1] * hs[1][0]
}

fn layer_stack_o<D: Num>(x: &[D]) -> D {
    let mut hs = vec![x[..2].to_vec()];
    for l in 0..3 {
        let h = dense_o(&x[..4], &x[4..6], &hs[l]);
        hs.push(h);
    }
    let last = dense_o(&x[2..6], &x[..2], &hs[3]);
    hs.push(last);
    let s = hs.iter().flatten().fold(D::from(0.0), |s, v| s + *v);
    s + hs[4][1] * hs[1][0]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn vectors_pushed_and_collected_as_rows(case in slice_seed_case(-1.5, 1.5, 6..7)) {
        let (x, v, s0, s) = case;
        check_slice("pushed_rows", (&x, &v, &s0, s), pushed_rows, pushed_rows_fwd, pushed_rows_rev, pushed_rows_o::<Dual64>);
        check_hvp_of::<pushed_rows_rev>(&x, &v, pushed_rows_o);
        check_slice("collected_rows", (&x, &v, &s0, s), collected_rows, collected_rows_fwd, collected_rows_rev, collected_rows_o::<Dual64>);
        check_hvp_of::<collected_rows_rev>(&x, &v, collected_rows_o);
        check_slice("layer_stack", (&x, &v, &s0, s), layer_stack, layer_stack_fwd, layer_stack_rev, layer_stack_o::<Dual64>);
        check_hvp_of::<layer_stack_rev>(&x, &v, layer_stack_o);
    }
}
