//! `ndarray` arrays that a differentiated function creates (`Array1::zeros(n)`,
//! `Array2::zeros((r, c))`, `ones`, `from_elem` of a constant, `from_vec`, `from_shape_vec`;
//! elementwise maps,
//! `z.mapv(f)`; whole-array expressions, `(xs.dot(&w.t()) + b).mapv(f64::tanh)`): written
//! and read by index, reduced (`sum`, `dot`), read by rows and
//! columns, overwritten in loops (buffers reused per point and component, as in a mixture
//! model), lent to `#[differentiable]` callees and swapped, in both modes and under H·v,
//! at random shapes and points, against num-dual oracles written on flat row-major
//! slices.

// Index loops are constructs under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use ndarray::{Array1, Array2};
use proptest::prelude::*;

/// `v · tanh(W x + b) + ½ Σ h + 0.1 Σ h²` with the hidden layer `h` in a local array.
#[autodiff_forward(hidden_fwd, Dual, Dual, Dual, Const, Dual)]
#[autodiff_reverse(hidden_rev, Duplicated, Duplicated, Duplicated, Const, Active)]
fn hidden(w: &Array2<f64>, b: &Array1<f64>, v: &Array1<f64>, x: &Array1<f64>) -> f64 {
    let (m, n) = w.dim();
    let mut h = Array1::zeros(m);
    for i in 0..m {
        let mut acc = b[i];
        for j in 0..n {
            acc += w[[i, j]] * x[j];
        }
        h[i] = acc.tanh();
    }
    let squares: f64 = h.iter().map(|t| t * t).sum();
    v.dot(&h) + 0.5 * h.sum() + 0.1 * squares
}

fn hidden_oracle<D: Num>(w: &[D], b: &[D], v: &[D], x: &[f64], m: usize, n: usize) -> D {
    let mut out = D::zero();
    for i in 0..m {
        let mut acc = b[i];
        for j in 0..n {
            acc += w[i * n + j] * x[j];
        }
        let h = acc.tanh();
        out += v[i] * h + h * 0.5 + h * h * 0.1;
    }
    out
}

/// The gradient, whose forward companion is the H·v.
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(hidden_hvp, Dual, Dual, Dual, Dual, Dual, Dual, Const)]
fn hidden_grad(
    w: &Array2<f64>,
    b: &Array1<f64>,
    v: &Array1<f64>,
    gw: &mut Array2<f64>,
    gb: &mut Array1<f64>,
    gv: &mut Array1<f64>,
    x: &Array1<f64>,
) {
    hidden_rev(w, gw, b, gb, v, gv, x, 1.0);
}

/// A log-sum-exp over components of `-½‖Q(p − μ_c)‖²`, with the centred point, `Q`'s
/// product and the terms in local arrays overwritten for each point and component.
#[autodiff_forward(mixture_fwd, Dual, Const, Dual)]
#[autodiff_reverse(mixture_rev, Duplicated, Const, Active)]
fn mixture(means: &Array2<f64>, pts: &Array2<f64>) -> f64 {
    let (k, d) = means.dim();
    let mut xc = Array1::zeros(d);
    let mut q = Array1::<f64>::zeros(d);
    let mut terms = Array1::zeros(k);
    let mut total = 0.0;
    for p in 0..pts.nrows() {
        for c in 0..k {
            for j in 0..d {
                xc[j] = pts[[p, j]] - means[[c, j]];
            }
            for j in 0..d {
                q[j] = xc[j] * (1.0 + 0.1 * j as f64);
            }
            for j in 1..d {
                q[j] += 0.5 * q[j - 1] * xc[j];
            }
            let mut s = 0.0;
            for j in 0..d {
                s += q[j] * q[j];
            }
            terms[c] = -0.5 * s;
        }
        let mut mx = terms[0];
        for c in 1..k {
            mx = mx.max(terms[c]);
        }
        let mut se = 0.0;
        for c in 0..k {
            se += (terms[c] - mx).exp();
        }
        total += se.ln() + mx;
    }
    total
}

fn mixture_oracle<D: Num>(means: &[D], pts: &[f64], k: usize, d: usize) -> D {
    let mut total = D::zero();
    for p in 0..pts.len() / d {
        let terms: Vec<D> = (0..k)
            .map(|c| {
                let xc: Vec<D> = (0..d).map(|j| -means[c * d + j] + pts[p * d + j]).collect();
                let mut q: Vec<D> = (0..d).map(|j| xc[j] * (1.0 + 0.1 * j as f64)).collect();
                for j in 1..d {
                    q[j] = q[j] + q[j - 1] * xc[j] * 0.5;
                }
                let s = q.iter().fold(D::zero(), |a, v| a + *v * *v);
                s * -0.5
            })
            .collect();
        // The largest term as `f64::max` picks it (the shift cancels in the value; its
        // derivative flows through the term picked).
        let mut mx = terms[0];
        for t in &terms[1..] {
            if t.re() > mx.re() {
                mx = *t;
            }
        }
        let se = terms.iter().fold(D::zero(), |a, t| a + (*t - mx).exp());
        total += se.ln() + mx;
    }
    total
}

#[autodiff_forward(mixture_hvp, Dual, Dual, Const)]
fn mixture_grad(means: &Array2<f64>, g: &mut Array2<f64>, pts: &Array2<f64>) {
    mixture_rev(means, g, pts, 1.0);
}

/// `out_i = sin(row_i(a) · x)`, into an array the caller lends.
#[differentiable]
fn squash_into(a: &Array2<f64>, x: &Array1<f64>, out: &mut Array1<f64>) {
    for i in 0..a.nrows() {
        out[i] = a.row(i).dot(x).sin();
    }
}

/// A local matrix read whole, by rows and by columns and lent to a callee with a local
/// vector it writes; two local vectors made by `ones` and `from_elem` and swapped.
#[autodiff_forward(gram_fwd, Dual, Dual)]
#[autodiff_reverse(gram_rev, Duplicated, Active)]
fn gram(x: &Array1<f64>) -> f64 {
    let n = x.len();
    let mut g = Array2::zeros((n, n));
    for i in 0..n {
        for j in 0..n {
            g[[i, j]] = (x[i] - x[j]).powi(2) + 0.5 * x[i];
        }
    }
    let mut h = Array1::zeros(n);
    squash_into(&g, x, &mut h);
    let mut s = g.sum();
    for i in 0..n {
        s += 0.1 * g.row(i).dot(&h) + 0.2 * g.column(i).sum();
    }
    for r in g.rows() {
        s += r[0] * r[n - 1];
    }
    let mut a = Array1::<f64>::ones(n);
    let mut b = Array1::from_elem(n, 0.5);
    for _ in 0..2 {
        for i in 0..n {
            b[i] += a[i] * h[i];
        }
        std::mem::swap(&mut a, &mut b);
    }
    s + a.dot(&h)
}

fn gram_oracle<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let g = |i: usize, j: usize| (x[i] - x[j]).powi(2) + x[i] * 0.5;
    let h: Vec<D> = (0..n)
        .map(|i| (0..n).fold(D::zero(), |a, j| a + g(i, j) * x[j]).sin())
        .collect();
    let mut s = D::zero();
    for i in 0..n {
        for j in 0..n {
            s += g(i, j);
        }
    }
    for i in 0..n {
        let row = (0..n).fold(D::zero(), |a, k| a + g(i, k) * h[k]);
        let col = (0..n).fold(D::zero(), |a, k| a + g(k, i));
        s += row * 0.1 + col * 0.2;
    }
    for i in 0..n {
        s += g(i, 0) * g(i, n - 1);
    }
    let mut a = vec![D::one(); n];
    let mut b = vec![c::<D>(0.5); n];
    for _ in 0..2 {
        for i in 0..n {
            b[i] += a[i] * h[i];
        }
        std::mem::swap(&mut a, &mut b);
    }
    s + (0..n).fold(D::zero(), |acc, i| acc + a[i] * h[i])
}

#[autodiff_forward(gram_hvp, Dual, Dual)]
fn gram_grad(x: &Array1<f64>, g: &mut Array1<f64>) {
    gram_rev(x, g, 1.0);
}

/// An `f32` local array.
#[autodiff_reverse(weighted32_rev, Duplicated, Active)]
fn weighted32(x: &[f32]) -> f32 {
    let mut h = Array1::<f32>::zeros(x.len());
    for i in 0..x.len() {
        h[i] = x[i] * x[i].sin();
    }
    h.sum()
}

#[differentiable]
fn softplus(v: f64) -> f64 {
    (1.0 + v.exp()).ln()
}

/// A two-layer network written with whole-array maps: the product `w1.dot(x)`, `mapv`
/// of a float method, of a function and of a closure, `mapv_inplace` and `map`.
#[autodiff_forward(net_fwd, Dual, Dual, Dual, Const, Dual)]
#[autodiff_reverse(net_rev, Duplicated, Duplicated, Duplicated, Const, Active)]
fn net(w1: &Array2<f64>, b1: &Array1<f64>, w2: &Array1<f64>, x: &Array1<f64>) -> f64 {
    let z = w1.dot(x);
    let mut h = z.mapv(f64::tanh);
    for i in 0..h.len() {
        h[i] += b1[i];
    }
    h.mapv_inplace(|v| v * v.sin() + 0.5 * v);
    let s = h.map(|v| v.exp());
    let e = w1.mapv(softplus);
    w2.dot(&h) + 0.1 * s.sum() + 0.01 * e.sum()
}

fn net_oracle<D: Num>(w1: &[D], b1: &[D], w2: &[D], x: &[f64], m: usize, n: usize) -> D {
    let mut out = D::zero();
    for i in 0..m {
        let z = (0..n).fold(D::zero(), |a, j| a + w1[i * n + j] * x[j]);
        let t = z.tanh() + b1[i];
        let h = t * t.sin() + t * 0.5;
        out += w2[i] * h + h.exp() * 0.1;
    }
    let e = w1.iter().fold(D::zero(), |a, w| a + (w.exp() + 1.0).ln());
    out + e * 0.01
}

#[allow(clippy::too_many_arguments)]
#[autodiff_forward(net_hvp, Dual, Dual, Dual, Dual, Dual, Dual, Const)]
fn net_grad(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array1<f64>,
    g1: &mut Array2<f64>,
    gb: &mut Array1<f64>,
    g2: &mut Array1<f64>,
    x: &Array1<f64>,
) {
    net_rev(w1, g1, b1, gb, w2, g2, x, 1.0);
}

/// A batch through a two-layer network written with whole-array operations: products of
/// matrices and a transpose, a vector broadcast along the rows, `mapv` of a product,
/// differences, squares and negation of whole arrays, and their sums.
#[autodiff_forward(batch_fwd, Dual, Dual, Dual, Dual, Const, Const, Dual)]
#[autodiff_reverse(
    batch_rev, Duplicated, Duplicated, Duplicated, Duplicated, Const, Const, Active
)]
fn batch_loss(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array2<f64>,
    b2: &Array1<f64>,
    xs: &Array2<f64>,
    ys: &Array2<f64>,
) -> f64 {
    let h = (xs.dot(&w1.t()) + b1).mapv(f64::tanh);
    let out = h.dot(&w2.t()) + b2;
    let r = &out - ys;
    (&r * &r).sum() / xs.nrows() as f64 + 0.01 * (w1 * w1).sum() - 0.1 * (-&h).mapv(f64::exp).sum()
        + (2.0 * &out / 3.0 - 1.0).sum()
}

/// Its oracle, with the layers' shapes `(hid, inp)` and `(outs, hid)`.
#[allow(clippy::too_many_arguments)]
fn batch_oracle<D: Num>(
    w1: &[D],
    b1: &[D],
    w2: &[D],
    b2: &[D],
    xs: &[f64],
    ys: &[f64],
    (hid, inp, outs): (usize, usize, usize),
) -> D {
    let rows = xs.len() / inp;
    let mut total = D::zero();
    let mut reg = D::zero();
    for w in w1 {
        reg += *w * *w;
    }
    for s in 0..rows {
        let h: Vec<D> = (0..hid)
            .map(|i| {
                (0..inp)
                    .fold(b1[i], |a, j| a + w1[i * inp + j] * xs[s * inp + j])
                    .tanh()
            })
            .collect();
        for o in 0..outs {
            let out = (0..hid).fold(b2[o], |a, i| a + w2[o * hid + i] * h[i]);
            let r = out - ys[s * outs + o];
            total += r * r / rows as f64 + (out * 2.0 / 3.0 - 1.0);
        }
        for v in &h {
            total -= (-*v).exp() * 0.1;
        }
    }
    total + reg * 0.01
}

#[allow(clippy::too_many_arguments)]
#[autodiff_forward(
    batch_hvp, Dual, Dual, Dual, Dual, Dual, Dual, Dual, Dual, Const, Const
)]
fn batch_grad(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array2<f64>,
    b2: &Array1<f64>,
    g1: &mut Array2<f64>,
    gb1: &mut Array1<f64>,
    g2: &mut Array2<f64>,
    gb2: &mut Array1<f64>,
    xs: &Array2<f64>,
    ys: &Array2<f64>,
) {
    batch_rev(w1, g1, b1, gb1, w2, g2, b2, gb2, xs, ys, 1.0);
}

/// `Σ_i (a_i · x)² ` of the rows, lent as a whole-array value.
#[differentiable]
fn row_squares(a: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..a.nrows() {
        let d = a.row(i).dot(x);
        s += d * d;
    }
    s
}

/// Whole arrays updated in place (`+=` of an array and of a broadcast vector, `*=` and
/// `/=` of a float, `-=` of a map, `fill`), assigned a whole-array value in a loop,
/// copied (`clone`, `to_owned`), an element of a whole-array value, and such a value
/// lent to a callee.
#[autodiff_forward(updates_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(updates_rev, Duplicated, Duplicated, Active)]
fn updates(w: &Array2<f64>, b: &Array1<f64>) -> f64 {
    let mut h = w.dot(b);
    h += b;
    h *= 2.0;
    let mut g = Array2::<f64>::zeros(w.dim());
    g += w;
    g -= &w.mapv(f64::sin);
    g += b;
    g /= 3.0;
    let c = h.clone();
    for _ in 0..3 {
        h = &h * 0.5 + &c.mapv(f64::tanh);
    }
    let mut k = Array1::<f64>::zeros(h.len());
    k.fill(b[0]);
    k += &h.to_owned();
    h.sum() + g.sum() + k.dot(&c) + (&c * 2.0)[0] + row_squares(&(&g * 0.5), b)
}

fn updates_oracle<D: Num>(w: &[D], b: &[D], n: usize) -> D {
    let wb: Vec<D> = (0..n)
        .map(|i| (0..n).fold(D::zero(), |a, j| a + w[i * n + j] * b[j]))
        .collect();
    let c: Vec<D> = (0..n).map(|i| (wb[i] + b[i]) * 2.0).collect();
    let mut h = c.clone();
    for _ in 0..3 {
        h = (0..n).map(|i| h[i] * 0.5 + c[i].tanh()).collect();
    }
    let g: Vec<D> = (0..n * n)
        .map(|k| (w[k] - w[k].sin() + b[k % n]) / 3.0)
        .collect();
    let sum = |v: &[D]| v.iter().fold(D::zero(), |a, t| a + *t);
    let k: Vec<D> = (0..n).map(|i| b[0] + h[i]).collect();
    let kc = (0..n).fold(D::zero(), |a, i| a + k[i] * c[i]);
    let squares = (0..n).fold(D::zero(), |a, i| {
        let d = (0..n).fold(D::zero(), |s, j| s + g[i * n + j] * 0.5 * b[j]);
        a + d * d
    });
    sum(&h) + sum(&g) + kc + c[0] * 2.0 + squares
}

/// Arrays made from values that carry derivatives: `from_elem` of one and `array![..]`.
#[autodiff_forward(made_fwd, Dual, Dual)]
#[autodiff_reverse(made_rev, Duplicated, Active)]
fn made_from_values(x: &Array1<f64>) -> f64 {
    let a = Array1::from_elem(3, x[0] * 2.0);
    let m = Array2::from_elem((2, 2), x[1].sin());
    let b = ndarray::array![x[0], 1.0, x[1] * x[0]];
    let c = &a * &b;
    c.sum() + m.sum() * x[2] + b.dot(&a)
}

fn made_oracle<D: Num>(x: &[D]) -> D {
    let a = x[0] * 2.0;
    let b = [x[0], D::one(), x[1] * x[0]];
    let ab = b.iter().fold(D::zero(), |s, v| s + a * *v);
    ab + ab + x[1].sin() * 4.0 * x[2]
}

/// Arrays made from vectors: `Array1::from_vec` of a computed `Vec`, `Array1::from` of a
/// `vec![..]`, `Array2::from_shape_vec` of `x.to_vec()` and of a computed `Vec`; and the
/// constant `eye` and `linspace`.
#[autodiff_forward(from_vectors_fwd, Dual, Dual)]
#[autodiff_reverse(from_vectors_rev, Duplicated, Active)]
fn from_vectors(x: &[f64]) -> f64 {
    let n = x.len();
    let v: Vec<f64> = x.iter().map(|t| t.sin()).collect();
    let a = Array1::from_vec(v);
    let b = Array1::from(vec![x[0] * x[n - 1], 2.0]);
    let m = Array2::from_shape_vec((1, n), x.to_vec()).unwrap();
    let sq: Vec<f64> = x.iter().map(|t| t * t).collect();
    let q = Array2::from_shape_vec((n, 1), sq).expect("a column");
    let e = Array2::<f64>::eye(2);
    let t = Array1::linspace(0.5, 1.0, 2);
    a.sum() * b[0] + b.dot(&b) + m.dot(&q).sum() + m.mapv(f64::exp).sum() + (e.dot(&t) * &b).sum()
}

fn from_vectors_oracle<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let a = x.iter().fold(D::zero(), |s, t| s + t.sin());
    let b0 = x[0] * x[n - 1];
    let mq = x.iter().fold(D::zero(), |s, t| s + *t * *t * *t);
    let e = x.iter().fold(D::zero(), |s, t| s + t.exp());
    a * b0 + b0 * b0 + 4.0 + mq + e + b0 * 0.5 + 2.0
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_hidden_layer_in_a_local_array(
        (m, n) in (1usize..5, 1usize..5),
        p in prop::collection::vec(-1.5f64..1.5, 40),
        seed in 0usize..9,
    ) {
        let (w, b, v, x) = (&p[..m * n], &p[16..16 + m], &p[24..24 + m], &p[32..32 + n]);
        let (wm, bv, vv, xv) = (matrix(m, n, w), Array1::from_vec(b.to_vec()), Array1::from_vec(v.to_vec()), Array1::from_vec(x.to_vec()));
        let params: Vec<f64> = w.iter().chain(b).chain(v).copied().collect();
        let oracle = |d: &[Dual64]| hidden_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], x, m, n);
        let (value, grad) = oracle_grad(oracle, &params);

        let (mut gw, mut gb, mut gv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        check("value", hidden_rev(&wm, &mut gw, &bv, &mut gb, &vv, &mut gv, &xv, 1.0), value);
        check("primal", hidden(&wm, &bv, &vv, &xv), value);
        let got: Vec<f64> = flat(&gw).into_iter().chain(gb.iter().copied()).chain(gv.iter().copied()).collect();
        check_all("gradient", &got, &grad);

        let dir = direction(params.len(), seed);
        let (dw, db, dv) = (matrix(m, n, &dir[..m * n]), Array1::from_vec(dir[m * n..m * n + m].to_vec()), Array1::from_vec(dir[m * n + m..].to_vec()));
        let (fv, t) = hidden_fwd(&wm, &dw, &bv, &db, &vv, &dv, &xv);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut gw, mut gb, mut gv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        let (mut hw, mut hb, mut hv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        hidden_hvp(&wm, &dw, &bv, &db, &vv, &dv, &mut gw, &mut hw, &mut gb, &mut hb, &mut gv, &mut hv, &xv);
        let h: Vec<f64> = flat(&hw).into_iter().chain(hb.iter().copied()).chain(hv.iter().copied()).collect();
        check_hvp(&h, &params, &dir, |d| hidden_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], x, m, n));
    }

    #[test]
    fn local_arrays_overwritten_for_each_point_and_component(
        (k, d, np) in (1usize..4, 1usize..5, 1usize..4),
        p in prop::collection::vec(-1.5f64..1.5, 24),
        seed in 0usize..9,
    ) {
        let (means, pts) = (&p[..k * d], &p[12..12 + np * d]);
        let (mm, pm) = (matrix(k, d, means), matrix(np, d, pts));
        let oracle = |x: &[Dual64]| mixture_oracle(x, pts, k, d);
        let (value, grad) = oracle_grad(oracle, means);

        let mut g = Array2::zeros((k, d));
        check("value", mixture_rev(&mm, &mut g, &pm, 1.0), value);
        check("primal", mixture(&mm, &pm), value);
        check_all("gradient", &flat(&g), &grad);

        let dir = direction(k * d, seed);
        let (fv, t) = mixture_fwd(&mm, &matrix(k, d, &dir), &pm);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut g, mut hv) = (Array2::zeros((k, d)), Array2::zeros((k, d)));
        mixture_hvp(&mm, &matrix(k, d, &dir), &mut g, &mut hv, &pm);
        check_all("gradient under H·v", &flat(&g), &grad);
        check_hvp(&flat(&hv), means, &dir, |x| mixture_oracle(x, pts, k, d));
    }

    #[test]
    fn local_matrices_read_by_rows_lent_and_swapped(
        x in prop::collection::vec(-1.0f64..1.0, 1..5),
        seed in 0usize..9,
    ) {
        let n = x.len();
        let xv = Array1::from_vec(x.clone());
        let (value, grad) = oracle_grad(gram_oracle, &x);

        let mut g = Array1::zeros(n);
        check("value", gram_rev(&xv, &mut g, 1.0), value);
        check("primal", gram(&xv), value);
        check_all("gradient", g.as_slice().unwrap(), &grad);

        let dir = direction(n, seed);
        let (fv, t) = gram_fwd(&xv, &Array1::from_vec(dir.clone()));
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut g, mut hv) = (Array1::zeros(n), Array1::zeros(n));
        gram_hvp(&xv, &Array1::from_vec(dir.clone()), &mut g, &mut hv);
        check_hvp(hv.as_slice().unwrap(), &x, &dir, gram_oracle);
    }

    #[test]
    fn whole_array_maps(
        (m, n) in (1usize..5, 1usize..5),
        p in prop::collection::vec(-1.5f64..1.5, 40),
        seed in 0usize..9,
    ) {
        let (w, b, v, x) = (&p[..m * n], &p[16..16 + m], &p[24..24 + m], &p[32..32 + n]);
        let (wm, bv, vv, xv) = (matrix(m, n, w), Array1::from_vec(b.to_vec()), Array1::from_vec(v.to_vec()), Array1::from_vec(x.to_vec()));
        let params: Vec<f64> = w.iter().chain(b).chain(v).copied().collect();
        let oracle = |d: &[Dual64]| net_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], x, m, n);
        let (value, grad) = oracle_grad(oracle, &params);

        let (mut gw, mut gb, mut gv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        check("value", net_rev(&wm, &mut gw, &bv, &mut gb, &vv, &mut gv, &xv, 1.0), value);
        check("primal", net(&wm, &bv, &vv, &xv), value);
        let got: Vec<f64> = flat(&gw).into_iter().chain(gb.iter().copied()).chain(gv.iter().copied()).collect();
        check_all("gradient", &got, &grad);

        let dir = direction(params.len(), seed);
        let (dw, db, dv) = (matrix(m, n, &dir[..m * n]), Array1::from_vec(dir[m * n..m * n + m].to_vec()), Array1::from_vec(dir[m * n + m..].to_vec()));
        let (fv, t) = net_fwd(&wm, &dw, &bv, &db, &vv, &dv, &xv);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut gw, mut gb, mut gv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        let (mut hw, mut hb, mut hv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        net_hvp(&wm, &dw, &bv, &db, &vv, &dv, &mut gw, &mut hw, &mut gb, &mut hb, &mut gv, &mut hv, &xv);
        let h: Vec<f64> = flat(&hw).into_iter().chain(hb.iter().copied()).chain(hv.iter().copied()).collect();
        check_hvp(&h, &params, &dir, |d| net_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], x, m, n));
    }

    #[test]
    fn whole_array_operations(
        (hid, inp, outs, rows) in (1usize..4, 1usize..4, 1usize..3, 1usize..4),
        p in prop::collection::vec(-1.2f64..1.2, 60),
        seed in 0usize..9,
    ) {
        let shape = (hid, inp, outs);
        let n1 = hid * inp;
        let n2 = outs * hid;
        let params = p[..n1 + hid + n2 + outs].to_vec();
        let (xs, ys) = (&p[30..30 + rows * inp], &p[45..45 + rows * outs]);
        let split = |q: &[f64]| {
            (
                matrix(hid, inp, &q[..n1]),
                Array1::from_vec(q[n1..n1 + hid].to_vec()),
                matrix(outs, hid, &q[n1 + hid..n1 + hid + n2]),
                Array1::from_vec(q[n1 + hid + n2..].to_vec()),
            )
        };
        let oracle = |d: &[Dual64]| {
            batch_oracle(&d[..n1], &d[n1..n1 + hid], &d[n1 + hid..n1 + hid + n2], &d[n1 + hid + n2..], xs, ys, shape)
        };
        let (value, grad) = oracle_grad(oracle, &params);
        let (w1, b1, w2, b2) = split(&params);
        let (xm, ym) = (matrix(rows, inp, xs), matrix(rows, outs, ys));

        let (mut g1, mut gb1, mut g2, mut gb2) = (Array2::zeros((hid, inp)), Array1::zeros(hid), Array2::zeros((outs, hid)), Array1::zeros(outs));
        check("value", batch_rev(&w1, &mut g1, &b1, &mut gb1, &w2, &mut g2, &b2, &mut gb2, &xm, &ym, 1.0), value);
        check("primal", batch_loss(&w1, &b1, &w2, &b2, &xm, &ym), value);
        let got: Vec<f64> = g1.iter().chain(gb1.iter()).chain(g2.iter()).chain(gb2.iter()).copied().collect();
        check_all("gradient", &got, &grad);

        let dir = direction(params.len(), seed);
        let (d1, db1, d2, db2) = split(&dir);
        let (fv, t) = batch_fwd(&w1, &d1, &b1, &db1, &w2, &d2, &b2, &db2, &xm, &ym);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut g1, mut gb1, mut g2, mut gb2) = (Array2::zeros((hid, inp)), Array1::zeros(hid), Array2::zeros((outs, hid)), Array1::zeros(outs));
        let (mut h1, mut hb1, mut h2, mut hb2) = (Array2::zeros((hid, inp)), Array1::zeros(hid), Array2::zeros((outs, hid)), Array1::zeros(outs));
        batch_hvp(
            &w1, &d1, &b1, &db1, &w2, &d2, &b2, &db2,
            &mut g1, &mut h1, &mut gb1, &mut hb1, &mut g2, &mut h2, &mut gb2, &mut hb2,
            &xm, &ym,
        );
        let hv: Vec<f64> = h1.iter().chain(hb1.iter()).chain(h2.iter()).chain(hb2.iter()).copied().collect();
        check_hvp(&hv, &params, &dir, |d| {
            batch_oracle(&d[..n1], &d[n1..n1 + hid], &d[n1 + hid..n1 + hid + n2], &d[n1 + hid + n2..], xs, ys, shape)
        });
    }

    #[test]
    fn whole_arrays_updated_in_place(
        n in 1usize..5,
        p in prop::collection::vec(-1.5f64..1.5, 30),
        seed in 0usize..9,
    ) {
        let params = p[..n * n + n].to_vec();
        let oracle = |d: &[Dual64]| updates_oracle(&d[..n * n], &d[n * n..], n);
        let (value, grad) = oracle_grad(oracle, &params);
        let (wm, bv) = (matrix(n, n, &params[..n * n]), Array1::from_vec(params[n * n..].to_vec()));

        let (mut gw, mut gb) = (Array2::zeros((n, n)), Array1::zeros(n));
        check("value", updates_rev(&wm, &mut gw, &bv, &mut gb, 1.0), value);
        check("primal", updates(&wm, &bv), value);
        let got: Vec<f64> = flat(&gw).into_iter().chain(gb.iter().copied()).collect();
        check_all("gradient", &got, &grad);

        let dir = direction(params.len(), seed);
        let (fv, t) = updates_fwd(&wm, &matrix(n, n, &dir[..n * n]), &bv, &Array1::from_vec(dir[n * n..].to_vec()));
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());
    }

    #[test]
    fn arrays_made_from_vectors(x in prop::collection::vec(-1.5f64..1.5, 1..6), seed in 0usize..9) {
        let (value, grad) = oracle_grad(from_vectors_oracle, &x);
        let mut g = vec![0.0; x.len()];
        check("value", from_vectors_rev(&x, &mut g, 1.0), value);
        check("primal", from_vectors(&x), value);
        check_all("gradient", &g, &grad);
        let dir = direction(x.len(), seed);
        let (fv, t) = from_vectors_fwd(&x, &dir);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());
    }

    #[test]
    fn arrays_made_from_values(x in prop::collection::vec(-1.5f64..1.5, 3), seed in 0usize..9) {
        let xv = Array1::from_vec(x.clone());
        let (value, grad) = oracle_grad(made_oracle, &x);
        let mut g = Array1::zeros(3);
        check("value", made_rev(&xv, &mut g, 1.0), value);
        check("primal", made_from_values(&xv), value);
        check_all("gradient", g.as_slice().unwrap(), &grad);
        let dir = direction(3, seed);
        let (fv, t) = made_fwd(&xv, &Array1::from_vec(dir.clone()));
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());
    }

    #[test]
    fn an_f32_local_array(x in prop::collection::vec(-2.0f32..2.0, 1..6)) {
        let mut g = vec![0.0f32; x.len()];
        let value = weighted32_rev(&x, &mut g, 1.0);
        let want: f32 = x.iter().map(|v| v * v.sin()).sum();
        check_tol("value", value as f64, want as f64, 1e-5);
        for (i, v) in x.iter().enumerate() {
            // d/dx (x sin x) = sin x + x cos x.
            check_tol(&format!("gradient[{i}]"), g[i] as f64, (v.sin() + v * v.cos()) as f64, 1e-5);
        }
    }
}
