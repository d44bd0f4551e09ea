//! Buffers in the supported language, in both modes, at random points, against a num-dual
//! oracle: indexing of slices, vectors, arrays and nested vectors, in-place updates, range
//! slicing, `chunks`, `split_at`, local buffers, array patterns, iterator loops and
//! reductions, closures, and functions that write `&mut [f64]` outputs.

// Index loops and `&Vec<..>` parameters are constructs under test.
#![allow(clippy::needless_range_loop, clippy::ptr_arg)]
// The generated code holds no `unsafe` (its unchecked reverse accesses are
// `autodiff_core`'s), so a crate that forbids it can use the attributes.
#![forbid(unsafe_code)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// Arguments of lengths `lens(n)` for a random `n` in `sizes`.
fn sized(
    sizes: std::ops::Range<usize>,
    lo: f64,
    hi: f64,
    lens: fn(usize) -> Vec<usize>,
    out: Vec<bool>,
) -> impl Strategy<Value = Args> {
    sizes.prop_flat_map(move |n| args_case(lo, hi, lens(n), out.clone()))
}

// ---------------------------------------------------------------- indexing

/// Reads of `&[f64]`, reads and writes of `&mut [f64]`, in-place updates.
#[autodiff_forward(index_rw_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(index_rw_rev, Duplicated, Duplicated, Active)]
fn index_rw(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        y[i] += x[i] * y[i];
        y[i] = y[i].sin();
        s += y[i] * x[(i + 1) % n];
    }
    y[0] = s * x[0]; // overwrites: the old y[0] no longer matters
    y[n - 1] -= y[0] * 0.5;
    y[n / 2] *= x[n / 2];
    s
}

fn index_rw_o<D: Num>(x: &[D], y: &mut [D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        y[i] += x[i] * y[i];
        y[i] = y[i].sin();
        s += y[i] * x[(i + 1) % n];
    }
    y[0] = s * x[0];
    let y0 = y[0];
    y[n - 1] -= y0 * 0.5;
    y[n / 2] *= x[n / 2];
    s
}

/// `&Vec<f64>` and `&[f64; 3]` parameters, a local `Vec<f64>` matrix.
#[autodiff_forward(containers_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(containers_rev, Duplicated, Duplicated, Active)]
fn containers(v: &Vec<f64>, p: &[f64; 3]) -> f64 {
    let n = v.len();
    let mut m = vec![0.0; 3 * n];
    for k in 0..3 * n {
        m[k] = v[k / 3] * p[k % 3];
    }
    for i in 0..n {
        m[3 * i + i % 3] += p[0];
        m[3 * i + 2] = m[3 * i].exp() * m[3 * i + 1];
    }
    let mut s = 0.0;
    for k in 0..3 * n {
        s += m[k] * m[3 * ((k + 1) % n)];
    }
    s + p[2] * v[n - 1]
}

fn containers_o<D: Num>(v: &[D], p: &[D]) -> D {
    let n = v.len();
    let mut m = vec![vec![c::<D>(0.0); 3]; n];
    for i in 0..n {
        for j in 0..3 {
            m[i][j] = v[i] * p[j];
        }
    }
    for i in 0..n {
        m[i][i % 3] += p[0];
        m[i][2] = m[i][0].exp() * m[i][1];
    }
    let mut s = c::<D>(0.0);
    for k in 0..3 * n {
        s += m[k / 3][k % 3] * m[(k + 1) % n][0];
    }
    s + p[2] * v[n - 1]
}

/// A lone `&Vec<f64>` parameter, `(Duplicated, Active)`: the shape of the one-call helpers'
/// `fn(&[f64]) -> f64`, which a `Vec` or array parameter must not be taken for.
#[autodiff_forward(lone_vec_fwd, Dual, Dual)]
#[autodiff_reverse(lone_vec_rev, Duplicated, Active)]
fn lone_vec(x: &Vec<f64>) -> f64 {
    let total: f64 = x.iter().map(|v| v * v).sum();
    x.iter().map(|v| v.sin() / (1.0 + total)).sum()
}

fn lone_vec_o<D: Num>(x: &[D]) -> D {
    let total = x.iter().fold(c::<D>(0.0), |a, v| a + *v * *v);
    x.iter()
        .fold(c::<D>(0.0), |a, v| a + v.sin() / (total + 1.0))
}

/// A lone `&[f64; 3]` parameter, `(Duplicated, Active)`.
#[autodiff_forward(lone_array_fwd, Dual, Dual)]
#[autodiff_reverse(lone_array_rev, Duplicated, Active)]
fn lone_array(p: &[f64; 3]) -> f64 {
    let [a, b, c] = *p;
    a * b.exp() - c * c * a
}

fn lone_array_o<D: Num>(p: &[D]) -> D {
    p[0] * p[1].exp() - p[2] * p[2] * p[0]
}

/// A `Const` `&mut` scratch buffer that the function fills with active values and reads
/// back: the derivatives flow through it (into a scratch shadow the caller never sees).
#[autodiff_forward(scratch_fwd, Dual, Const, Dual)]
#[autodiff_reverse(scratch_rev, Duplicated, Const, Active)]
fn scratch(x: &[f64], ws: &mut [f64]) -> f64 {
    for i in 0..x.len() {
        ws[i] = x[i].sin() * x[(i + 1) % x.len()];
    }
    ws.iter().map(|w| w * w).sum::<f64>() + ws[0]
}

fn scratch_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let ws: Vec<D> = (0..n).map(|i| x[i].sin() * x[(i + 1) % n]).collect();
    ws.iter().fold(c::<D>(0.0), |a, w| a + *w * *w) + ws[0]
}

/// The same through a `&mut Vec<f64>`, and a `Const` output the function only writes
/// (its derivative is not wanted, so it needs no shadow).
#[autodiff_forward(scratch_vec_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(scratch_vec_rev, Duplicated, Const, Const, Active)]
fn scratch_vec(x: &[f64], ws: &mut Vec<f64>, out: &mut [f64]) -> f64 {
    for i in 0..x.len() {
        ws[i] = x[i] * x[i];
        out[i] = ws[i].exp();
    }
    ws.iter().sum::<f64>() * x[0]
}

fn scratch_vec_o<D: Num>(x: &[D]) -> D {
    x.iter().fold(c::<D>(0.0), |a, v| a + *v * *v) * x[0]
}

/// A `Const` buffer read at an entry and written at another: after either companion it
/// holds what the function leaves in it.
#[autodiff_forward(read_then_written_fwd, Dual, Const, Dual)]
#[autodiff_reverse(read_then_written_rev, Active, Const, Active)]
fn read_then_written(a: f64, ws: &mut [f64]) -> f64 {
    let s = ws[0] * a;
    ws[1] = s * a;
    ws[2] = ws[2] * 2.0 + ws[1];
    s + ws[2]
}

/// A `Const` array written and passed on to a `#[differentiable]` helper.
#[differentiable]
fn square_sum(w: &[f64]) -> f64 {
    w.iter().map(|v| v * v).sum()
}

#[autodiff_forward(array_scratch_fwd, Dual, Const, Dual)]
#[autodiff_reverse(array_scratch_rev, Duplicated, Const, Active)]
fn array_scratch(x: &[f64], wa: &mut [f64; 3]) -> f64 {
    for i in 0..3 {
        wa[i] = wa[i] * x[i] + x[i + 1];
    }
    square_sum(wa)
}

fn array_scratch_o<D: Num>(x: &[D]) -> D {
    let w = [c::<D>(1.0), c(-0.5), c(2.0)];
    (0..3).fold(c::<D>(0.0), |s, i| {
        let v = w[i] * x[i] + x[i + 1];
        s + v * v
    })
}

/// `∑ x_i³` through a constant scratch buffer, for H·v (forward over reverse): `6 x v`.
#[autodiff_reverse(cubes_rev, Duplicated, Const, Active)]
fn cubes(x: &[f64], ws: &mut [f64]) -> f64 {
    for i in 0..x.len() {
        ws[i] = x[i] * x[i] * x[i];
    }
    ws.iter().sum()
}

#[autodiff_forward(cubes_hvp, Dual, Dual)]
fn cubes_grad(x: &[f64], g: &mut [f64]) {
    let mut ws = vec![0.0; x.len()];
    g.fill(0.0);
    cubes_rev(x, g, &mut ws, 1.0);
}

/// Dynamic time warping: a `Vec<Vec<f64>>` filled with `f64::INFINITY`, a local matrix of
/// a nonzero constant read before it is overwritten, and an array of arrays. Their
/// elements start with zero tangents (not the fill value).
#[autodiff_forward(constant_matrices_fwd, Dual, Dual)]
#[autodiff_reverse(constant_matrices_rev, Duplicated, Active)]
fn constant_matrices(x: &[f64]) -> f64 {
    let (n, m) = (x.len() / 2, x.len() - x.len() / 2);
    let (a, b) = x.split_at(n);
    let mut d = vec![vec![f64::INFINITY; m + 1]; n + 1];
    d[0][0] = 0.0;
    for i in 1..=n {
        for j in 1..=m {
            let c = (a[i - 1] - b[j - 1]).powi(2);
            d[i][j] = c + d[i - 1][j].min(d[i][j - 1]).min(d[i - 1][j - 1]);
        }
    }
    let mut w = vec![vec![2.0; 2]; 2];
    w[0][1] = x[0] * w[1][1];
    let mut q = [[0.5f64; 2]; 2];
    q[1][0] = x[1] * q[0][0];
    d[n][m] + w[0][1] * w[1][0] + q[1][0] * q[1][1]
}

fn constant_matrices_o<D: Num>(x: &[D]) -> D {
    let (n, m) = (x.len() / 2, x.len() - x.len() / 2);
    let (a, b) = x.split_at(n);
    let inf = c::<D>(f64::INFINITY);
    let mut d = vec![vec![inf; m + 1]; n + 1];
    d[0][0] = c(0.0);
    let min = |p: D, q: D| if q.re() < p.re() { q } else { p };
    for i in 1..=n {
        for j in 1..=m {
            let cost = (a[i - 1] - b[j - 1]).powi(2);
            d[i][j] = cost + min(min(d[i - 1][j], d[i][j - 1]), d[i - 1][j - 1]);
        }
    }
    d[n][m] + x[0] * 2.0 * 2.0 + x[1] * 0.5 * 0.5
}

/// Matrices filled with a value that reads locals (`vec![vec![big; m]; n]`, an active
/// element) or with a constant expression (`f64::MAX / 4.0`): each element gets its own
/// derivative.
#[autodiff_forward(filled_matrices_fwd, Dual, Dual)]
#[autodiff_reverse(filled_matrices_rev, Duplicated, Active)]
fn filled_matrices(x: &[f64]) -> f64 {
    let big = 1e3;
    let mut d = vec![vec![big; 3]; 2];
    let e = vec![vec![x[0] * 2.0; x.len()]; 3];
    let k = vec![vec![f64::MAX / 4.0; 2]; 2];
    d[0][1] = x[1] * d[1][2];
    d[0][1] * e[2][1] + e[0][0] * x[1] + (k[1][1] / f64::MAX) * x[0]
}

/// Matrices written out row by row, as arrays and as `Vec`s, with active and constant
/// elements.
#[autodiff_forward(matrix_literals_fwd, Dual, Dual)]
#[autodiff_reverse(matrix_literals_rev, Duplicated, Active)]
#[allow(clippy::useless_vec)]
fn matrix_literals(x: &[f64]) -> f64 {
    let m = [[x[0], x[1]], [x[1] * x[0], x[0].sin()]];
    let v = vec![vec![x[1].exp(), 1.0, x[0]], vec![0.5, x[1], 2.0]];
    let c = [[0.0, 1.0], [1.0, 0.0]];
    m[0][0] * m[1][1] - m[0][1] * m[1][0] + v[0][0] * v[1][1] + c[0][1] * v[0][2] * v[1][2]
}

/// A row with active elements repeated (`vec![[x[0], 1.0]; n]`, `vec![vec![..]; n]`),
/// then one element of one row overwritten: each element has its own derivative.
#[autodiff_forward(active_row_repeated_fwd, Dual, Dual)]
#[autodiff_reverse(active_row_repeated_rev, Duplicated, Active)]
fn active_row_repeated(x: &[f64]) -> f64 {
    let mut a = vec![[x[0], 1.0]; x.len()];
    let b = vec![vec![x[1].sin(), x[0] * x[1], 2.0]; 2];
    a[1][1] = x[1] * a[0][0];
    let mut s = 0.0;
    for r in a.iter() {
        s += r[0] * r[1];
    }
    s + b[1][0] * b[0][1] + b[1][2]
}

fn active_row_repeated_o<D: Num>(x: &[D]) -> D {
    // Rows 0 and 2.. hold (x0, 1), row 1 (x0, x1·x0).
    let n = x.len() as f64;
    x[0] * (n - 1.0) + x[0] * x[1] * x[0] + x[1].sin() * x[0] * x[1] + 2.0
}

fn matrix_literals_o<D: Num>(x: &[D]) -> D {
    x[0] * x[0].sin() - x[1] * x[1] * x[0] + x[1].exp() * x[1] + x[0] * 2.0
}

fn filled_matrices_o<D: Num>(x: &[D]) -> D {
    x[1] * 1e3 * (x[0] * 2.0) + x[0] * 2.0 * x[1] + x[0] * 0.25
}

/// `h = out;` between whole local vectors whose lengths differ (a network's layers of
/// different widths).
#[autodiff_forward(layers_fwd, Dual, Dual)]
#[autodiff_reverse(layers_rev, Duplicated, Active)]
fn layers(x: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for k in 0..3 {
        let n = h.len() + 1 - (k % 2) * 2;
        let mut out = vec![0.0; n];
        for i in 0..n {
            out[i] = (h[i % h.len()] * (i as f64 + 1.0)).sin() + h[0];
        }
        h = out;
    }
    h.iter().map(|v| v * v).sum()
}

fn layers_o<D: Num>(x: &[D]) -> D {
    let mut h = x.to_vec();
    for k in 0..3 {
        let n = h.len() + 1 - (k % 2) * 2;
        let out: Vec<D> = (0..n)
            .map(|i| (h[i % h.len()] * (i as f64 + 1.0)).sin() + h[0])
            .collect();
        h = out;
    }
    h.iter().fold(c::<D>(0.0), |a, v| a + *v * *v)
}

/// The first layer copied from a row of a constant batch (`xs[0].to_vec()`), then
/// `h = out;`.
#[autodiff_forward(batch_layers_fwd, Dual, Const, Dual)]
#[autodiff_reverse(batch_layers_rev, Duplicated, Const, Active)]
fn batch_layers(w: &[f64], xs: &[Vec<f64>]) -> f64 {
    let mut h = xs[0].to_vec();
    for k in 0..2 {
        let mut out = vec![0.0; w.len()];
        for i in 0..w.len() {
            out[i] = (w[i] * h[i % h.len()] + k as f64).tanh();
        }
        h = out;
    }
    h.iter().sum()
}

fn batch_layers_o<D: Num>(w: &[D], xs: &[Vec<f64>]) -> D {
    let mut h: Vec<D> = xs[0].iter().map(|v| c::<D>(*v)).collect();
    for k in 0..2 {
        let out: Vec<D> = (0..w.len())
            .map(|i| (w[i] * h[i % h.len()] + k as f64).tanh())
            .collect();
        h = out;
    }
    h.iter().fold(c::<D>(0.0), |a, v| a + *v)
}

/// A `&Vec<Vec<f64>>` parameter (its tangent and shadow are `Vec<Vec<f64>>` too).
#[autodiff_forward(rows_fwd, Dual, Dual)]
#[autodiff_reverse(rows_rev, Duplicated, Active)]
fn rows(m: &Vec<Vec<f64>>) -> f64 {
    let mut s = 0.0;
    for i in 0..m.len() {
        let last = m[i].len() - 1;
        s += m[i][0] * m[i][last] + m[i][1].sin();
    }
    s * m[0][0]
}

fn rows_o<D: Num>(m: &[Vec<D>]) -> D {
    let mut s = c::<D>(0.0);
    for r in m {
        s += r[0] * r[r.len() - 1] + r[1].sin();
    }
    s * m[0][0]
}

/// A `&mut Vec<Vec<f64>>` parameter written in place.
#[autodiff_forward(rows_mut_fwd, Dual, Dual)]
#[autodiff_reverse(rows_mut_rev, Duplicated, Duplicated)]
fn rows_mut(x: &[f64], m: &mut Vec<Vec<f64>>) {
    for i in 0..m.len() {
        m[i][0] = x[i] * m[i][1];
        m[i][1] *= x[0] + m[i][0];
    }
    m[0][1] += m[m.len() - 1][0];
}

fn rows_mut_o<D: Num>(x: &[D], m: &mut [Vec<D>]) -> D {
    for i in 0..m.len() {
        m[i][0] = x[i] * m[i][1];
        let a = m[i][0];
        m[i][1] *= x[0] + a;
    }
    let last = m[m.len() - 1][0];
    m[0][1] += last;
    c(0.0)
}

/// `&mut [f64; 3]` updated in place.
#[autodiff_forward(array_mut_fwd, Dual)]
#[autodiff_reverse(array_mut_rev, Duplicated)]
fn array_mut(p: &mut [f64; 3]) {
    let a = p[0] * p[1];
    p[0] = p[2].cos();
    p[1] += a;
    p[2] *= p[1];
}

fn array_mut_o<D: Num>(p: &mut [D]) -> D {
    let a = p[0] * p[1];
    p[0] = p[2].cos();
    p[1] += a;
    p[2] *= p[1];
    c(0.0)
}

// ---------------------------------------------------------------- slicing

#[autodiff_forward(slicing_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(slicing_rev, Duplicated, Duplicated, Active)]
fn slicing(x: &[f64], y: &mut [f64]) -> f64 {
    let head = &x[1..3];
    let tail = &x[2..];
    let (l, r) = x.split_at(2);
    let mut s = head[0] * head[1] + tail[tail.len() - 1] + l[1] * r[0];
    let yk = &mut y[..2];
    yk[0] += s;
    yk[1] *= x[0];
    for c in x.chunks(3) {
        s += c[0] * c[c.len() - 1];
    }
    for c in x.chunks_exact(2) {
        s += c[0] * c[1].sin();
    }
    let rest = &y[1..];
    s * rest[0]
}

fn slicing_o<D: Num>(x: &[D], y: &mut [D]) -> D {
    let n = x.len();
    let mut s = x[1] * x[2] + x[n - 1] + x[1] * x[2];
    y[0] += s;
    y[1] *= x[0];
    for c in x.chunks(3) {
        s += c[0] * c[c.len() - 1];
    }
    for c in x.chunks_exact(2) {
        s += c[0] * c[1].sin();
    }
    s * y[1]
}

// ---------------------------------------------------------------- local buffers

#[autodiff_forward(local_vecs_fwd, Dual, Dual)]
#[autodiff_reverse(local_vecs_rev, Duplicated, Active)]
fn local_vecs(x: &[f64]) -> f64 {
    let n = x.len();
    let mut a = vec![0.0; n];
    for i in 0..n {
        a[i] = x[i] * x[i];
    }
    let mut b = Vec::with_capacity(n);
    for i in 0..n {
        b.push(a[i] + x[i]);
    }
    let c = x.to_vec();
    let mut d = b.clone();
    d[0] += c[n - 1] * 2.0;
    b[0] = 0.0; // the clone is independent
    let mut s = 0.0;
    for i in 0..d.len() {
        s += d[i] * c[i] + b[i];
    }
    s + a.len() as f64
}

fn local_vecs_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let a: Vec<D> = x.iter().map(|v| *v * *v).collect();
    let mut b: Vec<D> = (0..n).map(|i| a[i] + x[i]).collect();
    let mut d = b.clone();
    d[0] += x[n - 1] * 2.0;
    b[0] = c(0.0);
    let mut s = c::<D>(0.0);
    for i in 0..n {
        s += d[i] * x[i] + b[i];
    }
    s + n as f64
}

#[autodiff_forward(local_arrays_fwd, Dual, Dual)]
#[autodiff_reverse(local_arrays_rev, Duplicated, Active)]
fn local_arrays(x: &[f64]) -> f64 {
    let n = x.len();
    let mut e = [0.0; 3];
    e[0] = x[0] * x[n - 1];
    e[1] = x[0].sin();
    e[2] = e[0] * e[1];
    let mut f = vec![1.0; n];
    f.fill(x[0] * 2.0); // filled with an active value
    let mut g = vec![0.0; n];
    g.copy_from_slice(x);
    for i in 0..n {
        g[i] *= g[i] + e[2];
    }
    let mut h = [0.0; 3];
    h.copy_from_slice(&g[..3]);
    let h1 = h[1];
    h.fill(h1);
    let mut s = 0.0;
    for i in 0..n {
        s += g[i] * f[i];
    }
    s + e[2] + e[0] + h[0] * h[2]
}

fn local_arrays_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let e0 = x[0] * x[n - 1];
    let e1 = x[0].sin();
    let e2 = e0 * e1;
    let f = x[0] * 2.0;
    let g: Vec<D> = x.iter().map(|v| *v * (*v + e2)).collect();
    let h = g[1];
    let mut s = c::<D>(0.0);
    for gi in &g {
        s += *gi * f;
    }
    s + e2 + e0 + h * h
}

// ---------------------------------------------------------------- iterator loops

#[autodiff_forward(iter_loops_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(iter_loops_rev, Duplicated, Duplicated, Active)]
fn iter_loops(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += v * v;
    }
    for v in x {
        s = s * 0.5 + *v;
    }
    for (i, v) in x.iter().enumerate() {
        s += *v * i as f64;
    }
    for (a, b) in x.iter().zip(y.iter()) {
        s += a * b * s;
    }
    let mut w = y.to_vec();
    for i in 0..w.len() {
        w[i] = w[i].sin() * s;
    }
    for v in &w {
        s += *v;
    }
    for i in 0..w.len() {
        w[i] *= 2.0;
    }
    for (i, (a, b)) in w.iter().zip(x).enumerate() {
        s -= a * b * (i + 1) as f64 * 0.1;
    }
    s
}

fn iter_loops_o<D: Num>(x: &[D], y: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for v in x {
        s += *v * *v;
    }
    for v in x {
        s = s * 0.5 + *v;
    }
    for (i, v) in x.iter().enumerate() {
        s += *v * i as f64;
    }
    for (a, b) in x.iter().zip(y) {
        s += *a * *b * s;
    }
    let w: Vec<D> = y.iter().map(|v| v.sin() * s).collect();
    for v in &w {
        s += *v;
    }
    for (i, (a, b)) in w.iter().zip(x).enumerate() {
        s -= *a * 2.0 * *b * ((i + 1) as f64 * 0.1);
    }
    s
}

// ---------------------------------------------------------------- reductions

#[autodiff_forward(sums_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(sums_rev, Duplicated, Duplicated, Active)]
fn sums(x: &[f64], y: &[f64]) -> f64 {
    let a = x.iter().sum::<f64>();
    let b: f64 = x.iter().map(|v| v * v).sum();
    let c: f64 = x.iter().zip(y.iter()).map(|(a, b)| a * b).sum();
    let d = (0..x.len()).map(|i| x[i] * y[i] * i as f64).sum::<f64>();
    let e: f64 = y.iter().copied().map(|v| v.exp()).sum();
    let f: f64 = y.iter().cloned().sum();
    a * b + c + d * a + e + f
}

fn sums_o<D: Num>(x: &[D], y: &[D]) -> D {
    let mut a = c::<D>(0.0);
    let mut b = c::<D>(0.0);
    let mut cc = c::<D>(0.0);
    let mut d = c::<D>(0.0);
    let mut e = c::<D>(0.0);
    let mut f = c::<D>(0.0);
    for i in 0..x.len() {
        a += x[i];
        b += x[i] * x[i];
        cc += x[i] * y[i];
        d += x[i] * y[i] * i as f64;
        e += y[i].exp();
        f += y[i];
    }
    a * b + cc + d * a + e + f
}

#[autodiff_forward(folds_fwd, Dual, Dual)]
#[autodiff_reverse(folds_rev, Duplicated, Active)]
fn folds(x: &[f64]) -> f64 {
    let a = x.iter().fold(1.0, |acc, v| acc * 0.5 + v);
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let p: f64 = x.iter().product();
    let q: f64 = x.iter().map(|v| 1.0 + v * 0.1).product();
    let r = x.iter().fold(0.0, |acc, v| acc + v.sin() * a);
    a + m * 2.0 + p + q + r
}

fn folds_o<D: Num>(x: &[D]) -> D {
    let mut a = c::<D>(1.0);
    let mut m = x[0];
    let mut p = c::<D>(1.0);
    let mut q = c::<D>(1.0);
    for v in x {
        a = a * 0.5 + *v;
        if v.re() > m.re() {
            m = *v;
        }
        p *= *v;
        q *= *v * 0.1 + 1.0;
    }
    let mut r = c::<D>(0.0);
    for v in x {
        r += v.sin() * a;
    }
    a + m * 2.0 + p + q + r
}

#[autodiff_forward(collects_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(collects_rev, Duplicated, Duplicated, Active)]
fn collects(x: &[f64], y: &[f64]) -> f64 {
    let u: Vec<f64> = x.iter().map(|v| v.sin()).collect();
    let w = x.iter().zip(y).map(|(a, b)| a - b).collect::<Vec<f64>>();
    let z: Vec<f64> = (0..x.len()).map(|i| u[i] * w[i]).collect();
    let mut s = 0.0;
    for i in 0..z.len() {
        s += z[i] * x[i];
    }
    s + u[0] * w[w.len() - 1]
}

fn collects_o<D: Num>(x: &[D], y: &[D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        s += x[i].sin() * (x[i] - y[i]) * x[i];
    }
    s + x[0].sin() * (x[n - 1] - y[n - 1])
}

// ---------------------------------------------------------------- closures

#[autodiff_forward(closures_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(closures_rev, Duplicated, Active, Active)]
fn closures(x: &[f64], t: f64) -> f64 {
    let k = t * 2.0;
    let f = |v: f64| v * k + t.sin(); // captures active locals
    let rhs = |u: f64, v: f64| (u * v + k, u - v * t); // returns a tuple
    let sq = |u| u * u; // untyped
    let mut s = 0.0;
    for i in 0..x.len() {
        let (a, b) = rhs(x[i], s);
        s = f(a) * 0.5 + b * 0.25;
    }
    let g = |i: usize| x[i] * x[i] * k; // captures the slice
    s + g(0) + sq(s) * 0.1
}

fn closures_o<D: Num>(x: &[D], t: D) -> D {
    let k = t * 2.0;
    let mut s = c::<D>(0.0);
    for xi in x {
        let (a, b) = (*xi * s + k, *xi - s * t);
        s = (a * k + t.sin()) * 0.5 + b * 0.25;
    }
    s + x[0] * x[0] * k + s * s * 0.1
}

// ---------------------------------------------------------------- `&mut [f64]` outputs

/// Writes every output, reading their initial values.
#[autodiff_forward(accumulate_fwd, Dual, Dual)]
#[autodiff_reverse(accumulate_rev, Duplicated, Duplicated)]
fn accumulate(x: &[f64], out: &mut [f64]) {
    let n = x.len();
    for i in 0..n {
        out[i] = x[i].sin() * x[(i + 1) % n] + out[i] * 0.5;
    }
    out[0] *= out[n - 1];
}

fn accumulate_o<D: Num>(x: &[D], out: &mut [D]) -> D {
    let n = x.len();
    for i in 0..n {
        out[i] = x[i].sin() * x[(i + 1) % n] + out[i] * 0.5;
    }
    let last = out[n - 1];
    out[0] *= last;
    c(0.0)
}

/// Overwrites every output without reading it: the cotangent of the initial values is 0.
#[autodiff_forward(overwrite_fwd, Dual, Dual)]
#[autodiff_reverse(overwrite_rev, Duplicated, Duplicated)]
fn overwrite(x: &[f64], out: &mut [f64]) {
    let n = x.len();
    for i in 0..n {
        out[i] = x[i] * x[n - 1 - i];
    }
    let t = out[0];
    for i in 1..n {
        out[i] += t * out[i - 1];
    }
}

fn overwrite_o<D: Num>(x: &[D], out: &mut [D]) -> D {
    let n = x.len();
    for i in 0..n {
        out[i] = x[i] * x[n - 1 - i];
    }
    let t = out[0];
    for i in 1..n {
        let p = out[i - 1];
        out[i] += t * p;
    }
    c(0.0)
}

/// Reads and writes of the same buffer at indices that meet (`i == n - 1 - i`), a swap
/// through a temporary.
#[autodiff_forward(reverse_copy_fwd, Dual)]
#[autodiff_reverse(reverse_copy_rev, Duplicated)]
fn reverse_copy(y: &mut [f64]) {
    let n = y.len();
    for i in 0..n {
        y[i] = y[n - 1 - i] * (2.0 + y[i]);
    }
    let tmp = y[0];
    y[0] = y[n - 1];
    y[n - 1] = tmp * y[0];
}

fn reverse_copy_o<D: Num>(y: &mut [D]) -> D {
    let n = y.len();
    for i in 0..n {
        y[i] = y[n - 1 - i] * (y[i] + 2.0);
    }
    let tmp = y[0];
    y[0] = y[n - 1];
    y[n - 1] = tmp * y[0];
    c(0.0)
}

/// A `move` closure captures the value a local has when the closure is made.
#[autodiff_forward(move_closure_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(move_closure_rev, Active, Active, Active)]
fn move_closure(x: f64, t: f64) -> f64 {
    let mut k = t;
    let g = move |v: f64| v * k;
    k *= 3.0;
    g(x) + k
}

// ---------------------------------------------------------------- properties

/// Rows of `cols` elements.
fn shape<T: Clone>(flat: &[T], cols: usize) -> Vec<Vec<T>> {
    flat.chunks(cols).map(<[T]>::to_vec).collect()
}

fn two(n: usize) -> Vec<usize> {
    vec![n, n]
}
fn one(n: usize) -> Vec<usize> {
    vec![n]
}

// ---------------------------------------------------------------- array patterns

/// `let [a, b] = [..];` from an array literal, and `let [c, d, e] = arr;` from local
/// arrays (their elements copied: writing the array after does not change them).
#[autodiff_forward(array_patterns_fwd, Dual, Dual)]
#[autodiff_reverse(array_patterns_rev, Duplicated, Active)]
fn array_patterns(x: &[f64]) -> f64 {
    let [a, b] = [x[0] * 2.0, x[1].sin()];
    let mut arr = [x[2] * a, b, x[0]];
    let [c, d, e] = arr;
    arr[0] = 0.5;
    let [u, _, w] = arr;
    a * b + c * d - e * u + w * w
}

fn array_patterns_o<D: Num>(x: &[D]) -> D {
    let (a, b) = (x[0] * 2.0, x[1].sin());
    let (c, d, e) = (x[2] * a, b, x[0]);
    a * b + c * d - e * 0.5 + x[0] * x[0]
}

/// A vector read between its pushes (a running recurrence kept in a `Vec`).
#[autodiff_forward(pushed_and_read_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_and_read_rev, Duplicated, Active)]
fn pushed_and_read(x: &[f64]) -> f64 {
    let mut v = Vec::new();
    let mut s = 0.0;
    for i in 0..x.len() {
        let prev = if i > 0 { v[i - 1] } else { 1.0 };
        v.push(x[i] * x[i] + prev * x[0]);
        s += v[i] * x[0];
    }
    s + v[v.len() - 1].sin()
}

fn pushed_and_read_o<D: Num>(x: &[D]) -> D {
    let mut v: Vec<D> = Vec::new();
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        let prev = if i > 0 { v[i - 1] } else { c(1.0) };
        v.push(x[i] * x[i] + prev * x[0]);
        s += v[i] * x[0];
    }
    s + v[v.len() - 1].sin()
}

/// A vector grown by `extend_from_slice` and `extend` (from slices, a local vector, its
/// copy, an array written in place and iterator chains), then read in a recurrence.
#[autodiff_forward(extended_fwd, Dual, Dual)]
#[autodiff_reverse(extended_rev, Duplicated, Active)]
fn extended(x: &[f64]) -> f64 {
    let mut v: Vec<f64> = Vec::with_capacity(6 * x.len());
    v.extend_from_slice(&x[1..]);
    v.extend_from_slice(x);
    let w = vec![x[0] * 2.0; 2];
    v.extend_from_slice(&w);
    v.extend(x.iter().map(|a| a.sin()));
    v.extend(x.iter());
    v.extend(&w);
    v.extend(x.iter().copied().rev());
    v.extend(w.clone());
    v.extend([x[0] * 3.0, x[0].sin()]);
    let mut s = 0.0;
    for i in 0..v.len() {
        s = s * 0.9 + v[i] * v[i] * (i as f64 + 1.0);
    }
    s
}

fn extended_o<D: Num>(x: &[D]) -> D {
    let mut v: Vec<D> = x[1..].to_vec();
    v.extend(x.iter().copied());
    v.extend([x[0] * 2.0; 2]);
    v.extend(x.iter().map(|a| a.sin()));
    v.extend(x.iter().copied());
    v.extend([x[0] * 2.0; 2]);
    v.extend(x.iter().copied().rev());
    v.extend([x[0] * 2.0; 2]);
    v.extend([x[0] * 3.0, x[0].sin()]);
    let mut s = c::<D>(0.0);
    for (i, e) in v.iter().enumerate() {
        s = s * 0.9 + *e * *e * (i as f64 + 1.0);
    }
    s
}

/// A vector reused across rounds: emptied by `clear` or `= Vec::new()`, refilled by
/// `push`, `truncate`d and `resize`d with an active fill value.
#[autodiff_forward(reused_vector_fwd, Dual, Dual)]
#[autodiff_reverse(reused_vector_rev, Duplicated, Active)]
fn reused_vector(x: &[f64]) -> f64 {
    let mut buf = Vec::new();
    let mut s = 0.0;
    for r in 0..3 {
        if r == 1 {
            buf = Vec::new();
        } else {
            buf.clear();
        }
        for i in 0..x.len() {
            buf.push(x[i] * (r as f64 + 1.0) + s * 0.1);
        }
        buf.truncate(x.len() - r.min(x.len() - 1));
        buf.resize(x.len() + 1, x[0] * 0.5);
        buf.truncate(x.len() + 3);
        for i in 0..buf.len() {
            s += buf[i] * buf[i];
        }
        s = s.sin();
    }
    buf.resize(1, 0.0);
    s + buf[0] * buf.len() as f64
}

fn reused_vector_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    let mut first = c::<D>(0.0);
    for r in 0..3usize {
        let kept = n - r.min(n - 1);
        let mut buf: Vec<D> = (0..kept)
            .map(|i| x[i] * (r as f64 + 1.0) + s * 0.1)
            .collect();
        while buf.len() < n + 1 {
            buf.push(x[0] * 0.5);
        }
        for b in &buf {
            s += *b * *b;
        }
        s = s.sin();
        first = buf[0];
    }
    s + first
}

/// Copies of local arrays (`let p = s;`, `let mut t = s;`, `let mut s = *x;`) are copies:
/// writing `s` after leaves them as they were (explicit Euler steps of the Lorenz system,
/// each reading the state before the step).
#[autodiff_forward(array_copies_fwd, Dual, Dual)]
#[autodiff_reverse(array_copies_rev, Duplicated, Active)]
fn array_copies(x: &[f64]) -> f64 {
    let mut s = [x[0], x[1], x[2]];
    let dt = 0.01;
    for _ in 0..4 {
        let p = s;
        s[0] += dt * 10.0 * (p[1] - p[0]);
        s[1] += dt * (p[0] * (28.0 - p[2]) - p[1]);
        s[2] += dt * (p[0] * p[1] - 8.0 / 3.0 * p[2]);
    }
    let mut t = s;
    t[0] = s[1] * s[2];
    let old = t;
    t[1] = old[0] + old[2];
    s[0] * t[0] + t[1] * old[1] + s[2]
}

/// `let mut s = *x;` of an array parameter: a copy, written without writing `x`.
#[autodiff_forward(deref_copy_fwd, Dual, Dual)]
#[autodiff_reverse(deref_copy_rev, Duplicated, Active)]
fn deref_copy(x: &[f64; 3]) -> f64 {
    let mut s = *x;
    s[0] = s[1] * s[2];
    s[1] = x[0] * s[0];
    s[0] + s[1] * x[1] + s[2]
}

fn deref_copy_o<D: Num>(x: &[D]) -> D {
    let s0 = x[1] * x[2];
    s0 + x[0] * s0 * x[1] + x[2]
}

fn array_copies_o<D: Num>(x: &[D]) -> D {
    let mut s = [x[0], x[1], x[2]];
    let dt = 0.01;
    for _ in 0..4 {
        let [a, b, c] = s;
        s = [
            a + (b - a) * (dt * 10.0),
            b + (a * (-c + 28.0) - b) * dt,
            c + (a * b - c * (8.0 / 3.0)) * dt,
        ];
    }
    let t0 = s[1] * s[2];
    let t1 = t0 + s[2];
    s[0] * t0 + t1 * s[1] + s[2]
}

/// Rows assigned whole (`k[stage] = [..]`, the stages of a Runge-Kutta step;
/// `m[i] = vec![..]` of a matrix of `Vec`s), a `Vec` of arrays written out, and copies
/// of rows (`let prev = k[1];`, `let mut t = k[0];`, `m[1].clone()`) that later writes
/// leave alone, and rows assigned copies of rows (`k[3] = k[1];`, `m[0] = m[1].clone();`).
// `vec!` of arrays is part of the language under test.
#[allow(clippy::useless_vec)]
#[autodiff_forward(rows_assigned_fwd, Dual, Dual)]
#[autodiff_reverse(rows_assigned_rev, Duplicated, Active)]
fn rows_assigned(x: &[f64]) -> f64 {
    let (a, h) = (x[0], 0.1);
    let mut y = [x[1], x[2]];
    let mut k = [[0.0; 2]; 4];
    for _ in 0..3 {
        k[0] = [y[1], -a * y[0].sin()];
        k[1] = [
            y[1] + 0.5 * h * k[0][1],
            -a * (y[0] + 0.5 * h * k[0][0]).sin(),
        ];
        k[2] = [
            y[1] + 0.5 * h * k[1][1],
            -a * (y[0] + 0.5 * h * k[1][0]).sin(),
        ];
        k[3] = [y[1] + h * k[2][1], -a * (y[0] + h * k[2][0]).sin()];
        for j in 0..2 {
            y[j] += h / 6.0 * (k[0][j] + 2.0 * k[1][j] + 2.0 * k[2][j] + k[3][j]);
        }
    }
    let pts = vec![[y[0], y[1]], [x[1] * a, y[0]]];
    let mut m = vec![vec![0.0; 2]; 2];
    m[1] = vec![pts[0][1] * x[2], pts[1][0]];
    m[0] = vec![m[1][1], m[1][0] + pts[0][0]];
    let prev = k[1];
    k[1][0] = prev[1] * 2.0;
    let mut t = k[0];
    t[1] += prev[0];
    let r = m[1].clone();
    m[1][0] = r[1] * 3.0;
    k[3] = k[1];
    m[0] = m[1].clone();
    m[0][0] * m[0][1] + m[1][0] + pts[1][1] + k[1][0] * t[1] + prev[0] + m[1][0] * r[0] - k[3][0]
}

/// A row assigned a `vec!` of another length: the primal allows it, the companions,
/// which write the row element by element, refuse it.
#[autodiff_reverse(row_resized_rev, Duplicated, Active)]
fn row_resized(x: &[f64]) -> f64 {
    let mut m = vec![vec![0.0; 2]; 2];
    m[0] = vec![x[0], x[1], x[2]];
    m[0][2] * m[1][1]
}

#[test]
#[should_panic(expected = "rows keep their length")]
fn a_row_assigned_another_length_is_refused() {
    let x = [1.0, 2.0, 3.0];
    assert_eq!(row_resized(&x), 0.0);
    row_resized_rev(&x, &mut [0.0; 3], 1.0);
}

/// A local matrix assigned a `vec!` of another number of rows: the companions, which
/// write it row by row, refuse it (they would keep an old row, or write past the end).
#[autodiff_reverse(rows_recounted_rev, Duplicated, Const, Active)]
fn rows_recounted(x: &[f64], rows: usize) -> f64 {
    let mut pts = vec![[x[0], 1.0], [2.0, x[1]]];
    let s0 = pts[0][0] * pts[1][1];
    if rows == 3 {
        pts = vec![[x[1], x[0]], [x[0], 3.0], [x[1], x[1]]];
    } else {
        pts = vec![[x[1], x[0]]];
    }
    s0 + pts[0][0] * pts[0][1] + pts.len() as f64
}

#[test]
#[should_panic(expected = "differentiated code assigns 3 rows to a matrix of 2")]
fn a_matrix_assigned_more_rows_is_refused() {
    let x = [1.0, 2.0];
    assert_eq!(rows_recounted(&x, 3), 2.0 + 2.0 + 3.0);
    rows_recounted_rev(&x, &mut [0.0; 2], 3, 1.0);
}

#[test]
#[should_panic(expected = "differentiated code assigns 1 rows to a matrix of 2")]
fn a_matrix_assigned_fewer_rows_is_refused() {
    let x = [1.0, 2.0];
    assert_eq!(rows_recounted(&x, 1), 2.0 + 2.0 + 1.0);
    rows_recounted_rev(&x, &mut [0.0; 2], 1, 1.0);
}

/// Matrix literals whose rows mix written-out values with a repeated constant.
#[allow(clippy::useless_vec)]
#[autodiff_forward(repeated_rows_fwd, Dual, Dual)]
#[autodiff_reverse(repeated_rows_rev, Duplicated, Active)]
fn repeated_rows(x: &[f64]) -> f64 {
    let mut k = [[x[0], x[1]], [0.0; 2]];
    k[1][0] = x[2] * k[0][0];
    let m = vec![vec![1.5; 2], vec![x[1], x[2] * x[0]]];
    k[1][0] * k[0][1] + k[1][1] + m[0][1] * m[1][1] - m[1][0] * m[0][0]
}

/// A mutable copy of a row of a matrix literal that the function indexes only once.
#[autodiff_forward(row_of_literal_fwd, Dual, Dual)]
#[autodiff_reverse(row_of_literal_rev, Duplicated, Active)]
fn row_of_literal(x: &[f64]) -> f64 {
    let k = [[x[0], x[1], x[2]], [x[2], x[0], x[1]]];
    let mut acc = 0.0;
    for i in 0..2 {
        let mut t = k[(i + 1) % 2];
        t[0] += x[0];
        acc += t[0] * t[1];
    }
    acc
}

/// A local vector assigned a clone of a row of a local matrix in a loop
/// (`xp = h[r].clone();`), then read and written.
#[autodiff_forward(row_clones_fwd, Dual, Dual)]
#[autodiff_reverse(row_clones_rev, Duplicated, Active)]
fn row_clones(x: &[f64]) -> f64 {
    let n = x.len();
    let mut h = vec![vec![0.0; n]; 2];
    for r in 0..2 {
        for c in 0..n {
            h[r][c] = x[c] * x[(c + r) % n] + 1.0;
        }
    }
    let mut xp = x.to_vec();
    let mut s = 0.0;
    for r in 0..2 {
        s += xp[0] * xp[n - 1];
        xp = h[r].clone();
        xp[0] *= x[n - 1];
        s += xp[0] * xp[n - 1];
    }
    s + xp[n - 1]
}

fn row_clones_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let h: Vec<Vec<D>> = (0..2)
        .map(|r| (0..n).map(|c| x[c] * x[(c + r) % n] + 1.0).collect())
        .collect();
    let mut xp = x.to_vec();
    let mut s = c::<D>(0.0);
    for r in 0..2 {
        s += xp[0] * xp[n - 1];
        xp = h[r].clone();
        xp[0] *= x[n - 1];
        s += xp[0] * xp[n - 1];
    }
    s + xp[n - 1]
}

fn row_of_literal_o<D: Num>(x: &[D]) -> D {
    // i = 0 copies row 1, i = 1 copies row 0.
    (x[2] + x[0]) * x[0] + (x[0] + x[0]) * x[1]
}

fn repeated_rows_o<D: Num>(x: &[D]) -> D {
    let k10 = x[2] * x[0];
    k10 * x[1] + x[2] * x[0] * 1.5 - x[1] * 1.5
}

/// Rows of a vector of arrays assigned whole through `iter_mut()` (`*p = [..]`), alone and
/// zipped with `chunks_exact`.
#[autodiff_forward(rows_through_iter_mut_fwd, Dual, Dual)]
#[autodiff_reverse(rows_through_iter_mut_rev, Duplicated, Active)]
fn rows_through_iter_mut(x: &[f64]) -> f64 {
    let mut pts = vec![[0.0; 2]; 2];
    for p in pts.iter_mut() {
        *p = [x[0].sin(), x[1] * x[0]];
    }
    let mut s = pts[0][1] * pts[1][0];
    for (p, c) in pts.iter_mut().zip(x.chunks_exact(2)) {
        *p = [c[0] * 2.0, c[1].exp()];
    }
    s += pts[0][0] * pts[1][1] + pts[0][1];
    s
}

fn rows_through_iter_mut_o<D: Num>(x: &[D]) -> D {
    x[1] * x[0] * x[0].sin() + x[0] * 2.0 * x[3].exp() + x[1].exp()
}

/// A whole local matrix assigned again: from a literal that reads it (a covariance
/// update), and from another matrix.
#[autodiff_forward(matrix_assigned_fwd, Dual, Dual)]
#[autodiff_reverse(matrix_assigned_rev, Duplicated, Active)]
fn matrix_assigned(x: &[f64]) -> f64 {
    let mut p = [[x[0], 0.0], [0.0, x[1]]];
    for _ in 0..2 {
        p = [
            [p[0][0] * x[2], p[0][1] + p[1][0]],
            [p[1][0] + x[0], p[1][1] * 0.5],
        ];
    }
    let q = [[p[1][1], x[1]], [p[0][0], p[0][1]]];
    p = q;
    p[0][0] * p[1][0] + p[0][1] * p[1][1].sin()
}

fn matrix_assigned_o<D: Num>(x: &[D]) -> D {
    let z = D::zero();
    let mut p = [[x[0], z], [z, x[1]]];
    for _ in 0..2 {
        p = [
            [p[0][0] * x[2], p[0][1] + p[1][0]],
            [p[1][0] + x[0], p[1][1] * 0.5],
        ];
    }
    let p = [[p[1][1], x[1]], [p[0][0], p[0][1]]];
    p[0][0] * p[1][0] + p[0][1] * p[1][1].sin()
}

fn rows_assigned_o<D: Num>(x: &[D]) -> D {
    let (a, h) = (x[0], 0.1);
    let mut y = [x[1], x[2]];
    let f = |y0: D, y1: D| [y1, -a * y0.sin()];
    let (mut k0, mut k1) = ([c::<D>(0.0); 2], [c::<D>(0.0); 2]);
    for _ in 0..3 {
        k0 = f(y[0], y[1]);
        k1 = f(y[0] + k0[0] * (0.5 * h), y[1] + k0[1] * (0.5 * h));
        let k2 = f(y[0] + k1[0] * (0.5 * h), y[1] + k1[1] * (0.5 * h));
        let k3 = f(y[0] + k2[0] * h, y[1] + k2[1] * h);
        for j in 0..2 {
            y[j] += (k0[j] + k1[j] * 2.0 + k2[j] * 2.0 + k3[j]) * (h / 6.0);
        }
    }
    let m1 = [y[1] * x[2], x[1] * a];
    let m10 = m1[1] * 3.0;
    m10 * m1[1] + m10 + y[0] + k1[1] * 2.0 * (k0[1] + k1[0]) + k1[0] + m10 * m1[0] - k1[1] * 2.0
}

/// Rows of a `&mut [[f64; 2]]` parameter assigned whole.
#[autodiff_forward(write_rows_fwd, Dual, Dual)]
#[autodiff_reverse(write_rows_rev, Duplicated, Duplicated)]
fn write_rows(x: &[f64], out: &mut [[f64; 2]]) {
    out[0] = [x[0] * x[1], x[0]];
    out[1] = [x[1].sin(), out[0][0] + x[1]];
}

/// Rows of a `&[[f64; 2]]` parameter copied whole (`let p = pts[1];`), outside and
/// inside a loop.
#[autodiff_forward(copied_rows_fwd, Dual, Dual)]
#[autodiff_reverse(copied_rows_rev, Duplicated, Active)]
fn copied_rows(pts: &[[f64; 2]]) -> f64 {
    let p = pts[1];
    let mut s = p[0] * p[1];
    for i in 0..pts.len() {
        let q = pts[i];
        s += q[0] * q[1].sin();
    }
    s
}

fn copied_rows_o<D: Num>(x: &[D]) -> D {
    let mut s = x[2] * x[3];
    for i in 0..x.len() / 2 {
        s += x[2 * i] * x[2 * i + 1].sin();
    }
    s
}

/// A `&mut` array parameter assigned whole, from a literal and from a local array.
#[autodiff_forward(assigned_through_fwd, Dual, Dual)]
fn assigned_through(x: &[f64], r: &mut [f64; 2]) {
    *r = [x[0] * x[1], x[0].sin()];
    let t = [r[1] + x[1], r[0] * r[1]];
    *r = t;
}

fn assigned_through_o<D: Num>(x: &[D]) -> [D; 2] {
    let r = [x[0] * x[1], x[0].sin()];
    [r[1] + x[1], r[0] * r[1]]
}

/// [`assigned_through`] reached through a call, in both modes and for H·v.
#[autodiff_forward(through_deref_fwd, Dual, Dual)]
#[autodiff_reverse(through_deref_rev, Duplicated, Active)]
fn through_deref(x: &[f64]) -> f64 {
    let mut r = [0.0, 1.0];
    assigned_through(x, &mut r);
    r[0] * r[1] + r[1]
}

fn through_deref_o<D: Num>(x: &[D]) -> D {
    let r = assigned_through_o(x);
    r[0] * r[1] + r[1]
}

#[differentiable]
fn det2(m: &[[f64; 2]; 2]) -> f64 {
    m[0][0] * m[1][1] - m[0][1] * m[1][0]
}

/// Matrices written in place as arguments (`det2(&[[a, b], [c, d]])`), in a loop too.
#[autodiff_forward(matrices_in_place_fwd, Dual, Dual)]
#[autodiff_reverse(matrices_in_place_rev, Duplicated, Active)]
fn matrices_in_place(x: &[f64]) -> f64 {
    let mut s = det2(&[[x[1], x[0]], [x[3] * x[0], x[2]]]);
    for i in 0..x.len() - 1 {
        s += det2(&[[x[i], 1.0], [x[i + 1].sin(), x[i]]]);
    }
    s
}

fn matrices_in_place_o<D: Num>(x: &[D]) -> D {
    let det = |a: D, b: D, c: D, d: D| a * d - b * c;
    let mut s = det(x[1], x[0], x[3] * x[0], x[2]);
    for i in 0..x.len() - 1 {
        s += det(x[i], c(1.0), x[i + 1].sin(), x[i]);
    }
    s
}

/// [`copied_rows`] reached through a call, for H·v.
#[autodiff_reverse(copied_rows_called_rev, Duplicated, Active)]
fn copied_rows_called(x: &[f64]) -> f64 {
    let pts = [[x[0], x[1]], [x[2], x[3]]];
    copied_rows(&pts)
}

#[differentiable]
fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

/// Arrays and vectors written in place: given to a call by reference, and iterated over.
// `vec!` where an array would do is part of the language under test.
#[allow(clippy::useless_vec)]
#[autodiff_forward(in_place_fwd, Dual, Dual)]
#[autodiff_reverse(in_place_rev, Duplicated, Active)]
fn in_place(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let t: f64 = [x[i], x[i + 1] * x[i]].iter().map(|a| a.sin()).sum();
        s += norm(&[x[i], x[i + 1] * x[i + 1], 0.5]) * t + [x[i]; 3].iter().sum::<f64>();
        s += norm(&vec![x[i + 1], 1.0]) * vec![x[i]; 2].iter().sum::<f64>();
    }
    s
}

fn in_place_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() - 1 {
        let t = x[i].sin() + (x[i + 1] * x[i]).sin();
        let q = x[i + 1] * x[i + 1];
        s += (x[i] * x[i] + q * q + 0.25).sqrt() * t + x[i] * 3.0;
        s += (x[i + 1] * x[i + 1] + 1.0).sqrt() * (x[i] * 2.0);
    }
    s
}

/// Explicit heat steps on a grid of rows, each reading a copy of the last
/// (`let old = u.clone();` of a `Vec<Vec<f64>>`).
#[autodiff_forward(heat_fwd, Dual, Dual)]
#[autodiff_reverse(heat_rev, Duplicated, Active)]
fn heat(x: &[f64]) -> f64 {
    let n = 3;
    let mut u = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..n {
            u[i][j] = x[(i * n + j) % x.len()];
        }
    }
    for _ in 0..2 {
        let old = u.clone();
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                let lap = old[i - 1][j] + old[i + 1][j] + old[i][j - 1] + old[i][j + 1];
                u[i][j] = old[i][j] + 0.1 * (lap - 4.0 * old[i][j]) * old[i][j];
            }
        }
    }
    u[1][1] * u[1][1] + u[0][1] * u[1][1]
}

fn heat_o<D: Num>(x: &[D]) -> D {
    let n = 3;
    let mut u: Vec<Vec<D>> = (0..n)
        .map(|i| (0..n).map(|j| x[(i * n + j) % x.len()]).collect())
        .collect();
    for _ in 0..2 {
        let old = u.clone();
        let lap = old[0][1] + old[2][1] + old[1][0] + old[1][2];
        u[1][1] = old[1][1] + (lap - old[1][1] * 4.0) * old[1][1] * 0.1;
    }
    u[1][1] * u[1][1] + u[0][1] * u[1][1]
}

/// Arrays pushed onto a vector of arrays (`ps.push([a, b])`, `ps.push([c; 2])`), then
/// read back by index.
#[autodiff_forward(pushed_pairs_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_pairs_rev, Duplicated, Active)]
fn pushed_pairs(x: &[f64]) -> f64 {
    let mut ps: Vec<[f64; 2]> = Vec::new();
    for i in 0..x.len() - 1 {
        ps.push([x[i], x[i + 1] * x[i]]);
    }
    ps.push([x[0].sin(); 2]);
    let mut s = 0.0;
    for p in &ps {
        s += p[0] * p[1].cos();
    }
    s + ps[0][1] * ps[ps.len() - 1][0]
}

fn pushed_pairs_o<N: Num>(x: &[N]) -> N {
    let mut ps: Vec<[N; 2]> = Vec::new();
    for i in 0..x.len() - 1 {
        ps.push([x[i], x[i + 1] * x[i]]);
    }
    ps.push([x[0].sin(); 2]);
    let mut s = c::<N>(0.0);
    for p in &ps {
        s += p[0] * p[1].cos();
    }
    s + ps[0][1] * ps[ps.len() - 1][0]
}

/// A trajectory whose first state is pushed as a literal of constants (`xs.push([1.0,
/// 0.0])`), the vector's written type the only one its elements have, then each state
/// taken apart (`let [p, v] = xs[t];`).
#[autodiff_forward(trajectory_fwd, Dual, Dual)]
#[autodiff_reverse(trajectory_rev, Duplicated, Active)]
fn trajectory(u: &[f64]) -> f64 {
    let mut xs: Vec<[f64; 2]> = Vec::new();
    xs.push([1.0, 0.0]);
    for t in 0..u.len() {
        let [p, v] = xs[t];
        xs.push([p + 0.1 * v, v + 0.1 * (u[t] - p.sin())]);
    }
    xs[u.len()][0] * xs[u.len()][1]
}

fn trajectory_o<N: Num>(u: &[N]) -> N {
    let (mut p, mut v) = (c::<N>(1.0), c::<N>(0.0));
    for ut in u {
        (p, v) = (p + v * 0.1, v + (*ut - p.sin()) * 0.1);
    }
    p * v
}

/// Arrays bound to locals, then pushed (`let p = [a, b]; ps.push(p)`); one local is
/// written again between its pushes, so each push must copy the value it had then.
#[autodiff_forward(pushed_locals_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_locals_rev, Duplicated, Active)]
fn pushed_locals(x: &[f64]) -> f64 {
    let mut ps: Vec<[f64; 2]> = Vec::new();
    let mut q = [x[0]; 2];
    for i in 0..x.len() - 1 {
        let p = [x[i] * x[i + 1], x[i + 1].exp()];
        ps.push(p);
        q[1] = q[1] * x[i + 1] + p[0];
        ps.push(q);
    }
    let mut s = 0.0;
    for p in &ps {
        s += p[0] * p[1].sin();
    }
    s + q[0] * q[1]
}

fn pushed_locals_o<N: Num>(x: &[N]) -> N {
    let mut ps: Vec<[N; 2]> = Vec::new();
    let mut q = [x[0]; 2];
    for i in 0..x.len() - 1 {
        let p = [x[i] * x[i + 1], x[i + 1].exp()];
        ps.push(p);
        q[1] = q[1] * x[i + 1] + p[0];
        ps.push(q);
    }
    let mut s = c::<N>(0.0);
    for p in &ps {
        s += p[0] * p[1].sin();
    }
    s + q[0] * q[1]
}

/// Matrices written with repeated rows: `[[x[0]; 2], [x[1]; 2]]`, `[[0.0; 3]; 2]`,
/// `vec![[x[0]; 2]; 3]`, `vec![vec![x[1]; 2]; 2]`, and a `&mut` matrix reset with
/// `*r = [[0.0; 2]; 2]` by a callee.
#[allow(clippy::useless_vec)]
#[autodiff_forward(row_repeats_fwd, Dual, Dual)]
#[autodiff_reverse(row_repeats_rev, Duplicated, Active)]
fn row_repeats(x: &[f64]) -> f64 {
    let m = [[x[0]; 2], [x[1]; 2]];
    let mut z = [[0.0; 3]; 2];
    for i in 0..2 {
        for j in 0..3 {
            z[i][j] = m[i][j % 2] * x[j % x.len()];
        }
    }
    let mut r = [[1.0; 2]; 2];
    reset_corner(&mut r, x[0]);
    // A vector of one repeated row, of arrays and of vectors.
    let mut v = vec![[x[0]; 2]; 3];
    v[1][0] *= x[1];
    let w = vec![vec![x[1]; 2]; 2];
    m[0][1] * m[1][0] + z[1][2].sin() + z[0][0] * r[0][1] + r[1][1] + v[1][0] * v[2][1] - w[1][0]
}

#[differentiable]
fn reset_corner(r: &mut [[f64; 2]; 2], a: f64) {
    *r = [[0.0; 2]; 2];
    r[0][1] += a * a;
}

fn row_repeats_o<N: Num>(x: &[N]) -> N {
    let m = [[x[0], x[0]], [x[1], x[1]]];
    let n = x.len();
    let z = |i: usize, j: usize| m[i][j % 2] * x[j % n];
    m[0][1] * m[1][0] + z(1, 2).sin() + z(0, 0) * x[0] * x[0] + x[0] * x[1] * x[0] - x[1]
}

/// Rows of a parameter of rows pushed onto a vector of arrays, directly and through a
/// local copy (de Casteljau's control points, copied before they are blended).
#[autodiff_forward(pushed_rows_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_rows_rev, Duplicated, Active)]
fn pushed_rows(ctrl: &[[f64; 2]]) -> f64 {
    let mut pts: Vec<[f64; 2]> = Vec::new();
    for i in 0..ctrl.len() {
        if i % 2 == 0 {
            pts.push(ctrl[i]);
        } else {
            let c = ctrl[i];
            pts.push(c);
        }
    }
    let t = 0.3;
    for k in 1..pts.len() {
        for i in 0..pts.len() - k {
            pts[i][0] = (1.0 - t) * pts[i][0] + t * pts[i + 1][0];
            pts[i][1] = (1.0 - t) * pts[i][1] + t * pts[i + 1][1];
        }
    }
    pts[0][0] * pts[0][1].sin()
}

fn pushed_rows_o<N: Num>(x: &[N]) -> N {
    let mut pts: Vec<[N; 2]> = x.chunks(2).map(|r| [r[0], r[1]]).collect();
    let t = 0.3;
    for k in 1..pts.len() {
        for i in 0..pts.len() - k {
            pts[i][0] = pts[i][0] * (1.0 - t) + pts[i + 1][0] * t;
            pts[i][1] = pts[i][1] * (1.0 - t) + pts[i + 1][1] * t;
        }
    }
    pts[0][0] * pts[0][1].sin()
}

/// A mutable copy of a matrix parameter, written in place: two Gram–Schmidt steps
/// against the first column.
#[differentiable]
#[autodiff_forward(matrix_copy_fwd, Dual, Dual)]
#[autodiff_reverse(matrix_copy_rev, Duplicated, Active)]
fn matrix_copy(a: &[[f64; 3]; 3]) -> f64 {
    let mut q = *a;
    for j in 1..3 {
        let mut d = 0.0;
        for i in 0..3 {
            d += q[i][0] * q[i][j];
        }
        for i in 0..3 {
            q[i][j] -= d * q[i][0];
        }
    }
    q[0][1] * q[2][2] + q[1][1].sin() + a[0][0] * q[1][2]
}

/// [`matrix_copy`] of a matrix built from a slice (for the H·v check).
#[autodiff_reverse(matrix_copy_caller_rev, Duplicated, Active)]
fn matrix_copy_caller(x: &[f64]) -> f64 {
    let a = [[x[0], x[1], x[2]], [x[3], x[4], x[5]], [x[6], x[7], x[8]]];
    matrix_copy(&a)
}

fn matrix_copy_o<N: Num>(x: &[N]) -> N {
    let mut q: Vec<Vec<N>> = x.chunks(3).map(|r| r.to_vec()).collect();
    for j in 1..3 {
        let mut d = c::<N>(0.0);
        for i in 0..3 {
            d += q[i][0] * q[i][j];
        }
        for i in 0..3 {
            q[i][j] = q[i][j] - d * q[i][0];
        }
    }
    q[0][1] * q[2][2] + q[1][1].sin() + x[0] * q[1][2]
}

/// A `&Vec<f64>` parameter cloned, its copy cloned again and written: the second copy
/// is a value of its own in every companion, the nested ones included.
#[differentiable]
#[autodiff_forward(cloned_twice_fwd, Dual, Dual)]
#[autodiff_reverse(cloned_twice_rev, Duplicated, Active)]
#[allow(clippy::ptr_arg)]
fn cloned_twice(x: &Vec<f64>) -> f64 {
    let y = x.clone();
    let mut z = y.clone();
    z[0] = 3.0 * z[z.len() - 1];
    y[0] * z[0] + z.iter().map(|v| v.sin()).sum::<f64>()
}

/// [`cloned_twice`] through a call, over a slice (for the H·v check).
#[differentiable]
#[autodiff_reverse(cloned_caller_rev, Duplicated, Active)]
fn cloned_caller(x: &[f64]) -> f64 {
    let v = x.to_vec();
    cloned_twice(&v)
}

fn cloned_twice_o<N: Num>(x: &[N]) -> N {
    let n = x.len();
    let mut z = x.to_vec();
    z[0] = z[n - 1] * 3.0;
    x[0] * z[0] + z.iter().map(|v| v.sin()).sum::<N>()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arrays_pushed_onto_a_vector((x, v, s0) in slice_case(-1.2, 1.2, 2..8, 0), s in seed()) {
        check_slice("pushed_pairs", (&x, &v, &s0, s), pushed_pairs, pushed_pairs_fwd, pushed_pairs_rev, pushed_pairs_o::<Dual64>);
        check_hvp_of::<pushed_pairs_rev>(&x, &v, pushed_pairs_o);
        check_slice("pushed_locals", (&x, &v, &s0, s), pushed_locals, pushed_locals_fwd, pushed_locals_rev, pushed_locals_o::<Dual64>);
        check_hvp_of::<pushed_locals_rev>(&x, &v, pushed_locals_o);
        check_slice("trajectory", (&x, &v, &s0, s), trajectory, trajectory_fwd, trajectory_rev, trajectory_o::<Dual64>);
        check_hvp_of::<trajectory_rev>(&x, &v, trajectory_o);
    }

    #[test]
    fn matrices_of_repeated_rows((x, v, s0) in slice_case(-1.5, 1.5, 2..5, 0), s in seed()) {
        check_slice("row_repeats", (&x, &v, &s0, s), row_repeats, row_repeats_fwd, row_repeats_rev, row_repeats_o::<Dual64>);
        check_hvp_of::<row_repeats_rev>(&x, &v, row_repeats_o);
    }

    #[test]
    fn rows_of_a_parameter_pushed(x in vecf(-1.5, 1.5, 8), v in dirs(8), s in seed()) {
        let rows = |z: &[f64]| z.chunks(2).map(|r| [r[0], r[1]]).collect::<Vec<[f64; 2]>>();
        let (ctrl, dctrl) = (rows(&x), rows(&v));
        let mut g = vec![[0.0; 2]; 4];
        let r = pushed_rows_rev(&ctrl, &mut g, s);
        let got = Got {
            primal: pushed_rows(&ctrl),
            fwd: pushed_rows_fwd(&ctrl, &dctrl),
            rev: r,
            grad: g.concat(),
        };
        check_scalar("pushed_rows", &x, &v, s, got, pushed_rows_o::<Dual64>);
    }

    #[test]
    fn a_mutable_copy_of_a_matrix_parameter(x in vecf(-1.2, 1.2, 9), v in dirs(9), s in seed()) {
        let m = |z: &[f64]| [[z[0], z[1], z[2]], [z[3], z[4], z[5]], [z[6], z[7], z[8]]];
        let mut g = [[0.0; 3]; 3];
        let r = matrix_copy_rev(&m(&x), &mut g, s);
        let got = Got {
            primal: matrix_copy(&m(&x)),
            fwd: matrix_copy_fwd(&m(&x), &m(&v)),
            rev: r,
            grad: g.concat(),
        };
        check_scalar("matrix_copy", &x, &v, s, got, matrix_copy_o::<Dual64>);
        check_hvp_of::<matrix_copy_caller_rev>(&x, &v, matrix_copy_o);
    }

    #[test]
    fn a_copy_of_a_copy((x, v, s0) in slice_case(-1.2, 1.2, 1..6, 0), s in seed()) {
        check_slice(
            "cloned_twice",
            (&x, &v, &s0, s),
            |x| cloned_twice(&x.to_vec()),
            |x, dx| cloned_twice_fwd(&x.to_vec(), &dx.to_vec()),
            |x, dx, s| {
                let mut d = dx.to_vec();
                let f = cloned_twice_rev(&x.to_vec(), &mut d, s);
                dx.copy_from_slice(&d);
                f
            },
            cloned_twice_o::<Dual64>,
        );
        check_hvp_of::<cloned_caller_rev>(&x, &v, cloned_twice_o);
    }

    #[test]
    fn a_copied_grid_of_rows((x, v, s0) in slice_case(-1.2, 1.2, 2..10, 0), s in seed()) {
        check_slice("heat", (&x, &v, &s0, s), heat, heat_fwd, heat_rev, heat_o::<Dual64>);
        check_hvp_of::<heat_rev>(&x, &v, heat_o);
    }

    #[test]
    fn arrays_written_in_place((x, v, s0) in slice_case(-1.2, 1.2, 2..6, 0), s in seed()) {
        check_slice("in_place", (&x, &v, &s0, s), in_place, in_place_fwd, in_place_rev, in_place_o::<Dual64>);
        check_hvp_of::<in_place_rev>(&x, &v, in_place_o);
    }

    #[test]
    fn vectors_read_between_pushes((x, v, s0) in slice_case(-1.0, 1.0, 1..5, 0), s in seed()) {
        check_slice(
            "pushed_and_read",
            (&x, &v, &s0, s),
            pushed_and_read,
            pushed_and_read_fwd,
            pushed_and_read_rev,
            pushed_and_read_o::<Dual64>,
        );
        check_hvp_of::<pushed_and_read_rev>(&x, &v, pushed_and_read_o);
    }

    #[test]
    fn vectors_grown_by_extend((x, v, s0) in slice_case(-1.0, 1.0, 1..5, 0), s in seed()) {
        check_slice("extended", (&x, &v, &s0, s), extended, extended_fwd, extended_rev, extended_o::<Dual64>);
        check_hvp_of::<extended_rev>(&x, &v, extended_o);
    }

    #[test]
    fn matrix_literals_with_repeated_rows((x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed()) {
        check_slice("repeated_rows", (&x, &v, &s0, s), repeated_rows, repeated_rows_fwd, repeated_rows_rev, repeated_rows_o::<Dual64>);
        check_hvp_of::<repeated_rows_rev>(&x, &v, repeated_rows_o);
    }

    #[test]
    fn vectors_assigned_clones_of_rows((x, v, s0) in slice_case(-1.0, 1.0, 1..5, 0), s in seed()) {
        check_slice("row_clones", (&x, &v, &s0, s), row_clones, row_clones_fwd, row_clones_rev, row_clones_o::<Dual64>);
        check_hvp_of::<row_clones_rev>(&x, &v, row_clones_o);
    }

    #[test]
    fn mutable_copies_of_rows_of_a_literal((x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed()) {
        check_slice("row_of_literal", (&x, &v, &s0, s), row_of_literal, row_of_literal_fwd, row_of_literal_rev, row_of_literal_o::<Dual64>);
        check_hvp_of::<row_of_literal_rev>(&x, &v, row_of_literal_o);
    }

    #[test]
    fn copies_of_local_arrays((x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed()) {
        check_slice("array_copies", (&x, &v, &s0, s), array_copies, array_copies_fwd, array_copies_rev, array_copies_o::<Dual64>);
        check_hvp_of::<array_copies_rev>(&x, &v, array_copies_o);
        let a = |x: &[f64]| [x[0], x[1], x[2]];
        check_slice(
            "deref_copy",
            (&x, &v, &s0, s),
            |x| deref_copy(&a(x)),
            |x, v| deref_copy_fwd(&a(x), &a(v)),
            |x, dx, s| {
                let mut d = a(dx);
                let r = deref_copy_rev(&a(x), &mut d, s);
                dx.copy_from_slice(&d);
                r
            },
            deref_copy_o::<Dual64>,
        );
    }

    #[test]
    fn rows_of_a_parameter_copied_whole((x, v, s0) in slice_case(-1.0, 1.0, 4..5, 0), s in seed()) {
        let rows = |x: &[f64]| [[x[0], x[1]], [x[2], x[3]]];
        check_slice(
            "copied_rows",
            (&x, &v, &s0, s),
            |x| copied_rows(&rows(x)),
            |x, v| copied_rows_fwd(&rows(x), &rows(v)),
            |x, dx, s| {
                let mut d = rows(dx);
                let r = copied_rows_rev(&rows(x), &mut d, s);
                dx.copy_from_slice(d.as_flattened());
                r
            },
            copied_rows_o::<Dual64>,
        );
        check_hvp_of::<copied_rows_called_rev>(&x, &v, copied_rows_o);
    }

    #[test]
    fn arrays_assigned_whole_through_a_reference((x, v, s0) in slice_case(-1.0, 1.0, 2..3, 0), s in seed()) {
        check_slice("through_deref", (&x, &v, &s0, s), through_deref, through_deref_fwd, through_deref_rev, through_deref_o::<Dual64>);
        check_hvp_of::<through_deref_rev>(&x, &v, through_deref_o);
        let (mut r, mut tr) = ([0.0; 2], [0.0; 2]);
        assigned_through_fwd(&x, &v, &mut r, &mut tr);
        let want = assigned_through_o(&seeded(&x, &v));
        for i in 0..2 {
            check("value", r[i], want[i].re);
            check("tangent", tr[i], want[i].eps);
        }
    }

    #[test]
    fn matrices_written_in_place_as_arguments((x, v, s0) in slice_case(-1.0, 1.0, 4..7, 0), s in seed()) {
        check_slice("matrices_in_place", (&x, &v, &s0, s), matrices_in_place, matrices_in_place_fwd, matrices_in_place_rev, matrices_in_place_o::<Dual64>);
        check_hvp_of::<matrices_in_place_rev>(&x, &v, matrices_in_place_o);
    }

    #[test]
    fn rows_assigned_whole((x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed()) {
        check_slice("rows_assigned", (&x, &v, &s0, s), rows_assigned, rows_assigned_fwd, rows_assigned_rev, rows_assigned_o::<Dual64>);
        check_hvp_of::<rows_assigned_rev>(&x, &v, rows_assigned_o);
    }

    #[test]
    fn a_whole_matrix_assigned_again((x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed()) {
        check_slice("matrix_assigned", (&x, &v, &s0, s), matrix_assigned, matrix_assigned_fwd, matrix_assigned_rev, matrix_assigned_o::<Dual64>);
        check_hvp_of::<matrix_assigned_rev>(&x, &v, matrix_assigned_o);
    }

    #[test]
    fn rows_assigned_through_iter_mut((x, v, s0) in slice_case(-1.0, 1.0, 4..5, 0), s in seed()) {
        check_slice("rows_through_iter_mut", (&x, &v, &s0, s), rows_through_iter_mut, rows_through_iter_mut_fwd, rows_through_iter_mut_rev, rows_through_iter_mut_o::<Dual64>);
        check_hvp_of::<rows_through_iter_mut_rev>(&x, &v, rows_through_iter_mut_o);
    }

    #[test]
    fn vectors_cleared_truncated_and_resized((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice("reused_vector", (&x, &v, &s0, s), reused_vector, reused_vector_fwd, reused_vector_rev, reused_vector_o::<Dual64>);
        check_hvp_of::<reused_vector_rev>(&x, &v, reused_vector_o);
    }

    #[test]
    fn rows_of_a_parameter_assigned_whole(x in prop::collection::vec(-1.0..1.0f64, 2), v in prop::collection::vec(-1.0..1.0f64, 2), w in prop::collection::vec(-1.0..1.0f64, 4)) {
        // out = [[x0 x1, x0], [sin x1, x0 x1 + x1]]: its Jacobian by rows of out.
        let jac = [[x[1], x[0]], [1.0, 0.0], [0.0, x[1].cos()], [x[1], x[0] + 1.0]];
        let (mut out, mut t) = ([[0.0; 2]; 2], [[0.0; 2]; 2]);
        write_rows_fwd(&x, &v, &mut out, &mut t);
        for r in 0..4 {
            check("write_rows tangent", t[r / 2][r % 2], jac[r][0] * v[0] + jac[r][1] * v[1]);
        }
        check("write_rows value", out[1][1], x[0] * x[1] + x[1]);
        let mut dx = [0.0; 2];
        let mut dout = [[w[0], w[1]], [w[2], w[3]]];
        write_rows_rev(&x, &mut dx, &mut out, &mut dout);
        for i in 0..2 {
            let want: f64 = (0..4).map(|r| jac[r][i] * w[r]).sum();
            check("write_rows gradient", dx[i], want);
        }
    }

    #[test]
    fn index_reads_writes_and_in_place_updates(a in sized(1..8, -1.0, 1.0, two, vec![false, true])) {
        check_args(
            "index_rw",
            &a,
            |a| { let [x, y] = a else { unreachable!() }; index_rw(x, y) },
            |a, t| {
                let ([x, y], [dx, dy]) = (a, t) else { unreachable!() };
                index_rw_fwd(x, dx, y, dy)
            },
            |a, b, s| {
                let ([x, y], [bx, by]) = (a, b) else { unreachable!() };
                index_rw_rev(x, bx, y, by, s)
            },
            |a| { let [x, y] = a else { unreachable!() }; index_rw_o(x, y) },
        );
    }

    #[test]
    fn vec_and_array_parameters(a in sized(1..6, -1.0, 1.0, |n| vec![n, 3], vec![false, false])) {
        let arr = |v: &[f64]| -> [f64; 3] { v.try_into().unwrap() };
        check_args(
            "containers",
            &a,
            |a| containers(&a[0], &arr(&a[1])),
            |a, t| containers_fwd(&a[0], &t[0], &arr(&a[1]), &arr(&t[1])),
            |a, b, s| {
                let [bv, bp] = b else { unreachable!() };
                let mut bpa = arr(bp);
                let r = containers_rev(&a[0], bv, &arr(&a[1]), &mut bpa, s);
                bp.copy_from_slice(&bpa);
                r
            },
            |a| containers_o(&a[0], &a[1]),
        );
    }

    #[test]
    fn nested_vec_parameter(
        rows_n in 1usize..4, cols in 2usize..4, x in vecf(-1.0, 1.0, 16), v in dirs(16), w in dirs(16), s in seed(),
    ) {
        let len = rows_n * cols;
        let a = Args {
            x: vec![x[..len].to_vec()],
            out: vec![false],
            v: vec![v[..len].to_vec()],
            w: vec![w[..len].to_vec()],
            seed: s,
        };
        check_args(
            "rows",
            &a,
            |a| rows(&shape(&a[0], cols)),
            |a, t| rows_fwd(&shape(&a[0], cols), &shape(&t[0], cols)),
            |a, b, s| {
                let mut bm = shape(&b[0], cols);
                let r = rows_rev(&shape(&a[0], cols), &mut bm, s);
                b[0] = bm.concat();
                r
            },
            |a| rows_o(&shape(&a[0], cols)),
        );
    }

    #[test]
    fn nested_vec_mut_parameter(n in 1usize..5, x in vecf(-1.0, 1.0, 12), v in dirs(12), w in dirs(12)) {
        let a = Args {
            x: vec![x[..n].to_vec(), x[4..4 + 2 * n].to_vec()],
            out: vec![false, true],
            v: vec![v[..n].to_vec(), v[4..4 + 2 * n].to_vec()],
            w: vec![w[..n].to_vec(), w[4..4 + 2 * n].to_vec()],
            seed: 0.0,
        };
        check_args(
            "rows_mut",
            &a,
            |a| {
                let mut m = shape(&a[1], 2);
                rows_mut(&a[0], &mut m);
                a[1] = m.concat();
                0.0
            },
            |a, t| {
                let (mut m, mut dm) = (shape(&a[1], 2), shape(&t[1], 2));
                rows_mut_fwd(&a[0], &t[0], &mut m, &mut dm);
                (a[1], t[1]) = (m.concat(), dm.concat());
                (0.0, 0.0)
            },
            |a, b, _| {
                let (mut m, mut bm) = (shape(&a[1], 2), shape(&b[1], 2));
                rows_mut_rev(&a[0], &mut b[0], &mut m, &mut bm);
                (a[1], b[1]) = (m.concat(), bm.concat());
                0.0
            },
            |a| {
                let mut m = shape(&a[1], 2);
                let r = rows_mut_o(&a[0], &mut m);
                a[1] = m.concat();
                r
            },
        );
    }

    #[test]
    fn mutable_array_parameter(a in args_case(-1.0, 1.0, vec![3], vec![true])) {
        let arr = |v: &[f64]| -> [f64; 3] { v.try_into().unwrap() };
        check_args(
            "array_mut",
            &a,
            |a| { let mut p = arr(&a[0]); array_mut(&mut p); a[0] = p.to_vec(); 0.0 },
            |a, t| {
                let (mut p, mut dp) = (arr(&a[0]), arr(&t[0]));
                array_mut_fwd(&mut p, &mut dp);
                (a[0], t[0]) = (p.to_vec(), dp.to_vec());
                (0.0, 0.0)
            },
            |a, b, _| {
                let (mut p, mut bp) = (arr(&a[0]), arr(&b[0]));
                array_mut_rev(&mut p, &mut bp);
                (a[0], b[0]) = (p.to_vec(), bp.to_vec());
                0.0
            },
            |a| array_mut_o(&mut a[0]),
        );
    }

    #[test]
    fn range_slices_chunks_and_split_at(a in sized(4..10, -1.0, 1.0, |n| vec![n, 3], vec![false, true])) {
        check_args(
            "slicing",
            &a,
            |a| { let [x, y] = a else { unreachable!() }; slicing(x, y) },
            |a, t| {
                let ([x, y], [dx, dy]) = (a, t) else { unreachable!() };
                slicing_fwd(x, dx, y, dy)
            },
            |a, b, s| {
                let ([x, y], [bx, by]) = (a, b) else { unreachable!() };
                slicing_rev(x, bx, y, by, s)
            },
            |a| { let [x, y] = a else { unreachable!() }; slicing_o(x, y) },
        );
    }

    #[test]
    fn lone_vec_and_array_parameters((x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed()) {
        let arr = |v: &[f64]| -> [f64; 3] { v.try_into().unwrap() };
        check_slice(
            "lone_vec",
            (&x, &v, &s0, s),
            |x| lone_vec(&x.to_vec()),
            |x, v| lone_vec_fwd(&x.to_vec(), &v.to_vec()),
            |x, b, s| {
                let mut bv = b.to_vec();
                let r = lone_vec_rev(&x.to_vec(), &mut bv, s);
                b.copy_from_slice(&bv);
                r
            },
            lone_vec_o,
        );
        check_slice(
            "lone_array",
            (&x, &v, &s0, s),
            |x| lone_array(&arr(x)),
            |x, v| lone_array_fwd(&arr(x), &arr(v)),
            |x, b, s| {
                let mut ba = arr(b);
                let r = lone_array_rev(&arr(x), &mut ba, s);
                b.copy_from_slice(&ba);
                r
            },
            lone_array_o,
        );
    }

    #[test]
    fn constant_buffer_read_and_written(a in float(-2.0, 2.0), w in vecf(-2.0, 2.0, 3), v in dir(), s in seed()) {
        let mut want = w.clone();
        let y = read_then_written(a, &mut want);
        // ws[1] = w0 a², ws[2] = 2 w2 + w0 a²; y = w0 a + ws[2].
        check("primal", y, w[0] * a + 2.0 * w[2] + w[0] * a * a);
        let dy = w[0] + 2.0 * w[0] * a;
        let mut ws = w.clone();
        let (r, da) = read_then_written_rev(a, &mut ws, s);
        check("reverse primal", r, y);
        check("∂y/∂a", da, s * dy);
        assert_eq!(ws, want, "buffer after the reverse companion");
        let mut ws = w.clone();
        let (r, t) = read_then_written_fwd(a, v, &mut ws);
        check("forward primal", r, y);
        check("tangent", t, v * dy);
        assert_eq!(ws, want, "buffer after the forward companion");
    }

    #[test]
    fn constant_array_passed_to_a_helper((x, v, s0) in slice_case(-1.0, 1.0, 4..5, 0), s in seed()) {
        let w0 = [1.0, -0.5, 2.0];
        check_slice(
            "array_scratch",
            (&x, &v, &s0, s),
            |x| array_scratch(x, &mut w0.clone()),
            |x, v| array_scratch_fwd(x, v, &mut w0.clone()),
            |x, b, s| array_scratch_rev(x, b, &mut w0.clone(), s),
            array_scratch_o,
        );
        let (mut want, mut got) = (w0, w0);
        array_scratch(&x, &mut want);
        array_scratch_rev(&x, &mut [0.0; 4], &mut got, s);
        assert_eq!(got, want, "array after the reverse companion");
    }

    #[test]
    fn constant_scratch_buffers((x, v, s0) in slice_case(-1.0, 1.0, 2..6, 0), s in seed()) {
        let n = x.len();
        check_slice(
            "scratch",
            (&x, &v, &s0, s),
            |x| scratch(x, &mut vec![7.0; n]),
            |x, v| scratch_fwd(x, v, &mut vec![7.0; n]),
            |x, b, s| scratch_rev(x, b, &mut vec![7.0; n], s),
            scratch_o,
        );
        let mut out = vec![0.0; n];
        check_slice(
            "scratch_vec",
            (&x, &v, &s0, s),
            |x| scratch_vec(x, &mut vec![7.0; n], &mut out.clone()),
            |x, v| scratch_vec_fwd(x, v, &mut vec![7.0; n], &mut out.clone()),
            |x, b, s| scratch_vec_rev(x, b, &mut vec![7.0; n], &mut out.clone(), s),
            scratch_vec_o,
        );
        scratch_vec(&x, &mut vec![0.0; n], &mut out);
        for i in 0..n {
            check("out", out[i], (x[i] * x[i]).exp());
        }
        // The buffers hold what the function leaves in them, after either companion.
        let (mut want_ws, mut want_out) = (vec![7.0; n], vec![0.0; n]);
        scratch_vec(&x, &mut want_ws, &mut want_out);
        let (mut ws, mut out) = (vec![7.0; n], vec![0.0; n]);
        scratch_vec_rev(&x, &mut vec![0.0; n], &mut ws, &mut out, s);
        assert_eq!((&ws, &out), (&want_ws, &want_out), "buffers after the reverse companion");
        let (mut ws, mut out) = (vec![7.0; n], vec![0.0; n]);
        scratch_vec_fwd(&x, &v[..n], &mut ws, &mut out);
        assert_eq!((&ws, &out), (&want_ws, &want_out), "buffers after the forward companion");
        let mut want_ws = vec![7.0; n];
        scratch(&x, &mut want_ws);
        let mut ws = vec![7.0; n];
        scratch_rev(&x, &mut vec![0.0; n], &mut ws, s);
        assert_eq!(ws, want_ws, "scratch buffer after the reverse companion");
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        cubes_hvp(&x, &v[..n], &mut g, &mut hv);
        for i in 0..n {
            check("gradient", g[i], 3.0 * x[i] * x[i]);
            check("H·v", hv[i], 6.0 * x[i] * v[i]);
        }
    }

    #[test]
    fn matrices_of_constants((x, v, s0) in slice_case(-1.0, 1.0, 2..7, 0), s in seed()) {
        check_slice(
            "constant_matrices",
            (&x, &v, &s0, s),
            constant_matrices,
            constant_matrices_fwd,
            constant_matrices_rev,
            constant_matrices_o,
        );
        check_slice(
            "filled_matrices",
            (&x, &v, &s0, s),
            filled_matrices,
            filled_matrices_fwd,
            filled_matrices_rev,
            filled_matrices_o,
        );
        check_slice(
            "matrix_literals",
            (&x, &v, &s0, s),
            matrix_literals,
            matrix_literals_fwd,
            matrix_literals_rev,
            matrix_literals_o,
        );
        check_slice(
            "active_row_repeated",
            (&x, &v, &s0, s),
            active_row_repeated,
            active_row_repeated_fwd,
            active_row_repeated_rev,
            active_row_repeated_o,
        );
        check_hvp_of::<active_row_repeated_rev>(&x, &v, active_row_repeated_o);
        let hv = autodiff_core::hvp::<filled_matrices_rev>(&x, &v);
        let mut want = vec![0.0; x.len()];
        want[0] = 2002.0 * v[1];
        want[1] = 2002.0 * v[0];
        check_all("filled_matrices H·v", &hv, &want);
    }

    #[test]
    fn layers_from_a_row_of_a_batch((w, v, s0) in slice_case(-1.0, 1.0, 1..5, 0), s in seed()) {
        let xs = vec![vec![0.5, -1.5, 2.0], vec![1.0]];
        check_slice(
            "batch_layers",
            (&w, &v, &s0, s),
            |w| batch_layers(w, &xs),
            |w, v| batch_layers_fwd(w, v, &xs),
            |w, b, s| batch_layers_rev(w, b, &xs, s),
            |w| batch_layers_o::<Dual64>(w, &xs),
        );
    }

    #[test]
    fn whole_vectors_assigned((x, v, s0) in slice_case(-1.0, 1.0, 2..6, 0), s in seed()) {
        check_slice("layers", (&x, &v, &s0, s), layers, layers_fwd, layers_rev, layers_o);
        check_hvp_of::<layers_rev>(&x, &v, layers_o);
    }

    #[test]
    fn array_patterns_copy_elements((x, v, s0) in slice_case(-1.0, 1.0, 3..6, 0), s in seed()) {
        check_slice("array_patterns", (&x, &v, &s0, s), array_patterns, array_patterns_fwd, array_patterns_rev, array_patterns_o);
    }

    #[test]
    fn local_vec_buffers((x, v, s0) in slice_case(-1.0, 1.0, 1..8, 0), s in seed()) {
        check_slice("local_vecs", (&x, &v, &s0, s), local_vecs, local_vecs_fwd, local_vecs_rev, local_vecs_o::<Dual64>);
    }

    #[test]
    fn local_arrays_fill_and_copy_from_slice((x, v, s0) in slice_case(-1.0, 1.0, 3..8, 0), s in seed()) {
        check_slice(
            "local_arrays",
            (&x, &v, &s0, s),
            local_arrays,
            local_arrays_fwd,
            local_arrays_rev,
            local_arrays_o::<Dual64>,
        );
    }

    #[test]
    fn iterator_loops(a in sized(0..7, -1.0, 1.0, |n| vec![n, (2 * n) % 7], vec![false, false])) {
        check_args(
            "iter_loops",
            &a,
            |a| iter_loops(&a[0], &a[1]),
            |a, t| iter_loops_fwd(&a[0], &t[0], &a[1], &t[1]),
            |a, b, s| { let [bx, by] = b else { unreachable!() }; iter_loops_rev(&a[0], bx, &a[1], by, s) },
            |a| iter_loops_o(&a[0], &a[1]),
        );
    }

    #[test]
    fn sums_of_iterators(a in sized(0..7, -1.0, 1.0, two, vec![false, false])) {
        check_args(
            "sums",
            &a,
            |a| sums(&a[0], &a[1]),
            |a, t| sums_fwd(&a[0], &t[0], &a[1], &t[1]),
            |a, b, s| { let [bx, by] = b else { unreachable!() }; sums_rev(&a[0], bx, &a[1], by, s) },
            |a| sums_o(&a[0], &a[1]),
        );
    }

    #[test]
    fn folds_max_and_products((x, v, s0) in slice_case(-1.5, 1.5, 1..7, 0), s in seed()) {
        check_slice("folds", (&x, &v, &s0, s), folds, folds_fwd, folds_rev, folds_o::<Dual64>);
    }

    #[test]
    fn collect_into_vec(a in sized(1..7, -1.0, 1.0, two, vec![false, false])) {
        check_args(
            "collects",
            &a,
            |a| collects(&a[0], &a[1]),
            |a, t| collects_fwd(&a[0], &t[0], &a[1], &t[1]),
            |a, b, s| { let [bx, by] = b else { unreachable!() }; collects_rev(&a[0], bx, &a[1], by, s) },
            |a| collects_o(&a[0], &a[1]),
        );
    }

    #[test]
    fn local_closures((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 1), t in float(-1.0, 1.0), s in seed()) {
        check_slice_scalar("closures", (&x, t, &v, &s0, s), closures, closures_fwd, closures_rev, closures_o::<Dual64>);
    }

    #[test]
    fn mut_slice_output_read_and_written(a in sized(1..7, -1.0, 1.0, two, vec![false, true])) {
        check_args(
            "accumulate",
            &a,
            |a| { let [x, y] = a else { unreachable!() }; accumulate(x, y); 0.0 },
            |a, t| {
                let ([x, y], [dx, dy]) = (a, t) else { unreachable!() };
                accumulate_fwd(x, dx, y, dy);
                (0.0, 0.0)
            },
            |a, b, _| {
                let ([x, y], [bx, by]) = (a, b) else { unreachable!() };
                accumulate_rev(x, bx, y, by);
                0.0
            },
            |a| { let [x, y] = a else { unreachable!() }; accumulate_o(x, y) },
        );
    }

    #[test]
    fn mut_slice_output_overwritten(a in sized(1..7, -1.0, 1.0, two, vec![false, true])) {
        check_args(
            "overwrite",
            &a,
            |a| { let [x, y] = a else { unreachable!() }; overwrite(x, y); 0.0 },
            |a, t| {
                let ([x, y], [dx, dy]) = (a, t) else { unreachable!() };
                overwrite_fwd(x, dx, y, dy);
                (0.0, 0.0)
            },
            |a, b, _| {
                let ([x, y], [bx, by]) = (a, b) else { unreachable!() };
                overwrite_rev(x, bx, y, by);
                0.0
            },
            |a| { let [x, y] = a else { unreachable!() }; overwrite_o(x, y) },
        );
    }

    #[test]
    fn aliased_reads_and_writes_of_one_buffer(a in sized(1..7, -1.0, 1.0, one, vec![true])) {
        check_args(
            "reverse_copy",
            &a,
            |a| { reverse_copy(&mut a[0]); 0.0 },
            |a, t| { reverse_copy_fwd(&mut a[0], &mut t[0]); (0.0, 0.0) },
            |a, b, _| { reverse_copy_rev(&mut a[0], &mut b[0]); 0.0 },
            |a| reverse_copy_o(&mut a[0]),
        );
    }

    #[test]
    fn move_closure_captures_by_value(x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed()) {
        // f = x t + 3 t
        check2("move_closure", (x, v, s), move_closure, move_closure_fwd, move_closure_rev, |x, t| x * t + t * 3.0);
    }

    #[test]
    fn in_place_only_mut_slice(a in sized(1..7, -1.0, 1.0, one, vec![true])) {
        check_args(
            "smooth",
            &a,
            |a| { smooth(&mut a[0]); 0.0 },
            |a, t| { smooth_fwd(&mut a[0], &mut t[0]); (0.0, 0.0) },
            |a, b, _| { smooth_rev(&mut a[0], &mut b[0]); 0.0 },
            |a| smooth_o(&mut a[0]),
        );
    }
}

/// An in-place update `x[i] = g(x[i])` of the only parameter.
#[autodiff_forward(smooth_fwd, Dual)]
#[autodiff_reverse(smooth_rev, Duplicated)]
fn smooth(x: &mut [f64]) {
    for i in 0..x.len() {
        x[i] = x[i].tanh();
    }
    for i in 1..x.len() {
        x[i] += x[i - 1] * 0.5;
    }
    let n = x.len();
    x[0] = x[n - 1] - x[0].cos();
}

fn smooth_o<D: Num>(x: &mut [D]) -> D {
    for v in x.iter_mut() {
        *v = v.tanh();
    }
    for i in 1..x.len() {
        let p = x[i - 1];
        x[i] += p * 0.5;
    }
    let n = x.len();
    x[0] = x[n - 1] - x[0].cos();
    c(0.0)
}

/// `c = a b` for 2×2 matrices, written into `c`.
#[differentiable]
fn matmul2(a: &[[f64; 2]; 2], b: &[[f64; 2]; 2], c: &mut [[f64; 2]; 2]) {
    for i in 0..2 {
        for j in 0..2 {
            c[i][j] = 0.0;
            for k in 0..2 {
                c[i][j] += a[i][k] * b[k][j];
            }
        }
    }
}

/// A matrix power by repeated products: the product goes into a matrix that the
/// function never indexes itself (`t`, filled by the callee) and is copied whole into
/// the running power (`s = t;`).
#[autodiff_forward(matrix_power_fwd, Dual, Dual)]
#[autodiff_reverse(matrix_power_rev, Duplicated, Active)]
fn matrix_power(p: &[f64]) -> f64 {
    let a = [[p[0], p[1]], [p[2], p[3]]];
    let mut s = [[1.0, 0.0], [0.0, 1.0]];
    let mut t = [[0.0; 2]; 2];
    for _ in 0..3 {
        matmul2(&a, &s, &mut t);
        s = t;
    }
    s[0][0] + s[1][1] * s[0][1]
}

fn matrix_power_o<D: Num>(p: &[D]) -> D {
    let a = [[p[0], p[1]], [p[2], p[3]]];
    let mut s = [[D::one(), D::zero()], [D::zero(), D::one()]];
    for _ in 0..3 {
        let mut t = [[D::zero(); 2]; 2];
        for i in 0..2 {
            for j in 0..2 {
                for k in 0..2 {
                    t[i][j] += a[i][k] * s[k][j];
                }
            }
        }
        s = t;
    }
    s[0][0] + s[1][1] * s[0][1]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_matrix_filled_by_a_callee_and_copied_whole(x in vecf(-1.5, 1.5, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        check_slice("matrix_power", (&x, &v, &s0, s), matrix_power, matrix_power_fwd, matrix_power_rev, matrix_power_o::<Dual64>);
        check_hvp_of::<matrix_power_rev>(&x, &v, matrix_power_o);
    }
}

/// A `&mut Vec<[f64; 2]>` parameter overwritten from a parameter of rows.
#[autodiff_forward(rows_copied_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(rows_copied_rev, Duplicated, Duplicated, Active)]
#[allow(clippy::ptr_arg)]
fn rows_copied(ctrl: &[[f64; 2]], work: &mut Vec<[f64; 2]>) -> f64 {
    work.copy_from_slice(ctrl);
    work[0][0] * work[1][1] + work[1][0].sin()
}

#[test]
fn rows_copied_into_a_vector_parameter() {
    let c = [[1.5, 2.0], [0.3, -0.7]];
    let want = [[-0.7, 0.0], [0.3f64.cos(), 1.5]];
    let (mut w, mut dc, mut dw) = (vec![[0.0; 2]; 2], [[0.0; 2]; 2], vec![[0.0; 2]; 2]);
    let f = rows_copied_rev(&c, &mut dc, &mut w, &mut dw, 1.0);
    check("value", f, 1.5 * -0.7 + 0.3f64.sin());
    check_all("gradient", dc.as_flattened(), want.as_flattened());
    // The copy's own seed (zero) is consumed: the work buffer's shadow is left at zero.
    check_all("work's shadow", dw.as_flattened(), &[0.0; 4]);
    let dirs = [[0.5, -1.0], [2.0, 0.25]];
    let mut w = vec![[0.0; 2]; 2];
    let (_, t) = rows_copied_fwd(&c, &dirs, &mut w, &mut vec![[0.0; 2]; 2]);
    let tw: f64 = (0..2)
        .map(|i| (0..2).map(|j| want[i][j] * dirs[i][j]).sum::<f64>())
        .sum();
    check("tangent", t, tw);
}

/// `first_row_sum` of a copy of a vector of rows built by `push`, lent mutably to
/// callees that read and write its rows (also under H·v).
#[differentiable]
fn first_row_sum(work: &mut [[f64; 2]]) -> f64 {
    work[0][0] * work[0][1] + work[1][0]
}

#[allow(clippy::vec_init_then_push)]
#[autodiff_forward(pushed_copy_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_copy_rev, Duplicated, Active)]
fn pushed_copy(p: &[f64]) -> f64 {
    let mut ctrl: Vec<[f64; 2]> = Vec::new();
    ctrl.push([p[0], p[1]]);
    ctrl.push([p[2], p[0] * p[1]]);
    let mut work = ctrl.clone();
    blend_rows(&mut work, p[2]);
    first_row_sum(&mut work) * ctrl[1][1]
}

/// Rows of a `&mut` parameter of rows written: one whole, one element.
#[differentiable]
fn blend_rows(work: &mut [[f64; 2]], t: f64) {
    work[0] = [work[0][0] * t, work[1][1]];
    work[1][0] *= t;
}

fn pushed_copy_o<N: Num>(p: &[N]) -> N {
    let q = p[0] * p[1];
    (p[0] * p[2] * q + p[2] * p[2]) * q
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_copy_of_pushed_rows_lent_mutably(x in vecf(-1.5, 1.5, 3), v in dirs(3), s in seed()) {
        check_slice("pushed_copy", (&x, &v, &[0.0; 3], s), pushed_copy, pushed_copy_fwd, pushed_copy_rev, pushed_copy_o::<Dual64>);
        check_hvp_of::<pushed_copy_rev>(&x, &v, pushed_copy_o);
    }
}

// ---------------------------------------------------------------- split_first / split_last

/// `split_first` and `split_last`, unwrapped and through `if let` and `let .. else`: the
/// element and the rest, read by indexing.
#[differentiable]
fn weighted_rest(rest: &[f64], w: f64) -> f64 {
    let mut s = 0.0;
    for (i, r) in rest.iter().enumerate() {
        s += (i as f64 + w) * r * r;
    }
    s
}

#[autodiff_forward(split_ends_fwd, Dual, Dual)]
#[autodiff_reverse(split_ends_rev, Duplicated, Active)]
fn split_ends(x: &[f64]) -> f64 {
    let (first, rest) = x.split_first().unwrap();
    let (last, init) = x.split_last().expect("not empty");
    let mut s = first * weighted_rest(rest, *last) + last.sin() * init[0];
    if let Some((&head, tail)) = x.split_first() {
        s += head * tail[tail.len() - 1];
    }
    let Some((end, _)) = x.split_last() else {
        return s;
    };
    s * end.cos()
}

fn split_ends_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let (first, rest) = (x[0], &x[1..]);
    let (last, init) = (x[n - 1], &x[..n - 1]);
    let mut wr = c::<D>(0.0);
    for (i, r) in rest.iter().enumerate() {
        wr += (last + i as f64) * *r * *r;
    }
    let mut s = first * wr + last.sin() * init[0];
    s += x[0] * x[n - 1];
    s * x[n - 1].cos()
}

/// `split_first_mut`: the first element and the rest written through.
#[autodiff_forward(split_first_written_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(split_first_written_rev, Duplicated, Duplicated, Active)]
fn split_first_written(x: &[f64], y: &mut [f64]) -> f64 {
    let (head, tail) = y.split_first_mut().unwrap();
    *head *= x[0];
    for (t, xi) in tail.iter_mut().zip(&x[1..]) {
        *t = (*t + *head) * xi;
    }
    y.iter().map(|v| v * v).sum()
}

fn split_first_written_o<D: Num>(x: &[D], y: &mut [D]) -> D {
    y[0] *= x[0];
    for i in 1..y.len().min(x.len()) {
        y[i] = (y[i] + y[0]) * x[i];
    }
    y.iter().fold(c::<D>(0.0), |s, v| s + *v * *v)
}

/// The parts of a local array (`let`, not `let mut`) split by `split_last` and
/// `split_at`, lent to a helper: they are lent as shared references.
#[autodiff_forward(split_local_fwd, Dual, Dual)]
#[autodiff_reverse(split_local_rev, Duplicated, Active)]
fn split_local(x: &[f64]) -> f64 {
    let arr = [x[0], x[1] * 2.0, x[0] * x[1]];
    let (l, init) = arr.split_last().unwrap();
    let (a, b) = arr.split_at(1);
    weighted_rest(init, *l) + weighted_rest(b, a[0])
}

fn split_local_o<D: Num>(x: &[D]) -> D {
    let arr = [x[0], x[1] * 2.0, x[0] * x[1]];
    let wr = |rest: &[D], w: D| {
        let mut s = c::<D>(0.0);
        for (i, r) in rest.iter().enumerate() {
            s += (w + i as f64) * *r * *r;
        }
        s
    };
    wr(&arr[..2], arr[2]) + wr(&arr[1..], arr[0])
}

/// `expect` of `first` and of `split_last` keeps its message in the companions.
#[autodiff_forward(first_expected_fwd, Dual, Dual)]
#[autodiff_reverse(first_expected_rev, Duplicated, Active)]
fn first_expected(x: &[f64]) -> f64 {
    let a = x.first().expect("no samples");
    let (b, _) = x.split_last().expect("no samples at the end");
    a * b
}

#[test]
#[should_panic(expected = "no samples")]
fn expect_of_first_panics_with_its_message_in_reverse() {
    first_expected_rev(&[], &mut [], 1.0);
}

#[test]
#[should_panic(expected = "no samples")]
fn expect_of_first_panics_with_its_message_forward() {
    first_expected_fwd(&[], &[]);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn split_parts_of_a_local_array_lent((x, v, s0) in slice_case(-1.5, 1.5, 2..3, 0), s in seed()) {
        check_slice("split_local", (&x, &v, &s0, s), split_local, split_local_fwd, split_local_rev, split_local_o::<Dual64>);
        check_hvp_of::<split_local_rev>(&x, &v, split_local_o);
        check_slice("first_expected", (&x, &v, &s0, s), first_expected, first_expected_fwd, first_expected_rev, |d| d[0] * d[d.len() - 1]);
    }

    #[test]
    fn split_first_and_split_last((x, v, s0) in slice_case(-1.5, 1.5, 2..7, 0), s in seed()) {
        check_slice("split_ends", (&x, &v, &s0, s), split_ends, split_ends_fwd, split_ends_rev, split_ends_o::<Dual64>);
        check_hvp_of::<split_ends_rev>(&x, &v, split_ends_o);
    }

    #[test]
    fn split_first_mut_writes_through(a in sized(2..7, -1.2, 1.2, |n| vec![n, n], vec![false, true])) {
        check_args(
            "split_first_written",
            &a,
            |a| { let [x, y] = a else { unreachable!() }; split_first_written(x, y) },
            |a, t| {
                let ([x, y], [dx, dy]) = (a, t) else { unreachable!() };
                split_first_written_fwd(x, dx, y, dy)
            },
            |a, b, s| {
                let ([x, y], [bx, by]) = (a, b) else { unreachable!() };
                split_first_written_rev(x, bx, y, by, s)
            },
            |a| { let [x, y] = a else { unreachable!() }; split_first_written_o(x, y) },
        );
    }

    #[test]
    fn inputs_whose_primal_need_not_be_kept((x, v, s0) in slice_case(-1.5, 1.5, 1..7, 0), s in seed()) {
        check_slice("only_inputs", (&x, &v, &s0, s), only_inputs, only_inputs_fwd, only_inputs_rev, only_inputs_o::<Dual64>);
    }

    #[test]
    fn outputs_whose_primal_need_not_be_kept(a in sized(1..7, -1.5, 1.5, |n| vec![n, n], vec![false, true])) {
        check_args(
            "only_outputs",
            &a,
            |a| { let [x, y] = a else { unreachable!() }; only_outputs(x, y); 0.0 },
            |a, t| {
                let ([x, y], [dx, dy]) = (a, t) else { unreachable!() };
                only_outputs_fwd(x, dx, y, dy);
                (0.0, 0.0)
            },
            |a, b, _| {
                let ([x, y], [bx, by]) = (a, b) else { unreachable!() };
                only_outputs_rev(x, bx, y, by);
                0.0
            },
            |a| { let [x, y] = a else { unreachable!() }; only_outputs_o(x, y); c(0.0) },
        );
    }
}

// ---------------------------------------------------------------- `..Only` inputs

/// `Σ x_i³ sin x_i`, with `std::autodiff`'s input activities whose primal need not be
/// kept: `DualOnly` takes a tangent as `Dual` does, `DuplicatedOnly` a shadow as
/// `Duplicated` does, and both compute what those compute.
#[autodiff_forward(only_inputs_fwd, DualOnly, Dual)]
#[autodiff_reverse(only_inputs_rev, DuplicatedOnly, Active)]
fn only_inputs(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v * v * v.sin()).sum()
}

fn only_inputs_o<D: Num>(x: &[D]) -> D {
    x.iter()
        .fold(c::<D>(0.0), |s, v| s + *v * *v * *v * v.sin())
}

/// `y_i = x_i² sin x_i`, into an output marked `..Only` too: its primal is written all
/// the same, and its shadow is the cotangent of the values written.
#[autodiff_forward(only_outputs_fwd, DualOnly, DualOnly)]
#[autodiff_reverse(only_outputs_rev, DuplicatedOnly, DuplicatedOnly)]
fn only_outputs(x: &[f64], y: &mut [f64]) {
    for i in 0..x.len() {
        y[i] = x[i] * x[i] * x[i].sin();
    }
}

fn only_outputs_o<D: Num>(x: &[D], y: &mut [D]) {
    for i in 0..x.len() {
        y[i] = x[i] * x[i] * x[i].sin();
    }
}

// ---------------------------------------------------------------- replayed elements

/// The reverse sweep reaches the elements of slice parameters and of fixed-length local
/// buffers without a second bounds check: a lower-triangular product indexed through a
/// running counter (`l[li]`, as ADBench's GMM writes it), a local buffer overwritten in
/// every round and read back, in-place `*=` and `/=` on a `&mut [f64]` output (whose
/// reverse puts the old elements back), beside a local vector that grows and keeps its
/// checks.
#[autodiff_forward(triangle_rounds_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(triangle_rounds_rev, Duplicated, Duplicated, Duplicated, Active)]
fn triangle_rounds(x: &[f64], l: &[f64], y: &mut [f64]) -> f64 {
    let d = x.len();
    let mut q = vec![0.0; d];
    let mut grown = Vec::new();
    let mut s = 0.0;
    for round in 0..3 {
        for j in 0..d {
            q[j] = x[j] * (round as f64 + 1.0);
        }
        let mut li = 0;
        for i in 0..d {
            for j in i + 1..d {
                q[j] += l[li] * x[i];
                li += 1;
            }
        }
        for j in 0..d {
            y[j] *= 1.0 + 0.1 * q[j].tanh();
            s += q[j] * q[j];
        }
        grown.push(s.sqrt());
    }
    y[0] /= 2.0 + x[d - 1] * x[d - 1];
    y[y.len() - 1] *= 1.5 + q[q.len() - 1].sin();
    s + grown[grown.len() - 1] * grown[0]
}

fn triangle_rounds_o<D: Num>(x: &[D], l: &[D], y: &mut [D]) -> D {
    let d = x.len();
    let mut q = vec![c::<D>(0.0); d];
    let mut grown = Vec::new();
    let mut s = c::<D>(0.0);
    for round in 0..3 {
        for j in 0..d {
            q[j] = x[j] * c::<D>(round as f64 + 1.0);
        }
        let mut li = 0;
        for i in 0..d {
            for j in i + 1..d {
                q[j] += l[li] * x[i];
                li += 1;
            }
        }
        for j in 0..d {
            y[j] *= c::<D>(1.0) + c::<D>(0.1) * q[j].tanh();
            s += q[j] * q[j];
        }
        grown.push(s.sqrt());
    }
    y[0] /= c::<D>(2.0) + x[d - 1] * x[d - 1];
    let last = y.len() - 1;
    y[last] *= c::<D>(1.5) + q[q.len() - 1].sin();
    s + grown[grown.len() - 1] * grown[0]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn elements_replayed_by_the_reverse_sweep(
        a in sized(1..7, -1.0, 1.0, |n| vec![n, n * (n - 1) / 2 + 1, n], vec![false, false, true])
    ) {
        check_args(
            "triangle_rounds",
            &a,
            |a| { let [x, l, y] = a else { unreachable!() }; triangle_rounds(x, l, y) },
            |a, t| {
                let ([x, l, y], [dx, dl, dy]) = (a, t) else { unreachable!() };
                triangle_rounds_fwd(x, dx, l, dl, y, dy)
            },
            |a, b, s| {
                let ([x, l, y], [bx, bl, by]) = (a, b) else { unreachable!() };
                triangle_rounds_rev(x, bx, l, bl, y, by, s)
            },
            |a| { let [x, l, y] = a else { unreachable!() }; triangle_rounds_o(x, l, y) },
        );
    }
}

/// The H·v companions (forward over reverse) replay what the reverse companion replays,
/// and the tangents of those elements: through a call (`scaled_rounds`' forward over
/// reverse variant, with a local buffer of fixed length, its shadow, a slice parameter
/// and a `&mut` one, `y[y.len() - 1] *= ..` among them) and in the objective's own code
/// (a triangular product through a running counter).
#[differentiable]
fn scaled_rounds(x: &[f64], y: &mut [f64]) -> f64 {
    let d = x.len();
    let mut q = vec![0.0; d];
    let mut s = 0.0;
    for round in 0..2 {
        for j in 0..d {
            q[j] = x[j] * (round as f64 + 1.0);
        }
        for i in 0..d {
            for j in i + 1..d {
                q[j] += x[i] * x[j - i - 1].cos();
            }
        }
        for j in 0..d {
            y[j] *= 1.0 + 0.1 * q[j].tanh();
            s += q[j] * y[j];
        }
    }
    y[y.len() - 1] *= 1.5 + q[0].sin();
    s + y[0] * y[d - 1]
}

fn scaled_rounds_o<D: Num>(x: &[D], y: &mut [D]) -> D {
    let d = x.len();
    let mut q = vec![c::<D>(0.0); d];
    let mut s = c::<D>(0.0);
    for round in 0..2 {
        for j in 0..d {
            q[j] = x[j] * c::<D>(round as f64 + 1.0);
        }
        for i in 0..d {
            for j in i + 1..d {
                q[j] += x[i] * x[j - i - 1].cos();
            }
        }
        for j in 0..d {
            y[j] *= c::<D>(1.0) + c::<D>(0.1) * q[j].tanh();
            s += q[j] * y[j];
        }
    }
    let last = y.len() - 1;
    y[last] *= c::<D>(1.5) + q[0].sin();
    s + y[0] * y[d - 1]
}

#[autodiff_reverse(replayed_objective_rev, Duplicated, Active)]
fn replayed_objective(p: &[f64]) -> f64 {
    let d = p.len();
    let mut y = vec![1.0; d];
    let mut t = 0.0;
    let mut li = 0;
    for i in 0..d {
        for j in i + 1..d {
            t += p[li % d] * p[i] * p[j];
            li += 1;
        }
    }
    let s = scaled_rounds(p, &mut y);
    let mut total = t + s;
    for j in 0..d {
        total += y[j] * p[j];
    }
    total
}

fn replayed_objective_o<D: Num>(p: &[D]) -> D {
    let d = p.len();
    let mut y = vec![c::<D>(1.0); d];
    let mut t = c::<D>(0.0);
    let mut li = 0;
    for i in 0..d {
        for j in i + 1..d {
            t += p[li % d] * p[i] * p[j];
            li += 1;
        }
    }
    let s = scaled_rounds_o(p, &mut y);
    let mut total = t + s;
    for j in 0..d {
        total += y[j] * p[j];
    }
    total
}

/// The gradient through the named reverse companion, whose H·v companion is given a
/// gradient buffer longer than `p`: the companion cuts it to `p`'s length, as the
/// reverse companion does, and the elements past it stay as they were.
#[autodiff_forward(replayed_objective_hvp, Dual, Dual)]
fn replayed_objective_grad(p: &[f64], g: &mut [f64]) {
    replayed_objective_rev(p, g, 1.0);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn elements_replayed_by_hessian_vector_products((x, v, _) in slice_case(-1.0, 1.0, 1..7, 0)) {
        check_hvp_of::<replayed_objective_rev>(&x, &v, replayed_objective_o);
        let n = x.len();
        let (mut g, mut hv) = (vec![0.0; n + 2], vec![0.0; n + 2]);
        g[n] = 7.0;
        hv[n + 1] = -3.0;
        replayed_objective_hvp(&x, &v, &mut g, &mut hv);
        check_hvp(&hv[..n], &x, &v, replayed_objective_o);
        let (_, grad) = oracle_grad(replayed_objective_o, &x);
        for i in 0..n {
            check(&format!("gradient[{i}]"), g[i], grad[i]);
        }
        prop_assert_eq!((g[n], g[n + 1], hv[n], hv[n + 1]), (7.0, 0.0, 0.0, -3.0));
    }
}

/// A gradient buffer shorter than `p` is refused where the H·v companion cuts it to `p`'s
/// length, before any element is reached (in release builds too, where the replayed
/// accesses after it are not checked again).
#[test]
#[should_panic(expected = "out of range for slice of length 2")]
fn hessian_vector_products_refuse_a_short_gradient_buffer() {
    let (mut g, mut hv) = (vec![0.0; 2], vec![0.0; 3]);
    replayed_objective_hvp(&[0.1, 0.2, 0.3], &[1.0, 0.0, 0.0], &mut g, &mut hv);
}

/// `pop` of a local vector: `pop().unwrap()`, a statement `v.pop();` (of an empty vector
/// too), `if let Some(u) = q.pop()`, `pop().unwrap_or(d)` of an empty vector, and a stack
/// emptied by `while let Some(t) = st.pop()` that pops again inside.
#[autodiff_forward(popped_fwd, Dual, Dual)]
#[autodiff_reverse(popped_rev, Duplicated, Active)]
fn popped(x: &[f64]) -> f64 {
    let mut st = x.to_vec();
    let a = st.pop().unwrap();
    st.pop();
    let mut s = a * a;
    let mut q = vec![x[0] * 2.0];
    if let Some(u) = q.pop() {
        s += u.sin();
    }
    q.pop();
    let e = q.pop().unwrap_or(0.25);
    while let Some(t) = st.pop() {
        s = s * 0.5 + t * t;
        st.pop();
    }
    s + e + st.len() as f64
}

fn popped_o<N: Num>(x: &[N]) -> N {
    let n = x.len();
    let mut s = x[n - 1] * x[n - 1] + (x[0] * 2.0).sin();
    // The stack holds x[..n - 2]; each turn takes the last and drops the one before.
    let mut k = n - 2;
    while k > 0 {
        s = s * 0.5 + x[k - 1] * x[k - 1];
        k = k.saturating_sub(2);
    }
    s + 0.25
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn values_popped_off_local_vectors((x, v, s0) in slice_case(-1.2, 1.2, 2..9, 0), s in seed()) {
        check_slice("popped", (&x, &v, &s0, s), popped, popped_fwd, popped_rev, popped_o::<Dual64>);
        check_hvp_of::<popped_rev>(&x, &v, popped_o);
    }
}
