//! Structs and calls in the supported language, in both modes, at random points, against a
//! num-dual oracle: field access on struct parameters (nested structs, tuple fields), a
//! model with a `#[differentiable]` method and a loss over it, companions of `&self` and
//! `&mut self` methods, calls to `#[differentiable]` functions by name, through `use` and
//! through `crate::`/`super::` paths, recursion, plain helpers called with constants,
//! buffers lent to a call with an argument that reads them (`shrink(u, u.len() / 2)`), and
//! float arrays passed by value to helpers that take them so (`fn rhs(s: [f64; 2], ..)`).

// Index loops are constructs under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

// ---------------------------------------------------------------- struct parameters

#[derive(Clone, Debug, PartialEq)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(Clone, Debug, PartialEq)]
struct Params {
    w: f64,
    p: Point,
    t: (f64, f64),
    v: Vec<f64>,
}

/// `Params` from `[w, p.x, p.y, t.0, t.1, v..]`.
fn params(flat: &[f64]) -> Params {
    Params {
        w: flat[0],
        p: Point {
            x: flat[1],
            y: flat[2],
        },
        t: (flat[3], flat[4]),
        v: flat[5..].to_vec(),
    }
}

fn flat_params(p: &Params) -> Vec<f64> {
    let mut out = vec![p.w, p.p.x, p.p.y, p.t.0, p.t.1];
    out.extend(&p.v);
    out
}

#[differentiable]
fn weight_sum(p: &Params) -> f64 {
    p.w * p.t.0 + p.p.y
}

#[autodiff_forward(fields_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(fields_rev, Duplicated, Duplicated, Active)]
fn fields(p: &Params, x: &[f64]) -> f64 {
    let mut s = p.w * p.p.x;
    for i in 0..p.v.len() {
        s += p.v[i] * x[i % x.len()];
    }
    // Copies of a `Vec` field, read, and written.
    let vv = p.v.clone();
    let mut w = p.v.to_vec();
    w[0] *= p.w;
    s += vv[0] * x[0] + w[0];
    // A tuple field destructured.
    let (t0, t1) = p.t;
    s += t0 * t1.sin() + p.p.y * p.w;
    s * p.p.x + p.p.y.exp() + weight_sum(p) * s
}

/// The oracle of `fields`, with `p` flattened.
fn fields_o<D: Num>(p: &[D], x: &[D]) -> D {
    let (w, px, py, t0, t1, v) = (p[0], p[1], p[2], p[3], p[4], &p[5..]);
    let mut s = w * px;
    for i in 0..v.len() {
        s += v[i] * x[i % x.len()];
    }
    s += v[0] * x[0] + v[0] * w;
    s += t0 * t1.sin() + py * w;
    s * px + py.exp() + (w * t0 + py) * s
}

/// A `&mut` struct parameter written in place.
#[autodiff_forward(update_fwd, Dual, Dual)]
#[autodiff_reverse(update_rev, Duplicated, Duplicated)]
fn update(p: &mut Params, x: &[f64]) {
    for i in 0..p.v.len() {
        p.v[i] += p.w * x[i];
    }
    p.w = p.p.x * p.t.0;
    p.t.1 *= p.w;
    p.p.y -= p.v[0];
}

fn update_o<D: Num>(p: &mut [D], x: &[D]) -> D {
    for i in 5..p.len() {
        let w = p[0];
        p[i] += w * x[i - 5];
    }
    p[0] = p[1] * p[3];
    let w = p[0];
    p[4] *= w;
    let v0 = p[5];
    p[2] -= v0;
    c(0.0)
}

// ---------------------------------------------------------------- a model

#[derive(Clone, Debug, PartialEq)]
struct Model {
    w: Vec<f64>,
    b: f64,
}

fn model(flat: &[f64]) -> Model {
    Model {
        w: flat[1..].to_vec(),
        b: flat[0],
    }
}

fn flat_model(m: &Model) -> Vec<f64> {
    let mut out = vec![m.b];
    out.extend(&m.w);
    out
}

impl Model {
    #[differentiable]
    fn predict(&self, x: &[f64]) -> f64 {
        let mut s = self.b;
        for i in 0..self.w.len() {
            s += self.w[i] * x[i];
        }
        s.tanh()
    }

    /// Companions of a `&self` method, the argument active or constant.
    #[autodiff_forward(energy_fwd, Dual, Dual, Dual)]
    #[autodiff_reverse(energy_rev, Duplicated, Duplicated, Active)]
    #[autodiff_forward(energy_dm, Dual, Const, Dual)]
    #[autodiff_reverse(energy_bm, Duplicated, Const, Active)]
    fn energy(&self, x: &[f64]) -> f64 {
        let p = self.predict(x);
        p * p + self.b * x[0]
    }

    /// A companion of a `&mut self` method.
    #[autodiff_forward(step_fwd, Dual, Dual)]
    #[autodiff_reverse(step_rev, Duplicated, Duplicated)]
    fn step(&mut self, x: &[f64]) {
        let p = self.predict(x);
        for i in 0..self.w.len() {
            self.w[i] -= 0.1 * p * x[i] * self.w[i];
        }
        self.b *= x[0] + p;
    }
}

fn predict_o<D: Num>(m: &[D], x: &[D]) -> D {
    let mut s = m[0];
    for i in 1..m.len() {
        s += m[i] * x[i - 1];
    }
    s.tanh()
}

fn energy_o<D: Num>(m: &[D], x: &[D]) -> D {
    let p = predict_o(m, x);
    p * p + m[0] * x[0]
}

fn step_o<D: Num>(m: &mut [D], x: &[D]) -> D {
    let p = predict_o(m, x);
    for i in 1..m.len() {
        let w = m[i];
        m[i] -= p * 0.1 * x[i - 1] * w;
    }
    m[0] *= x[0] + p;
    c(0.0)
}

/// Mean squared error of the model over `ys.len()` samples (rows of `xs`).
#[autodiff_forward(loss_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(loss_rev, Duplicated, Const, Const, Active)]
fn loss(m: &Model, xs: &[f64], ys: &[f64]) -> f64 {
    let d = m.w.len();
    let mut l = 0.0;
    for k in 0..ys.len() {
        let r = m.predict(&xs[k * d..(k + 1) * d]) - ys[k];
        l += r * r;
    }
    l / ys.len() as f64
}

fn loss_o<D: Num>(m: &[D], xs: &[f64], ys: &[f64]) -> D {
    let d = m.len() - 1;
    let mut l = c::<D>(0.0);
    for k in 0..ys.len() {
        let x: Vec<D> = xs[k * d..(k + 1) * d].iter().map(|v| c(*v)).collect();
        let r = predict_o(m, &x) - ys[k];
        l += r * r;
    }
    l / ys.len() as f64
}

// ---------------------------------------------------------------- calls by path

/// Not differentiable, called with constants only.
fn scale(n: usize) -> f64 {
    0.5 * n as f64 + 1.0
}

#[differentiable]
fn sq(x: f64) -> f64 {
    x * x
}

/// Returns a tuple.
#[differentiable]
fn polar(r: f64, a: f64) -> (f64, f64) {
    (r * a.cos(), r * a.sin())
}

/// Writes a `&mut [f64]` output.
#[differentiable]
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for i in 0..y.len() {
        y[i] += a * x[i];
    }
}

/// A function with a named companion is callable too.
#[autodiff_reverse(dot_rev, Duplicated, Duplicated, Active)]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * y[i];
    }
    s
}

mod geometry {
    use autodiff_core::prelude::*;

    #[differentiable]
    pub fn norm2(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for v in x {
            s += v * v;
        }
        s
    }

    pub mod inner {
        use autodiff_core::prelude::*;

        #[differentiable]
        pub fn weighted(x: &[f64], w: f64) -> f64 {
            super::norm2(x) * w + crate::sq(w)
        }
    }
}

use geometry::inner::weighted;

#[autodiff_forward(calls_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(calls_rev, Duplicated, Active, Active)]
fn calls(x: &[f64], t: f64) -> f64 {
    let a = sq(t); // same module
    let b = weighted(x, t); // through `use`
    let c = geometry::norm2(&x[1..]); // by path, with a sub-slice
    let d = crate::sq(a) + self::sq(c);
    let (u, v) = polar(b, x[0]); // a tuple result
    let e = scale(3) * t + scale(x.len()); // a plain helper with constants
    let mut y = vec![0.0; x.len()];
    axpy(t, x, &mut y);
    let xv = x.to_vec();
    axpy(u, &xv, &mut y); // a local `Vec` as a slice argument
    axpy(a, &x[1..], &mut y[1..]); // sub-slices, one of them `&mut`
    let f = dot(&y, x);
    let g = sq(2.0) * t; // a differentiable function with a constant argument
    a + b * c + d * 0.1 + u * v + e + f + g
}

fn calls_o<D: Num>(x: &[D], t: D) -> D {
    let norm2 = |x: &[D]| x.iter().fold(c::<D>(0.0), |s, v| s + *v * *v);
    let a = t * t;
    let b = norm2(x) * t + t * t;
    let cc = norm2(&x[1..]);
    let d = a * a + cc * cc;
    let (u, v) = (b * x[0].cos(), b * x[0].sin());
    let e = t * 2.5 + (0.5 * x.len() as f64 + 1.0);
    let mut f = c::<D>(0.0);
    for (i, xi) in x.iter().enumerate() {
        let mut yi = t * *xi + u * *xi;
        if i > 0 {
            yi += a * *xi;
        }
        f += yi * *xi;
    }
    a + b * cc + d * 0.1 + u * v + e + f + t * 4.0
}

/// A function returning a tuple: its tangent is a tuple, its seed too.
#[autodiff_forward(polar2_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(polar2_rev, Active, Active, Active)]
fn polar2(r: f64, a: f64) -> (f64, f64) {
    let (u, v) = polar(r, a);
    (u * v, sq(u) - v)
}

/// A generic differentiable function called from a generic one.
#[differentiable]
fn bump<T: num_traits::Float>(x: T) -> T {
    x.sin() * x
}

#[autodiff_forward(generic_calls_fwd, Dual, Dual)]
#[autodiff_reverse(generic_calls_rev, Active, Active)]
fn generic_calls<T: num_traits::Float>(x: T) -> T {
    bump(x) * x + bump::<T>(x * x)
}

// ---------------------------------------------------------------- recursion

#[differentiable]
fn pow_rec(x: f64, n: u32) -> f64 {
    if n == 0 { 1.0 } else { x * pow_rec(x, n - 1) }
}

#[differentiable]
fn even_f(x: f64, n: u32) -> f64 {
    if n == 0 {
        x
    } else {
        odd_f(x.sin(), n - 1) * 1.1
    }
}

#[differentiable]
fn odd_f(x: f64, n: u32) -> f64 {
    if n == 0 {
        x * x
    } else {
        even_f(x + 0.5, n - 1)
    }
}

#[differentiable]
fn sum_rec(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x[0] * x[0].cos() + 0.5 * sum_rec(&x[1..])
    }
}

#[autodiff_forward(recursion_fwd, Dual, Dual, Const, Dual)]
#[autodiff_reverse(recursion_rev, Duplicated, Active, Const, Active)]
fn recursion(x: &[f64], t: f64, n: u32) -> f64 {
    pow_rec(t, n) + even_f(t, n) + sum_rec(x) * t
}

fn recursion_o<D: Num>(x: &[D], t: D, n: u32) -> D {
    fn even<D: Num>(x: D, n: u32) -> D {
        if n == 0 { x } else { odd(x.sin(), n - 1) * 1.1 }
    }
    fn odd<D: Num>(x: D, n: u32) -> D {
        if n == 0 { x * x } else { even(x + 0.5, n - 1) }
    }
    let mut s = c::<D>(0.0);
    for xi in x.iter().rev() {
        s = *xi * xi.cos() + s * 0.5;
    }
    t.powi(n as i32) + even(t, n) + s * t
}

// ---------------------------------------------------------------- `&mut f64`

/// A scalar behind `&mut`: read, updated in place and overwritten through `*k`.
#[differentiable]
fn accumulate(k: &mut f64, b: f64) {
    *k += b * b;
    let t = *k;
    *k = t * b.sin();
}

/// A local scalar lent mutably to a callee, twice, then read.
#[autodiff_forward(lend_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(lend_rev, Active, Active, Active)]
fn lend(x: f64, y: f64) -> f64 {
    let mut s = x * y;
    accumulate(&mut s, x);
    accumulate(&mut s, y + 0.5);
    s * x
}

fn lend_o<D: Num>(x: D, y: D) -> D {
    let acc = |k: D, b: D| (k + b * b) * b.sin();
    let s = acc(acc(x * y, x), y + 0.5);
    s * x
}

/// A `&f64` parameter read through `*`, by float methods (`a.sin()`, auto-deref) and by
/// operators (`a * b`, `s += a`: `&f64` implements them), and a `&mut f64` one written
/// through it.
// Written out: the read of `*out` on the right is under test.
#[allow(clippy::assign_op_pattern)]
#[autodiff_forward(through_refs_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(through_refs_rev, Duplicated, Duplicated, Active, Active)]
fn through_refs(out: &mut f64, a: &f64, b: f64) -> f64 {
    let t = *a * b;
    *out = t.exp() + *out * out.cos();
    let mut s = a * 0.5 - 0.25 * a;
    s += a;
    t * *a + a.sin() + s * b - s / 2.0
}

// ---------------------------------------------------------------- rows written by a callee

#[differentiable]
fn embed(x: f64, out: &mut [f64]) {
    out[0] = x.sin();
    out[1] = x * x;
}

/// A callee writes each row of a local matrix (`&mut hs[i]`).
#[autodiff_forward(rows_by_callee_fwd, Dual, Dual)]
#[autodiff_reverse(rows_by_callee_rev, Duplicated, Active)]
fn rows_by_callee(x: &[f64]) -> f64 {
    let mut hs = vec![vec![0.0; 2]; x.len()];
    for i in 0..x.len() {
        embed(x[i], &mut hs[i]);
    }
    let mut s = 0.0;
    for i in 0..x.len() {
        s += hs[i][0] * hs[(i + 1) % x.len()][1];
    }
    s
}

fn rows_by_callee_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        let j = (i + 1) % n;
        s += x[i].sin() * x[j] * x[j];
    }
    s
}

/// Returns three values computed from a slice.
#[differentiable]
fn moments(x: &[f64], c: f64) -> (f64, f64, f64) {
    let mut s1 = 0.0;
    let mut s2 = 0.0;
    for v in x {
        s1 += v - c;
        s2 += (v - c) * (v - c);
    }
    (s1, s2, s1 * s2.sqrt())
}

/// Calls helpers that return tuples, in a loop and after it.
#[autodiff_forward(tuple_helpers_fwd, Dual, Dual)]
#[autodiff_reverse(tuple_helpers_rev, Duplicated, Active)]
fn tuple_helpers(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let (u, v) = polar(x[i], x[(i + 1) % x.len()]);
        s += u * v + sq(u);
    }
    let (m1, m2, m3) = moments(x, s.tanh());
    s + m1 * m2 + m3
}

fn tuple_helpers_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        let (r, a) = (x[i], x[(i + 1) % n]);
        let (u, v) = (r * a.cos(), r * a.sin());
        s += u * v + u * u;
    }
    let cc = s.tanh();
    let (mut s1, mut s2) = (c::<D>(0.0), c::<D>(0.0));
    for v in x {
        s1 += *v - cc;
        s2 += (*v - cc) * (*v - cc);
    }
    s + s1 * s2 + s1 * s2.sqrt()
}

// ---------------------------------------------------------------- properties

// ---------------------------------------------------------------- element references as arguments

#[differentiable]
fn row_dot(w: &[f64], x: &[f64]) -> f64 {
    w.iter().zip(x).map(|(a, b)| a * b).sum()
}

#[differentiable]
fn sq_ref(v: &f64) -> f64 {
    *v * *v
}

/// The rows of `for x in xs.iter()` and the elements of `|v| ..` are references: passed on
/// as they are, to a slice parameter and to a `&f64` one.
#[autodiff_forward(row_loss_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(row_loss_rev, Duplicated, Duplicated, Active)]
#[allow(clippy::ptr_arg, clippy::redundant_closure)]
fn row_loss(w: &[f64], xs: &Vec<Vec<f64>>) -> f64 {
    let mut l = 0.0;
    for x in xs.iter() {
        l += row_dot(w, x).tanh();
    }
    l + w.iter().map(|v| sq_ref(v)).sum::<f64>()
}

/// `&s` of a local float and `&x[i]` of an element, passed to a `&f64` parameter.
#[autodiff_forward(local_refs_fwd, Dual, Dual)]
#[autodiff_reverse(local_refs_rev, Duplicated, Active)]
fn local_refs(x: &[f64]) -> f64 {
    let s = x[0] * x[x.len() - 1] + 0.5;
    sq_ref(&s) * sq_ref(&x[0]) - sq_ref(&(s * 2.0))
}

fn local_refs_o<D: Num>(x: &[D]) -> D {
    let s = x[0] * x[x.len() - 1] + 0.5;
    s * s * x[0] * x[0] - s * s * 4.0
}

fn row_loss_o<D: Num>(a: &[D]) -> D {
    let (w, xs) = a.split_at(2);
    let mut l = c::<D>(0.0);
    for x in xs.chunks(2) {
        l += (w[0] * x[0] + w[1] * x[1]).tanh();
    }
    l + w[0] * w[0] + w[1] * w[1]
}

/// A batch of samples (`&[Vec<f64>]`) that stays constant, passed to a helper that
/// differentiates it: the helper gets a zero shadow for it.
#[differentiable]
fn batch_score(w: &[f64], xs: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for x in xs {
        s += (w[0] * x[0] + w[1] * x[1]).tanh();
    }
    s
}

#[autodiff_forward(batch_loss_fwd, Dual, Const, Dual)]
#[autodiff_reverse(batch_loss_rev, Duplicated, Const, Active)]
fn batch_loss(w: &[f64], xs: &[Vec<f64>]) -> f64 {
    batch_score(w, xs) + w[0] * w[1]
}

/// Its gradient, whose forward companion is the H·v with the batch constant.
#[autodiff_forward(batch_loss_hvp, Dual, Const, Dual)]
fn batch_loss_grad(w: &[f64], xs: &[Vec<f64>], g: &mut [f64]) {
    g.fill(0.0);
    batch_loss_rev(w, g, xs, 1.0);
}

fn batch_loss_o<D: Num>(w: &[D], xs: &[Vec<f64>]) -> D {
    let mut s = w[0] * w[1];
    for x in xs {
        s += (w[0] * x[0] + w[1] * x[1]).tanh();
    }
    s
}

/// Overwrites `out` from `x` and `c` (the caller's old contents are lost).
#[differentiable]
fn centre(x: &[f64], c: f64, out: &mut [f64]) {
    for i in 0..out.len() {
        out[i] = (x[i] - c) * x[i];
    }
}

/// A local vector and a local array, overwritten by a call in every iteration and read
/// after it: the reverse sweep puts back each iteration's contents from saved copies
/// (kept inline up to eight values, on the heap beyond).
#[autodiff_forward(reused_by_calls_fwd, Dual, Dual)]
#[autodiff_reverse(reused_by_calls_rev, Duplicated, Active)]
fn reused_by_calls(x: &[f64]) -> f64 {
    let n = x.len();
    let mut buf = vec![0.0; n];
    let mut arr = [0.0; 3];
    let mut s = 0.0;
    for k in 0..3 {
        let c = x[k % n] * 0.5 + k as f64;
        centre(x, c, &mut buf);
        centre(&buf[..3.min(n)], c, &mut arr[..3.min(n)]);
        for i in 0..n {
            s += buf[i] * buf[i] * (i as f64 + 1.0);
        }
        s += arr[0] * arr[0] + arr[1];
    }
    s
}

fn reused_by_calls_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let centre = |x: &[D], c: D, out: &mut [D]| {
        for i in 0..out.len() {
            out[i] = (x[i] - c) * x[i];
        }
    };
    let mut buf = vec![D::zero(); n];
    let mut arr = [D::zero(); 3];
    let mut s = D::zero();
    for k in 0..3 {
        let c = x[k % n] * 0.5 + D::from(k as f64);
        centre(x, c, &mut buf);
        let m = 3.min(n);
        centre(&buf[..m], c, &mut arr[..m]);
        for i in 0..n {
            s += buf[i] * buf[i] * D::from(i as f64 + 1.0);
        }
        s += arr[0] * arr[0] + arr[1];
    }
    s
}

/// ADBench's C++ names its helpers `Qtimesx`: a function whose name starts with a capital
/// letter. Called as a statement, with references, or in arithmetic, it is a function,
/// not a tuple struct.
#[allow(non_snake_case)]
#[differentiable]
fn Qtimesx(q: &[f64], x: &[f64], out: &mut [f64]) {
    for i in 0..out.len() {
        out[i] = q[i] * x[i] + x[(i + 1) % x.len()];
    }
}

#[allow(non_snake_case)]
#[differentiable]
fn Sq(a: f64) -> f64 {
    a * a
}

#[autodiff_forward(capitalised_fwd, Dual, Dual)]
#[autodiff_reverse(capitalised_rev, Duplicated, Active)]
fn capitalised(x: &[f64]) -> f64 {
    let mut out = vec![0.0; x.len()];
    Qtimesx(x, &x[0..], &mut out);
    let mut s = Sq(out[0]) - Sq(x[0]) * 0.5;
    for i in 0..x.len() {
        s += -Sq(out[i] - x[i]);
    }
    s
}

fn capitalised_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let out: Vec<D> = (0..n).map(|i| x[i] * x[i] + x[(i + 1) % n]).collect();
    let mut s = out[0] * out[0] - x[0] * x[0] * 0.5;
    for i in 0..n {
        s -= (out[i] - x[i]) * (out[i] - x[i]);
    }
    s
}

/// One step of an LSTM-like cell, which updates the hidden and the cell state.
#[differentiable]
fn cell_step(w: &[f64], hidden: &mut [f64], cell: &mut [f64], input: &[f64]) {
    for i in 0..hidden.len() {
        let forget = 1.0 / (1.0 + (-(w[0] * input[i] + hidden[i])).exp());
        cell[i] = cell[i] * forget + (w[1] * input[i]).tanh();
        hidden[i] = w[2] * cell[i].tanh();
    }
}

/// The two halves of `split_at_mut` of one state passed to one call, twice: each call
/// overwrites both, which the reverse sweep restores.
#[autodiff_forward(halves_fwd, Dual, Dual)]
#[autodiff_reverse(halves_rev, Duplicated, Active)]
fn halves(x: &[f64]) -> f64 {
    let n = x.len() - 3;
    let mut state = vec![0.5; 2 * n];
    for _ in 0..2 {
        let (hidden, cell) = state.split_at_mut(n);
        cell_step(&x[..3], hidden, cell, &x[3..]);
    }
    state.iter().map(|s| s * s).sum()
}

fn halves_o<D: Num>(x: &[D]) -> D {
    let n = x.len() - 3;
    let (mut hidden, mut cell) = (vec![c::<D>(0.5); n], vec![c::<D>(0.5); n]);
    for _ in 0..2 {
        for i in 0..n {
            let forget = (((x[0] * x[3 + i] + hidden[i]) * -1.0).exp() + 1.0).recip();
            cell[i] = cell[i] * forget + (x[1] * x[3 + i]).tanh();
            hidden[i] = x[2] * cell[i].tanh();
        }
    }
    hidden
        .iter()
        .chain(&cell)
        .fold(c::<D>(0.0), |a, s| a + *s * *s)
}

// ---------------------------------------------------------------- lent with their lengths

/// Scales a buffer in place by `1/k²`.
#[differentiable]
fn shrink(data: &mut [f64], k: usize) {
    let s = 1.0 / (k * k) as f64;
    for e in data {
        *e *= s;
    }
}

/// Scales a buffer in place by its first element.
#[differentiable]
fn scale_by_first(data: &mut [f64], s: f64) {
    for e in data.iter_mut() {
        *e *= s;
    }
}

#[autodiff_forward(lent_with_lengths_fwd, Dual, Dual)]
#[autodiff_reverse(lent_with_lengths_rev, Duplicated, Active)]
fn lent_with_lengths(x: &[f64]) -> f64 {
    let mut u = x.to_vec();
    lent_with_lengths_in_place(&mut u);
    u.iter().map(|a| a * a).sum()
}

/// A buffer lent to helpers with an argument that reads it (`shrink(u, u.len() / 2)`), as
/// Rust allows: the buffer is lent after the other arguments are computed.
#[differentiable]
fn lent_with_lengths_in_place(u: &mut [f64]) {
    shrink(u, u.len() / 2);
    scale_by_first(u, u[1]);
}

fn lent_with_lengths_o<D: Num>(x: &[D]) -> D {
    let k = (x.len() / 2) as f64;
    let u: Vec<D> = x.iter().map(|a| *a * (1.0 / (k * k))).collect();
    let s = u[1];
    u.iter().fold(c(0.0), |a, e| a + (*e * s) * (*e * s))
}

/// A plain helper (no attribute) whose result is a truth value, in a condition: it needs
/// no derivative, in any mode or nesting.
fn is_big(x: f64) -> bool {
    x > 0.5
}

#[autodiff_forward(tested_fwd, Dual, Dual)]
#[autodiff_reverse(tested_rev, Active, Active)]
fn tested(x: f64) -> f64 {
    if is_big(x) { x * x } else { x.sin() }
}

fn tested_o<D: Num>(x: D) -> D {
    if x.re() > 0.5 { x * x } else { x.sin() }
}

/// Its H·v (forward over reverse), which differentiates the reverse companion again.
#[autodiff_forward(tested_hvp, Dual, Dual)]
fn tested_grad(x: f64) -> f64 {
    tested_rev(x, 1.0).1
}

/// An array of constants passed by value to a helper that takes `[f64; 3]` (whose
/// parameter carries no derivative).
#[differentiable]
fn quadratic(w: [f64; 3], x: f64) -> f64 {
    w[0] + w[1] * x + w[2] * x * x
}

#[autodiff_forward(by_value_table_fwd, Dual, Dual)]
#[autodiff_reverse(by_value_table_rev, Active, Active)]
fn by_value_table(x: f64) -> f64 {
    quadratic([1.0, 2.0, 3.0], x) + x * quadratic([0.5; 3], x.sin())
}

fn by_value_table_o<D: Num>(x: D) -> D {
    let s = x.sin();
    x * x * 3.0 + x * 2.0 + c::<D>(1.0) + x * (s * s * 0.5 + s * 0.5 + c::<D>(0.5))
}

/// A helper returning five values, and a pricer-like function of five `Active` scalars
/// whose reverse companion returns a 6-tuple: its gradient's first entry differentiated
/// again (forward over reverse), as the gamma of an option price is.
#[differentiable]
fn five(x: f64) -> (f64, f64, f64, f64, f64) {
    (x, x * x, x.sin(), x.exp(), 2.0 * x)
}

#[autodiff_forward(five_sum_fwd, Dual, Dual)]
#[autodiff_reverse(five_sum_rev, Active, Active)]
fn five_sum(x: f64) -> f64 {
    let (a, b, c, d, e) = five(x);
    a * b + c * d - e
}

fn five_sum_o<D: Num>(x: D) -> D {
    x * x * x + x.sin() * x.exp() - x * 2.0
}

#[autodiff_reverse(price_grad, Active, Active, Active, Active, Active, Active)]
fn price(s: f64, k: f64, r: f64, v: f64, t: f64) -> f64 {
    let d = ((s / k).ln() + (r + 0.5 * v * v) * t) / (v * t.sqrt());
    s * d.tanh() - k * (-r * t).exp() * (d - v * t.sqrt()).tanh()
}

fn price_o<D: Num>(s: D, k: f64, r: f64, v: f64, t: f64) -> D {
    let d = ((s / k).ln() + (r + 0.5 * v * v) * t) / (v * t.sqrt());
    s * d.tanh() - (d - v * t.sqrt()).tanh() * (k * (-r * t).exp())
}

/// `∂price/∂s`, whose forward companion gives `∂²price/∂s²`.
#[autodiff_forward(price_gamma, Dual, Const, Const, Const, Const, Dual)]
fn price_delta(s: f64, k: f64, r: f64, v: f64, t: f64) -> f64 {
    let (_, ds, _, _, _, _) = price_grad(s, k, r, v, t, 1.0);
    ds
}

// ---------------------------------------------------------------- arrays taken by value

/// The right-hand side of a damped oscillator: its state taken and returned by value.
#[differentiable]
fn oscillator(s: [f64; 2], k: f64) -> [f64; 2] {
    [s[1], -k * s[0] - 0.1 * s[1]]
}

/// `|a × b'|²` with `b' = b + e₀`, written into the callee's own copy of `b` (`mut b`): the
/// caller's array does not change. Its named companions take the arrays by reference.
#[autodiff_forward(cross_sq_fwd, Dual, Const, Dual)]
#[autodiff_reverse(cross_sq_rev, Duplicated, Const, Active)]
fn cross_sq(a: [f64; 3], mut b: [f64; 3]) -> f64 {
    b[0] += 1.0;
    let c = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ];
    c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
}

fn cross_sq_o<D: Num>(a: &[D], b: &[D]) -> D {
    let b0 = b[0] + 1.0;
    let c = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b0 - a[0] * b[2],
        a[0] * b[1] - a[1] * b0,
    ];
    c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
}

/// Arrays passed by value to helpers: a local array (RK4 steps of the oscillator, whose
/// stages are array literals), elements of vectors of arrays (collected from a `map` that
/// makes an array each), an element read through a reference (`*r`, `*p`), a local array
/// passed again after the callee changed its copy, an array of constants, and an array a
/// call returned (bound by a name that the body indexes).
#[autodiff_forward(arrays_by_value_fwd, Dual, Dual)]
#[autodiff_reverse(arrays_by_value_rev, Duplicated, Active)]
fn arrays_by_value(x: &[f64]) -> f64 {
    let mut s = [x[0], x[1]];
    let (h, k) = (0.1, 1.0 + x[2] * x[2]);
    for _ in 0..8 {
        let k1 = oscillator(s, k);
        let k2 = oscillator([s[0] + 0.5 * h * k1[0], s[1] + 0.5 * h * k1[1]], k);
        let k3 = oscillator([s[0] + 0.5 * h * k2[0], s[1] + 0.5 * h * k2[1]], k);
        let k4 = oscillator([s[0] + h * k3[0], s[1] + h * k3[1]], k);
        for i in 0..2 {
            s[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
    let pts: Vec<[f64; 3]> = x.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    let mut acc = s[0] * s[1];
    for i in 1..pts.len() {
        acc += 0.1 * cross_sq(pts[i - 1], pts[i]);
    }
    let pairs: Vec<[f64; 2]> = x
        .iter()
        .zip(x.iter().skip(1))
        .map(|(a, b)| [*a, *b])
        .collect();
    for p in pairs.iter() {
        acc += 0.01 * oscillator(*p, 1.0)[1];
    }
    let r = &pts[0];
    let b = [x[1], s[0], x[0]];
    acc += cross_sq(*r, b) + b[0] * cross_sq(b, [1.0, 0.5, 0.25]);
    // An array a call returned, bound and indexed, passed on by value.
    let u = oscillator(s, k);
    let w = oscillator(u, 0.5);
    acc + u[0] * w[1]
}

/// A spring between two points taken by value by a method.
struct Spring {
    k: f64,
    rest: f64,
}

#[differentiable]
impl Spring {
    fn energy(&self, a: [f64; 2], b: [f64; 2]) -> f64 {
        let d = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
        0.5 * self.k * (d - self.rest).powi(2)
    }
}

/// Points passed by value to a method and to local closures, one of which writes its own
/// copy (`mut p`): the point it was given stays as it was for the next call.
#[autodiff_forward(springs_fwd, Dual, Dual)]
#[autodiff_reverse(springs_rev, Duplicated, Active)]
fn springs(x: &[f64]) -> f64 {
    let s = Spring { k: 2.0, rest: 0.5 };
    let pts: Vec<[f64; 2]> = x.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
    let mut e = 0.0;
    for w in pts.windows(2) {
        e += s.energy(w[0], w[1]);
    }
    let area = |p: [f64; 2], q: [f64; 2]| p[0] * q[1] - p[1] * q[0];
    let shifted = |mut p: [f64; 2], q: [f64; 2]| {
        p[0] += 1.0;
        p[0] * q[1] - p[1] * q[0]
    };
    for i in 1..pts.len() {
        e += 0.1 * area(pts[i - 1], pts[i]) + shifted(pts[0], pts[i]) * shifted(pts[0], pts[i]);
    }
    e
}

fn springs_o<D: Num>(x: &[D]) -> D {
    let pts: Vec<&[D]> = x.chunks_exact(2).collect();
    let mut e = c::<D>(0.0);
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let d = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
        e += (d - 0.5).powi(2);
    }
    for i in 1..pts.len() {
        let (p, q) = (pts[i - 1], pts[i]);
        e += (p[0] * q[1] - p[1] * q[0]) * 0.1;
        let (p0, q) = (pts[0], pts[i]);
        let a = (p0[0] + 1.0) * q[1] - p0[1] * q[0];
        e += a * a;
    }
    e
}

/// A body whose position and velocity are arrays, each passed by value to a helper.
struct Body {
    pos: [f64; 3],
    vel: [f64; 3],
}

/// `½·m·|v|²`.
#[differentiable]
fn kinetic(v: [f64; 3], m: f64) -> f64 {
    0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
}

/// Members passed by value: the body indexes them too, which tells the macro they are
/// arrays (a member it never indexes is taken for a float).
#[autodiff_reverse(body_energy_rev, Duplicated, Active)]
fn body_energy(b: &Body) -> f64 {
    kinetic(b.vel, 2.0) + kinetic(b.pos, 0.5) + b.pos[0] * b.vel[1]
}

fn arrays_by_value_o<D: Num>(x: &[D]) -> D {
    let osc = |s: [D; 2], k: D| [s[1], -k * s[0] - s[1] * 0.1];
    let mut s = [x[0], x[1]];
    let (h, k) = (0.1, x[2] * x[2] + 1.0);
    for _ in 0..8 {
        let k1 = osc(s, k);
        let k2 = osc([s[0] + k1[0] * (0.5 * h), s[1] + k1[1] * (0.5 * h)], k);
        let k3 = osc([s[0] + k2[0] * (0.5 * h), s[1] + k2[1] * (0.5 * h)], k);
        let k4 = osc([s[0] + k3[0] * h, s[1] + k3[1] * h], k);
        for i in 0..2 {
            s[i] += (k1[i] + k2[i] * 2.0 + k3[i] * 2.0 + k4[i]) * (h / 6.0);
        }
    }
    let pts: Vec<&[D]> = x.chunks_exact(3).collect();
    let mut acc = s[0] * s[1];
    for i in 1..pts.len() {
        acc += cross_sq_o(pts[i - 1], pts[i]) * 0.1;
    }
    for w in x.windows(2) {
        acc += osc([w[0], w[1]], c(1.0))[1] * 0.01;
    }
    let b = [x[1], s[0], x[0]];
    let consts = [c::<D>(1.0), c(0.5), c(0.25)];
    acc += cross_sq_o(pts[0], &b) + b[0] * cross_sq_o(&b, &consts);
    let u = osc(s, k);
    let w = osc(u, c(0.5));
    acc + u[0] * w[1]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn results_of_five_values_and_gradients_of_five_scalars(x in float(-1.5, 1.5), v in dir(), s in seed(), sp in float(0.5, 2.0)) {
        check1("five_sum", (x, v, s), five_sum, five_sum_fwd, five_sum_rev, five_sum_o::<Dual64>);
        let (k, r, vol, t) = (1.1, 0.03, 0.4, 0.7);
        let (_, d1, d2) = num_dual::second_derivative(|s| price_o(s, k, r, vol, t), sp);
        let (delta, gamma) = price_gamma(sp, 1.0, k, r, vol, t);
        check("delta", delta, d1);
        check("gamma", gamma, d2);
    }

    #[test]
    fn helpers_returning_truth_values_in_conditions(x in float(-1.5, 1.5), v in dir(), s in seed()) {
        check1("tested", (x, v, s), tested, tested_fwd, tested_rev, tested_o::<Dual64>);
        let (g, h) = tested_hvp(x, v);
        let (dg, dh) = if x > 0.5 { (2.0 * x, 2.0) } else { (x.cos(), -x.sin()) };
        check("tested grad", g, dg);
        check("tested H v", h, dh * v);
    }

    #[test]
    fn constant_arrays_passed_by_value(x in float(-1.5, 1.5), v in dir(), s in seed()) {
        check1("by_value_table", (x, v, s), by_value_table, by_value_table_fwd, by_value_table_rev, by_value_table_o::<Dual64>);
    }

    #[test]
    fn float_arrays_passed_by_value((x, v, s0) in slice_case(-1.2, 1.2, 3..8, 0), s in seed()) {
        check_slice("arrays_by_value", (&x, &v, &s0, s), arrays_by_value, arrays_by_value_fwd, arrays_by_value_rev, arrays_by_value_o::<Dual64>);
        check_hvp_of::<arrays_by_value_rev>(&x, &v, arrays_by_value_o);
    }

    #[test]
    fn named_companions_of_arrays_taken_by_value(a in vecf(-1.0, 1.0, 3), b in vecf(-1.0, 1.0, 3), v in dirs(3), s in seed()) {
        let (aa, bb) = ([a[0], a[1], a[2]], [b[0], b[1], b[2]]);
        let (want, grad) = oracle_grad(|d| cross_sq_o(d, &[c(b[0]), c(b[1]), c(b[2])]), &a);
        let mut da = [0.0; 3];
        check("primal", cross_sq_rev(&aa, &mut da, &bb, s), want);
        check("function", cross_sq(aa, bb), want);
        check_all("gradient", &da, &grad.iter().map(|g| g * s).collect::<Vec<_>>());
        let (p, t) = cross_sq_fwd(&aa, &[v[0], v[1], v[2]], &bb);
        check("forward primal", p, want);
        check("tangent", t, (0..3).map(|i| grad[i] * v[i]).sum());
    }

    #[test]
    fn arrays_passed_by_value_to_methods_and_closures((x, v, s0) in slice_case(-1.2, 1.2, 4..9, 0), s in seed()) {
        check_slice("springs", (&x, &v, &s0, s), springs, springs_fwd, springs_rev, springs_o::<Dual64>);
        check_hvp_of::<springs_rev>(&x, &v, springs_o);
    }

    #[test]
    fn array_members_passed_by_value(p in vecf(-1.5, 1.5, 3), w in vecf(-1.5, 1.5, 3), s in seed()) {
        let b = Body { pos: [p[0], p[1], p[2]], vel: [w[0], w[1], w[2]] };
        let mut db = Body { pos: [0.5; 3], vel: [0.5; 3] };
        let want = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) + 0.25 * (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) + p[0] * w[1];
        check("primal", body_energy_rev(&b, &mut db, s), want);
        for i in 0..3 {
            let dp = 0.5 * p[i] + if i == 0 { w[1] } else { 0.0 };
            let dv = 2.0 * w[i] + if i == 1 { p[0] } else { 0.0 };
            check(&format!("∂pos[{i}]"), db.pos[i] - 0.5, s * dp);
            check(&format!("∂vel[{i}]"), db.vel[i] - 0.5, s * dv);
        }
    }

    #[test]
    fn halves_of_split_at_mut_in_one_call((x, v, s0) in slice_case(-1.2, 1.2, 4..7, 0), s in seed()) {
        check_slice("halves", (&x, &v, &s0, s), halves, halves_fwd, halves_rev, halves_o::<Dual64>);
        check_hvp_of::<halves_rev>(&x, &v, halves_o);
    }

    #[test]
    fn buffers_lent_with_arguments_that_read_them((x, v, s0) in slice_case(-1.2, 1.2, 2..6, 0), s in seed()) {
        check_slice("lent_with_lengths", (&x, &v, &s0, s), lent_with_lengths, lent_with_lengths_fwd, lent_with_lengths_rev, lent_with_lengths_o::<Dual64>);
        check_hvp_of::<lent_with_lengths_rev>(&x, &v, lent_with_lengths_o);
    }

    #[test]
    fn references_to_local_floats((x, v, s0) in slice_case(-1.2, 1.2, 1..5, 0), s in seed()) {
        check_slice("local_refs", (&x, &v, &s0, s), local_refs, local_refs_fwd, local_refs_rev, local_refs_o::<Dual64>);
        check_hvp_of::<local_refs_rev>(&x, &v, local_refs_o);
    }

    #[test]
    fn capitalised_function_names((x, v, s0) in slice_case(-1.2, 1.2, 1..6, 0), s in seed()) {
        check_slice("capitalised", (&x, &v, &s0, s), capitalised, capitalised_fwd, capitalised_rev, capitalised_o::<Dual64>);
        check_hvp_of::<capitalised_rev>(&x, &v, capitalised_o);
    }

    #[test]
    fn constant_batches_passed_to_helpers(w in vecf(-1.0, 1.0, 2), b in vecf(-2.0, 2.0, 6), v in dirs(2), s in seed()) {
        let xs: Vec<Vec<f64>> = b.chunks(2).map(|c| c.to_vec()).collect();
        let (want, grad) = oracle_grad(|d| batch_loss_o(d, &xs), &w);
        let mut dw = vec![0.0; 2];
        check("primal", batch_loss_rev(&w, &mut dw, &xs, s), want);
        check_all("gradient", &dw, &grad.iter().map(|g| g * s).collect::<Vec<_>>());
        let (p, t) = batch_loss_fwd(&w, &v, &xs);
        check("forward primal", p, want);
        check("tangent", t, grad[0] * v[0] + grad[1] * v[1]);
        // H·v against the oracle's gradient differentiated along v (forward over forward
        // of the oracle: the directional derivative of each gradient component).
        let (mut g, mut hv) = (vec![0.0; 2], vec![0.0; 2]);
        batch_loss_hvp(&w, &v, &xs, &mut g, &mut hv);
        for i in 0..2 {
            let e: Vec<f64> = (0..2).map(|j| if i == j { 1.0 } else { 0.0 }).collect();
            let h = 1e-5;
            let at = |t: f64| {
                let wt: Vec<f64> = w.iter().zip(&v).map(|(a, d)| a + t * d).collect();
                oracle_jvp(|d| vec![batch_loss_o(d, &xs)], &wt, &e).1[0]
            };
            check_tol(&format!("H·v[{i}]"), hv[i], (at(h) - at(-h)) / (2.0 * h), 1e-6);
        }
    }

    #[test]
    fn element_references_passed_to_calls(a in vecf(-1.0, 1.0, 8), v in dirs(8), s in seed()) {
        let w = &a[..2];
        let xs = vec![a[2..4].to_vec(), a[4..6].to_vec(), a[6..8].to_vec()];
        let (want, grad) = oracle_grad(row_loss_o, &a);
        let mut dw = vec![0.0; 2];
        let mut dxs = vec![vec![0.0; 2]; 3];
        let got = row_loss_rev(w, &mut dw, &xs, &mut dxs, s);
        check("primal", got, want);
        let flat: Vec<f64> = dw.iter().chain(dxs.iter().flatten()).copied().collect();
        check_all("gradient", &flat, &grad.iter().map(|g| g * s).collect::<Vec<_>>());
        let vxs = vec![v[2..4].to_vec(), v[4..6].to_vec(), v[6..8].to_vec()];
        let (p, t) = row_loss_fwd(w, &v[..2], &xs, &vxs);
        check("forward primal", p, want);
        let dir: f64 = grad.iter().zip(&v).map(|(g, d)| g * d).sum();
        check("tangent", t, dir);
    }

    #[test]
    fn local_buffers_overwritten_by_calls_in_a_loop((x, v, s0) in slice_case(-1.0, 1.0, 1..17, 0), s in seed()) {
        check_slice(
            "reused_by_calls",
            (&x, &v, &s0, s),
            reused_by_calls,
            reused_by_calls_fwd,
            reused_by_calls_rev,
            reused_by_calls_o::<Dual64>,
        );
        check_hvp_of::<reused_by_calls_rev>(&x, &v, reused_by_calls_o);
    }

    #[test]
    fn mut_scalar_parameters_and_lent_locals(x in float(-1.5, 1.5), y in float(-1.5, 1.5), v in prop::array::uniform2(dir()), s in seed()) {
        check2(
            "lend",
            ([x, y], v, s),
            lend,
            lend_fwd,
            lend_rev,
            lend_o,
        );
    }

    #[test]
    fn rows_of_a_local_matrix_written_by_a_callee((x, v, s0) in slice_case(-1.0, 1.0, 1..5, 0), s in seed()) {
        check_slice(
            "rows_by_callee",
            (&x, &v, &s0, s),
            rows_by_callee,
            rows_by_callee_fwd,
            rows_by_callee_rev,
            rows_by_callee_o::<Dual64>,
        );
        check_hvp_of::<rows_by_callee_rev>(&x, &v, rows_by_callee_o);
    }

    #[test]
    fn helpers_returning_tuples((x, v, s0) in slice_case(-1.0, 1.0, 1..5, 0), s in seed()) {
        check_slice(
            "tuple_helpers",
            (&x, &v, &s0, s),
            tuple_helpers,
            tuple_helpers_fwd,
            tuple_helpers_rev,
            tuple_helpers_o::<Dual64>,
        );
        check_hvp_of::<tuple_helpers_rev>(&x, &v, tuple_helpers_o);
    }

    #[test]
    fn scalar_reference_parameters(o in float(-1.0, 1.0), a in float(-1.0, 1.0), b in float(-1.0, 1.0), v in prop::array::uniform3(dir()), w in dir(), s in seed()) {
        // out' = exp(a·b) + out·cos(out); value a²·b + sin(a) + 1.25·a·b - 0.625·a.
        let oracle = |d: &[Dual64]| (d[1] * d[2]).exp() + d[0] * d[0].cos();
        let value = |d: &[Dual64]| d[1] * d[1] * d[2] + d[1].sin() + d[1] * d[2] * 1.25 - d[1] * 0.625;
        let (mut out, mut dout) = (o, v[0]);
        let a_ref = a;
        let (r, dr) = through_refs_fwd(&mut out, &mut dout, &a_ref, &v[1], b, v[2]);
        let (want, want_t) = oracle_jvp(|d| vec![oracle(d), value(d)], &[o, a, b], &v);
        check("out", out, want[0]);
        check("out tangent", dout, want_t[0]);
        check("value", r, want[1]);
        check("value tangent", dr, want_t[1]);
        // Reverse: seed `s` on the value, `w` on `out` after the call.
        let (mut out, mut bout) = (o, w);
        let mut ba = 0.0;
        let (r, bb) = through_refs_rev(&mut out, &mut bout, &a_ref, &mut ba, b, s);
        check("reverse value", r, want[1]);
        let grad = oracle_vjp(|d| vec![oracle(d), value(d)], &[o, a, b], &[w, s]);
        check("adjoint of out", bout, grad[0]);
        check("adjoint of a", ba, grad[1]);
        check("adjoint of b", bb, grad[2]);
    }

    #[test]
    fn struct_fields_nested_structs_and_tuple_fields(
        a in (1usize..5, 1usize..4).prop_flat_map(|(nv, nx)| args_case(-1.0, 1.0, vec![5 + nv, nx], vec![false, false])),
    ) {
        check_args(
            "fields",
            &a,
            |a| fields(&params(&a[0]), &a[1]),
            |a, t| fields_fwd(&params(&a[0]), &params(&t[0]), &a[1], &t[1]),
            |a, b, s| {
                let [bp, bx] = b else { unreachable!() };
                let mut sp = params(bp);
                let r = fields_rev(&params(&a[0]), &mut sp, &a[1], bx, s);
                *bp = flat_params(&sp);
                r
            },
            |a| fields_o(&a[0], &a[1]),
        );
    }

    #[test]
    fn mut_struct_parameter(a in (1usize..5).prop_flat_map(|n| args_case(-1.0, 1.0, vec![5 + n, n], vec![true, false]))) {
        check_args(
            "update",
            &a,
            |a| {
                let mut p = params(&a[0]);
                update(&mut p, &a[1]);
                a[0] = flat_params(&p);
                0.0
            },
            |a, t| {
                let (mut p, mut dp) = (params(&a[0]), params(&t[0]));
                update_fwd(&mut p, &mut dp, &a[1], &t[1]);
                (a[0], t[0]) = (flat_params(&p), flat_params(&dp));
                (0.0, 0.0)
            },
            |a, b, _| {
                let (mut p, mut bp) = (params(&a[0]), params(&b[0]));
                update_rev(&mut p, &mut bp, &a[1], &mut b[1]);
                (a[0], b[0]) = (flat_params(&p), flat_params(&bp));
                0.0
            },
            |a| { let [p, x] = a else { unreachable!() }; update_o(p, x) },
        );
    }

    #[test]
    fn method_companion_with_self(a in (1usize..6).prop_flat_map(|n| args_case(-1.0, 1.0, vec![n + 1, n], vec![false, false]))) {
        check_args(
            "Model::energy",
            &a,
            |a| model(&a[0]).energy(&a[1]),
            |a, t| model(&a[0]).energy_fwd(&model(&t[0]), &a[1], &t[1]),
            |a, b, s| {
                let [bm, bx] = b else { unreachable!() };
                let mut sm = model(bm);
                let r = model(&a[0]).energy_rev(&mut sm, &a[1], bx, s);
                *bm = flat_model(&sm);
                r
            },
            |a| energy_o(&a[0], &a[1]),
        );
    }

    #[test]
    fn method_companions_with_a_constant_argument(
        (m, x, dm, w) in (1usize..6).prop_flat_map(|n| (vecf(-1.0, 1.0, n + 1), vecf(-1.0, 1.0, n), dirs(n + 1), dirs(n + 1))),
        s in seed(),
    ) {
        let f = |d: &[Dual64]| {
            let x: Vec<Dual64> = x.iter().map(|v| c(*v)).collect();
            energy_o(d, &x)
        };
        let (value, grad) = oracle_grad(f, &m);
        let (_, t) = oracle_jvp(|d| vec![f(d)], &m, &dm);
        let (r, dr) = model(&m).energy_dm(&model(&dm), &x);
        check("energy_dm value", r, value);
        check("energy_dm tangent", dr, t[0]);
        let mut bm = model(&w);
        let r = model(&m).energy_bm(&mut bm, &x, s);
        check("energy_bm value", r, value);
        let bm = flat_model(&bm);
        for i in 0..m.len() {
            check(&format!("energy_bm d/dm[{i}]"), bm[i] - w[i], s * grad[i]);
        }
    }

    #[test]
    fn generic_function_calling_a_generic_function(x in float(-2.0, 2.0), v in dir(), s in seed()) {
        check1(
            "generic_calls::<f64>",
            (x, v, s),
            generic_calls::<f64>,
            generic_calls_fwd::<f64>,
            generic_calls_rev::<f64>,
            |x: Dual64| x.sin() * x * x + (x * x).sin() * x * x,
        );
        let xf = x as f32;
        let want = |x: Dual32| x.sin() * x * x + (x * x).sin() * x * x;
        let (f, df) = generic_calls_fwd::<f32>(xf, 1.0);
        let o = want(Dual32::new(xf, 1.0));
        check_tol("f32 value", f as f64, o.re as f64, 1e-5);
        check_tol("f32 tangent", df as f64, o.eps as f64, 1e-5);
        let (f, g) = generic_calls_rev::<f32>(xf, 1.0);
        check_tol("f32 reverse value", f as f64, o.re as f64, 1e-5);
        check_tol("f32 gradient", g as f64, o.eps as f64, 1e-5);
    }

    #[test]
    fn method_companion_with_mut_self(a in (1usize..6).prop_flat_map(|n| args_case(-1.0, 1.0, vec![n + 1, n], vec![true, false]))) {
        check_args(
            "Model::step",
            &a,
            |a| {
                let mut m = model(&a[0]);
                m.step(&a[1]);
                a[0] = flat_model(&m);
                0.0
            },
            |a, t| {
                let (mut m, mut dm) = (model(&a[0]), model(&t[0]));
                m.step_fwd(&mut dm, &a[1], &t[1]);
                (a[0], t[0]) = (flat_model(&m), flat_model(&dm));
                (0.0, 0.0)
            },
            |a, b, _| {
                let (mut m, mut bm) = (model(&a[0]), model(&b[0]));
                m.step_rev(&mut bm, &a[1], &mut b[1]);
                (a[0], b[0]) = (flat_model(&m), flat_model(&bm));
                0.0
            },
            |a| { let [m, x] = a else { unreachable!() }; step_o(m, x) },
        );
    }

    #[test]
    fn tuple_return_values(r in float(-2.0, 2.0), an in float(-3.0, 3.0), v in [dir(), dir()], w in [seed(), seed()]) {
        let f = |r: Dual64, a: Dual64| {
            let (u, v) = (r * a.cos(), r * a.sin());
            (u * v, u * u - v)
        };
        let (f0, f1) = f(Dual64::new(r, v[0]), Dual64::new(an, v[1]));
        let (p, d) = polar2_fwd(r, v[0], an, v[1]);
        check("value 0", p.0, f0.re);
        check("value 1", p.1, f1.re);
        check("tangent 0", d.0, f0.eps);
        check("tangent 1", d.1, f1.eps);
        check_all("primal", &[polar2(r, an).0, polar2(r, an).1], &[f0.re, f1.re]);
        let (g0r, g1r) = f(Dual64::new(r, 1.0), Dual64::from_re(an));
        let (g0a, g1a) = f(Dual64::from_re(r), Dual64::new(an, 1.0));
        let (p, br, ba) = polar2_rev(r, an, (w[0], w[1]));
        check("reverse value 0", p.0, f0.re);
        check("reverse value 1", p.1, f1.re);
        check("d/dr", br, w[0] * g0r.eps + w[1] * g1r.eps);
        check("d/da", ba, w[0] * g0a.eps + w[1] * g1a.eps);
    }

    #[test]
    fn loss_over_a_model_with_a_differentiable_method(
        (a, xs, ys) in (1usize..5, 1usize..5).prop_flat_map(|(d, k)| (
            args_case(-1.0, 1.0, vec![d + 1], vec![false]),
            vecf(-1.0, 1.0, d * k),
            vecf(-1.0, 1.0, k),
        )),
    ) {
        check_args(
            "loss",
            &a,
            |a| loss(&model(&a[0]), &xs, &ys),
            |a, t| loss_fwd(&model(&a[0]), &model(&t[0]), &xs, &ys),
            |a, b, s| {
                let mut sm = model(&b[0]);
                let r = loss_rev(&model(&a[0]), &mut sm, &xs, &ys, s);
                b[0] = flat_model(&sm);
                r
            },
            |a| loss_o(&a[0], &xs, &ys),
        );
    }

    #[test]
    fn calls_by_name_use_and_paths((x, v, s0) in slice_case(-1.0, 1.0, 2..7, 1), t in float(-1.5, 1.5), s in seed()) {
        check_slice_scalar("calls", (&x, t, &v, &s0, s), calls, calls_fwd, calls_rev, calls_o::<Dual64>);
    }

    #[test]
    fn direct_mutual_and_slice_recursion(
        (x, v, s0) in slice_case(-1.0, 1.0, 0..6, 1), t in float(-1.5, 1.5), s in seed(), n in 0u32..6,
    ) {
        check_slice_scalar(
            "recursion",
            (&x, t, &v, &s0, s),
            |x, t| recursion(x, t, n),
            |x, dx, t, dt| recursion_fwd(x, dx, t, dt, n),
            |x, bx, t, s| recursion_rev(x, bx, t, n, s),
            |x, t| recursion_o(x, t, n),
        );
    }
}

#[test]
fn dot_companion() {
    let (x, y) = ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0]);
    let (mut bx, mut by) = ([1.0; 3], [0.0; 3]);
    let f = dot_rev(&x, &mut bx, &y, &mut by, 2.0);
    assert_eq!(f, 4.5);
    assert_eq!(bx, [2.0, -1.0, 5.0]);
    assert_eq!(by, [2.0, 4.0, 6.0]);
}

/// A library's function whose H·v cannot be built (`src/library_items.rs`): the library
/// compiles, and its gradient is right. `f = Σ_{i<3} (x₀ + i/4)·x₁`, so
/// `∂f/∂x₀ = 3x₁` and `∂f/∂x₁ = 3x₀ + 0.75`.
#[test]
fn library_gradient_without_hvp() {
    use autodiff_rs::library_items::{d_weighted_sum, weighted_sum};
    let x = [0.7, -1.3];
    let mut bx = [0.0, 1.0];
    let f = d_weighted_sum(&x, &mut bx, 2.0);
    assert_eq!(f, weighted_sum(&x));
    assert!((f - (3.0 * 0.7 + 0.75) * -1.3).abs() < 1e-12);
    assert!((bx[0] - 2.0 * 3.0 * -1.3).abs() < 1e-12);
    assert!((bx[1] - (1.0 + 2.0 * (3.0 * 0.7 + 0.75))).abs() < 1e-12);
}

// ---------------------------------------------------------------- buffers passed on whole

#[allow(clippy::ptr_arg)]
#[differentiable]
fn vec_product(x: &Vec<f64>) -> f64 {
    x[0] * x[1] * x[1]
}

#[differentiable]
fn array_product(x: &[f64; 2]) -> f64 {
    x[0] * x[0] * x[1]
}

#[allow(clippy::ptr_arg)]
#[differentiable]
fn scale_first(x: &mut Vec<f64>) {
    x[0] *= x[1];
}

/// `&Vec` and array parameters passed on whole to callees typed the same (the callees'
/// nested protocol takes them as slices).
#[allow(clippy::ptr_arg)]
#[autodiff_reverse(d_whole_buffers, Duplicated, Duplicated, Active)]
#[autodiff_forward(whole_buffers_jvp, Dual, Dual, Dual)]
fn whole_buffers(x: &Vec<f64>, a: &[f64; 2]) -> f64 {
    vec_product(x) + array_product(a) * x[0]
}

#[allow(clippy::ptr_arg)]
#[autodiff_forward(whole_buffers_hvp, Dual, Dual, Dual, Dual)]
fn whole_buffers_grad(x: &Vec<f64>, a: &[f64; 2], gx: &mut Vec<f64>, ga: &mut [f64; 2]) {
    gx.fill(0.0);
    ga.fill(0.0);
    d_whole_buffers(x, gx, a, ga, 1.0);
}

#[allow(clippy::ptr_arg)]
#[autodiff_reverse(d_scaled_in_place, Duplicated, Active)]
#[autodiff_forward(scaled_in_place_jvp, Dual, Dual)]
fn scaled_in_place(x: &mut Vec<f64>) -> f64 {
    scale_first(x);
    x[0] * x[0]
}

#[test]
fn vec_and_array_parameters_passed_on_whole() {
    // f = x0 x1² + a0² a1 x0.
    let (x, a) = (vec![0.7, -1.3], [1.1, 0.4]);
    let grad_x = [x[1] * x[1] + a[0] * a[0] * a[1], 2.0 * x[0] * x[1]];
    let grad_a = [2.0 * a[0] * a[1] * x[0], a[0] * a[0] * x[0]];
    let (mut gx, mut ga) = (vec![0.0; 2], [0.0; 2]);
    let v = d_whole_buffers(&x, &mut gx, &a, &mut ga, 1.0);
    close_to(v, x[0] * x[1] * x[1] + a[0] * a[0] * a[1] * x[0]);
    for i in 0..2 {
        close_to(gx[i], grad_x[i]);
        close_to(ga[i], grad_a[i]);
    }
    let (dx, da) = (vec![0.5, 2.0], [-1.0, 3.0]);
    let (_, t) = whole_buffers_jvp(&x, &dx, &a, &da);
    close_to(
        t,
        (0..2).map(|i| grad_x[i] * dx[i] + grad_a[i] * da[i]).sum(),
    );
    // H·(dx, da), row by row from the Hessian of f.
    let h_x = [
        grad_row(
            &[0.0, 2.0 * x[1]],
            &[2.0 * a[0] * a[1], a[0] * a[0]],
            &dx,
            &da,
        ),
        grad_row(&[2.0 * x[1], 2.0 * x[0]], &[0.0, 0.0], &dx, &da),
    ];
    let h_a = [
        grad_row(
            &[2.0 * a[0] * a[1], 0.0],
            &[2.0 * a[1] * x[0], 2.0 * a[0] * x[0]],
            &dx,
            &da,
        ),
        grad_row(&[a[0] * a[0], 0.0], &[2.0 * a[0] * x[0], 0.0], &dx, &da),
    ];
    let (mut gx, mut hx, mut ga, mut ha) = (vec![0.0; 2], vec![0.0; 2], [0.0; 2], [0.0; 2]);
    whole_buffers_hvp(&x, &dx, &a, &da, &mut gx, &mut hx, &mut ga, &mut ha);
    for i in 0..2 {
        close_to(gx[i], grad_x[i]);
        close_to(hx[i], h_x[i]);
        close_to(ha[i], h_a[i]);
    }
    // g = (x0 x1)²: a `&mut Vec` passed on whole.
    let x = vec![0.7, -1.3];
    let mut g = vec![0.0; 2];
    let v = d_scaled_in_place(&mut x.clone(), &mut g, 1.0);
    close_to(v, (x[0] * x[1]).powi(2));
    close_to(g[0], 2.0 * x[0] * x[1] * x[1]);
    close_to(g[1], 2.0 * x[0] * x[0] * x[1]);
    let (_, t) = scaled_in_place_jvp(&mut x.clone(), &mut vec![1.0, 0.0]);
    close_to(t, 2.0 * x[0] * x[1] * x[1]);
}

/// One entry of a Hessian-vector product: a Hessian row split into its `x` and `a` parts.
fn grad_row(hx: &[f64], ha: &[f64], dx: &[f64], da: &[f64]) -> f64 {
    hx[0] * dx[0] + hx[1] * dx[1] + ha[0] * da[0] + ha[1] * da[1]
}

fn close_to(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-12 * want.abs().max(1.0),
        "{got} against {want}"
    );
}

#[differentiable]
fn squares_and_values(pos: &[f64], out: &mut [[f64; 2]]) {
    for i in 0..out.len() {
        out[i][0] = pos[i] * pos[i];
        out[i][1] = pos[i];
    }
}

#[allow(clippy::ptr_arg)]
#[differentiable]
fn square_diagonal(a: &mut Vec<Vec<f64>>) {
    for i in 0..a.len() {
        a[i][i] = a[i][i] * a[i][i];
    }
}

/// Local buffers of rows written out (`vec![[0.0, 1.0]; n]`, `[[0.0, 1.0]; 2]`) and a
/// local `Vec<Vec<f64>>` lent mutably to callees.
#[autodiff_reverse(d_rows_lent, Duplicated, Active)]
#[autodiff_forward(rows_lent_jvp, Dual, Dual)]
fn rows_lent(x: &[f64]) -> f64 {
    let mut pairs = vec![[0.0, 1.0]; 2];
    squares_and_values(x, &mut pairs);
    let mut fixed = [[0.0, 1.0]; 2];
    squares_and_values(x, &mut fixed);
    let mut m = vec![vec![0.0; 2]; 2];
    m[0][0] = x[0];
    m[1][1] = x[1];
    m[0][1] = x[0] * x[1];
    square_diagonal(&mut m);
    pairs[0][0] + pairs[1][1] * fixed[0][1] + m[0][0] + m[1][1] + m[0][1]
}

#[test]
fn rows_and_matrices_lent_mutably_to_callees() {
    // f = x0² + x1 x0 + x0² + x1² + x0 x1.
    for x in [[0.7, -1.3], [2.0, 0.25]] {
        let want = 2.0 * x[0] * x[0] + 2.0 * x[0] * x[1] + x[1] * x[1];
        let grad = [4.0 * x[0] + 2.0 * x[1], 2.0 * x[0] + 2.0 * x[1]];
        let mut g = [0.0; 2];
        close_to(d_rows_lent(&x, &mut g, 1.0), want);
        close_to(g[0], grad[0]);
        close_to(g[1], grad[1]);
        let (v, t) = rows_lent_jvp(&x, &[0.5, -2.0]);
        close_to(v, want);
        close_to(t, 0.5 * grad[0] - 2.0 * grad[1]);
    }
}
