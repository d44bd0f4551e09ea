//! `ndarray` arrays as parameters (feature `ndarray` of autodiff-core): element reads and
//! writes by index (`a[i]`, `a[[i, j]]`), shape methods, iterator chains over a
//! one-dimensional array, an `&mut Array1` output, calls between functions that take
//! arrays, a struct whose members are arrays, and H·v through them, at random shapes and
//! points, against num-dual oracles written on flat row-major slices.

// Index loops are constructs under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use ndarray::{Array1, Array2};
use proptest::prelude::*;

/// `Σ_i tanh((A x)_i)`: two-dimensional indexing and `dim()`.
#[autodiff_forward(tanh_mv_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(tanh_mv_rev, Duplicated, Duplicated, Active)]
fn tanh_mv(a: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let (m, n) = a.dim();
    let mut s = 0.0;
    for i in 0..m {
        let mut y = 0.0;
        for j in 0..n {
            y += a[[i, j]] * x[j];
        }
        s += y.tanh();
    }
    s
}

fn tanh_mv_oracle<D: Num>(a: &[D], x: &[D], m: usize, n: usize) -> D {
    let mut s = D::zero();
    for i in 0..m {
        let mut y = D::zero();
        for j in 0..n {
            y += a[i * n + j] * x[j];
        }
        s += y.tanh();
    }
    s
}

/// `out = sin(W x + b)` into an `&mut Array1`, shapes from `nrows()`/`ncols()`.
#[differentiable]
#[autodiff_forward(layer_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(layer_rev, Duplicated, Duplicated, Duplicated, Duplicated)]
fn layer(w: &Array2<f64>, b: &Array1<f64>, x: &Array1<f64>, out: &mut Array1<f64>) {
    for i in 0..w.nrows() {
        let mut acc = b[i];
        for j in 0..w.ncols() {
            acc += w[[i, j]] * x[j];
        }
        out[i] = acc.sin();
    }
}

fn layer_oracle<D: Num>(w: &[D], b: &[D], x: &[D], m: usize, n: usize) -> Vec<D> {
    (0..m)
        .map(|i| {
            let mut acc = b[i];
            for j in 0..n {
                acc += w[i * n + j] * x[j];
            }
            acc.sin()
        })
        .collect()
}

/// `Σ_i v_i tanh((W x + b)_i)`, through a call of a function that takes arrays, with a
/// `Vec` for the hidden layer, and an iterator chain over an array.
#[differentiable]
fn hidden(w: &Array2<f64>, b: &Array1<f64>, x: &Array1<f64>, h: &mut [f64]) {
    for i in 0..w.nrows() {
        let mut acc = b[i];
        for j in 0..w.ncols() {
            acc += w[[i, j]] * x[j];
        }
        h[i] = acc.tanh();
    }
}

#[autodiff_reverse(mlp_rev, Duplicated, Duplicated, Duplicated, Const, Active)]
fn mlp(w: &Array2<f64>, b: &Array1<f64>, v: &Array1<f64>, x: &Array1<f64>) -> f64 {
    let mut h = vec![0.0; w.nrows()];
    hidden(w, b, x, &mut h);
    let y: f64 = v.iter().enumerate().map(|(i, vi)| vi * h[i]).sum();
    0.5 * y * y + 0.01 * v.iter().map(|t| t * t).sum::<f64>()
}

fn mlp_oracle<D: Num>(w: &[D], b: &[D], v: &[D], x: &[f64], m: usize, n: usize) -> D {
    let mut y = D::zero();
    let mut reg = D::zero();
    for i in 0..m {
        let mut acc = b[i];
        for j in 0..n {
            acc += w[i * n + j] * c::<D>(x[j]);
        }
        y += v[i] * acc.tanh();
        reg += v[i] * v[i];
    }
    c::<D>(0.5) * y * y + c::<D>(0.01) * reg
}

/// The gradient of `mlp` with respect to `w`, `b`, `v`, added into `gw`, `gb`, `gv`, whose
/// forward companion is the Hessian-vector product.
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(mlp_hvp, Dual, Dual, Dual, Dual, Dual, Dual, Const)]
fn mlp_grad(
    w: &Array2<f64>,
    b: &Array1<f64>,
    v: &Array1<f64>,
    gw: &mut Array2<f64>,
    gb: &mut Array1<f64>,
    gv: &mut Array1<f64>,
    x: &Array1<f64>,
) {
    mlp_rev(w, gw, b, gb, v, gv, x, 1.0);
}

/// Generic over the float type: `Σ x_i² · a_i` at `f32`, `mapv`-free.
#[autodiff_reverse(weighted_rev, Duplicated, Const, Active)]
fn weighted<F: Real>(x: &Array1<F>, a: &Array1<F>) -> F {
    let mut s = F::zero();
    for i in 0..x.len() {
        s += x[i] * x[i] * a[i];
    }
    s
}

/// Generic whole-array reductions, typed by the arrays' element type: `x·a + Σx`.
#[autodiff_reverse(reduced_rev, Duplicated, Const, Active)]
#[autodiff_forward(reduced_fwd, Dual, Const, Dual)]
fn reduced<F: Real>(x: &Array1<F>, a: &Array1<F>) -> F {
    x.dot(a) + x.sum()
}

/// A model whose members are arrays, with a method reading them by index.
#[differentiable]
struct Model {
    w: Array2<f64>,
    b: Array1<f64>,
}

impl Model {
    #[differentiable]
    fn predict(&self, x: &[f64], out: &mut [f64]) {
        for i in 0..self.w.nrows() {
            let mut acc = self.b[i];
            for j in 0..self.w.ncols() {
                acc += self.w[[i, j]] * x[j];
            }
            out[i] = acc.tanh();
        }
    }
}

impl Model {
    /// [`Model::predict`] read by rows of the member: a loop over `rows()`, and the same
    /// row read again, `self.w.row(i)`, each zipped with `x`.
    #[differentiable]
    fn predict_by_rows(&self, x: &[f64], out: &mut [f64]) {
        for (i, r) in self.w.rows().into_iter().enumerate() {
            let by_loop: f64 = r.iter().zip(x).map(|(a, b)| a * b).sum();
            let by_index: f64 = self.w.row(i).iter().zip(x).map(|(a, b)| a * b).sum();
            out[i] = (self.b[i] + 0.5 * (by_loop + by_index)).tanh();
        }
    }
}

/// [`model_loss`] through [`Model::predict_by_rows`].
#[autodiff_reverse(model_loss_by_rows_rev, Duplicated, Const, Active)]
#[autodiff_forward(model_loss_by_rows_fwd, Dual, Const, Dual)]
fn model_loss_by_rows(m: &Model, x: &[f64]) -> f64 {
    let mut h = vec![0.0; m.b.len()];
    m.predict_by_rows(x, &mut h);
    h[0] * h[0] + h[1] - h[2].sin()
}

#[autodiff_reverse(model_loss_rev, Duplicated, Const, Active)]
fn model_loss(m: &Model, x: &[f64]) -> f64 {
    let mut h = vec![0.0; m.b.len()];
    m.predict(x, &mut h);
    h[0] * h[0] + h[1] - h[2].sin()
}

/// [`model_loss`] with the shapes read from the members (`m.w.dim()`, `self.w.dim()`).
#[autodiff_reverse(model_loss_by_shape_rev, Duplicated, Const, Active)]
#[autodiff_forward(model_loss_by_shape_fwd, Dual, Const, Dual)]
fn model_loss_by_shape(m: &Model, x: &[f64]) -> f64 {
    let (rows, _) = m.w.dim();
    let mut h = vec![0.0; rows];
    m.predict_by_shape(x, &mut h);
    h[0] * h[0] + h[1] - h[2].sin()
}

impl Model {
    #[differentiable]
    fn predict_by_shape(&self, x: &[f64], out: &mut [f64]) {
        let (rows, cols) = self.w.dim();
        assert_eq!((self.w.nrows(), self.w.ncols()), (rows, cols));
        for i in 0..rows {
            let mut acc = self.b[i];
            for j in 0..cols {
                acc += self.w[[i, j]] * x[j];
            }
            out[i] = acc.tanh();
        }
    }
}

impl Model {
    /// `Σ w² + Σ b` over the members' elements, by iterator.
    #[differentiable]
    fn penalty(&self) -> f64 {
        self.w.iter().map(|v| v * v).sum::<f64>() + self.b.iter().sum::<f64>()
    }
}

/// [`model_loss`] with a penalty that iterates over the members.
#[autodiff_reverse(regularized_loss_rev, Duplicated, Const, Active)]
#[autodiff_forward(regularized_loss_fwd, Dual, Const, Dual)]
fn regularized_loss(m: &Model, x: &[f64]) -> f64 {
    model_loss(m, x) + 0.1 * m.penalty()
}

/// A matrix member written through `iter_mut` and read by `iter().enumerate()`.
#[differentiable]
#[derive(Clone)]
struct Grid {
    w: Array2<f64>,
}

#[autodiff_reverse(weighted_squares_rev, Duplicated, Active)]
fn weighted_squares(g: &mut Grid) -> f64 {
    for v in g.w.iter_mut() {
        *v = *v * *v;
    }
    let mut s = 0.0;
    for (k, v) in g.w.iter().enumerate() {
        s += v * (k as f64 + 1.0);
    }
    s
}

#[test]
fn member_matrices_iterated_in_logical_order() {
    let w = [0.1, -0.2, 0.3, 0.4, -0.5, 0.6];
    let mut g = Grid {
        w: matrix(2, 3, &w),
    };
    let mut dg = Grid {
        w: Array2::zeros((2, 3)),
    };
    weighted_squares_rev(&mut g, &mut dg, 1.0);
    // d/dw_k Σ (k + 1) w_k², the elements numbered row after row.
    let want: Vec<f64> = (0..6).map(|k| 2.0 * (k as f64 + 1.0) * w[k]).collect();
    check_all("gradient", &flat(&dg.w), &want);
}

fn model_loss_oracle<D: Num>(w: &[D], b: &[D], x: &[f64]) -> D {
    let h: Vec<D> = (0..3)
        .map(|i| (b[i] + w[2 * i] * x[0] + w[2 * i + 1] * x[1]).tanh())
        .collect();
    h[0] * h[0] + h[1] - h[2].sin()
}

/// `x · y` of two one-dimensional arrays, in a callee.
#[differentiable]
fn inner(x: &Array1<f64>, y: &Array1<f64>) -> f64 {
    x.dot(y)
}

/// Whole-array reductions: `sum` of a matrix and of a vector, and `dot`, directly and
/// through a call.
#[autodiff_forward(reductions_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(reductions_rev, Duplicated, Duplicated, Duplicated, Active)]
fn reductions(a: &Array2<f64>, x: &Array1<f64>, y: &Array1<f64>) -> f64 {
    let total: f64 = a.sum();
    let mut weighted = 0.0;
    for (k, v) in a.iter().enumerate() {
        weighted += v.sin() * k as f64;
    }
    for v in a {
        weighted += v * v * 0.5;
    }
    inner(x, y).sin() + total * x.sum() + (1.0 + x.dot(x)).sqrt() - a.sum().powi(2)
        + weighted
        + a.iter().map(|v| v.cos()).sum::<f64>()
}

fn reductions_oracle<D: Num>(a: &[D], x: &[D], y: &[D]) -> D {
    let total = a.iter().fold(D::zero(), |s, v| s + *v);
    let sx = x.iter().fold(D::zero(), |s, v| s + *v);
    let xy = x.iter().zip(y).fold(D::zero(), |s, (p, q)| s + *p * *q);
    let xx = x.iter().fold(D::zero(), |s, v| s + *v * *v);
    let mut weighted = D::zero();
    for (k, v) in a.iter().enumerate() {
        weighted += v.sin() * k as f64 + *v * *v * 0.5 + v.cos();
    }
    xy.sin() + total * sx + (xx + 1.0).sqrt() - total * total + weighted
}

/// `out = 2 tanh(a)` element by element, through `iter_mut` of a matrix zipped with
/// `iter` of another.
#[autodiff_forward(squash_fwd, Dual, Dual)]
#[autodiff_reverse(squash_rev, Duplicated, Duplicated)]
fn squash(a: &Array2<f64>, out: &mut Array2<f64>) {
    for (o, v) in out.iter_mut().zip(a.iter()) {
        *o = v.tanh() * 2.0;
    }
}

/// The gradient of `reductions`, whose forward companion is the Hessian-vector product.
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(reductions_hvp, Dual, Dual, Dual, Dual, Dual, Dual)]
fn reductions_grad(
    a: &Array2<f64>,
    x: &Array1<f64>,
    y: &Array1<f64>,
    ga: &mut Array2<f64>,
    gx: &mut Array1<f64>,
    gy: &mut Array1<f64>,
) {
    reductions_rev(a, ga, x, gx, y, gy, 1.0);
}

/// Rows and columns of a matrix: `w.row(i).dot(x)`, `w.column(j).sum()`, a row bound to
/// a local and reduced, iterated and indexed, `x.dot(&w.row(0))`, and loops over
/// `rows()` (enumerated) and `columns()`. `w` is `m × n`, `x` has `n` elements.
#[autodiff_forward(lines_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(lines_rev, Duplicated, Duplicated, Active)]
fn lines(w: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let mut s = 0.0;
    for i in 0..w.nrows() {
        s += w.row(i).dot(x).tanh() + w.column(i % w.ncols()).sum() * 0.5;
    }
    for (i, row) in w.rows().into_iter().enumerate() {
        s += row[0] * x[i % x.len()] + row.dot(x).sin();
    }
    for col in w.columns() {
        s += col.iter().map(|v| v * v).sum::<f64>();
    }
    let r = w.row(w.nrows() - 1);
    s + r.sum() * x.dot(&w.row(0)) + r.dot(&r)
}

fn lines_oracle<D: Num>(w: &[D], x: &[D], m: usize, n: usize) -> D {
    let row_dot = |i: usize, v: &[D]| (0..n).fold(D::zero(), |s, j| s + w[i * n + j] * v[j]);
    let mut s = D::zero();
    for i in 0..m {
        let col = (0..m).fold(D::zero(), |acc, k| acc + w[k * n + i % n]);
        s += row_dot(i, x).tanh() + col * 0.5;
    }
    for i in 0..m {
        s += w[i * n] * x[i % n] + row_dot(i, x).sin();
    }
    for j in 0..n {
        s += (0..m).fold(D::zero(), |acc, k| acc + w[k * n + j] * w[k * n + j]);
    }
    let last: Vec<D> = (0..n).map(|j| w[(m - 1) * n + j]).collect();
    let sum_last = last.iter().fold(D::zero(), |acc, v| acc + *v);
    s + sum_last * row_dot(0, x) + row_dot(m - 1, &last)
}

/// Matrix-vector products, `w.dot(x)` (`m` elements) and `b.dot(w)` (`n` elements), as
/// local vectors that are indexed, iterated, dotted and summed. `w` is `m × n`, `b` has
/// `m` elements and `x` has `n`.
#[autodiff_forward(products_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(products_rev, Duplicated, Duplicated, Duplicated, Active)]
fn products(w: &Array2<f64>, b: &Array1<f64>, x: &Array1<f64>) -> f64 {
    let h = w.dot(x);
    let mut s = 0.0;
    for i in 0..h.len() {
        s += (h[i] + b[i]).tanh();
    }
    let g = b.dot(w);
    s + g.iter().map(|v| v * v).sum::<f64>() + h.dot(&h) * 0.5 + h.sum()
}

fn products_oracle<D: Num>(w: &[D], b: &[D], x: &[D], m: usize, n: usize) -> D {
    let h: Vec<D> = (0..m)
        .map(|i| (0..n).fold(D::zero(), |s, j| s + w[i * n + j] * x[j]))
        .collect();
    let g: Vec<D> = (0..n)
        .map(|j| (0..m).fold(D::zero(), |s, i| s + w[i * n + j] * b[i]))
        .collect();
    let mut s = D::zero();
    for i in 0..m {
        s += (h[i] + b[i]).tanh() + h[i] * h[i] * 0.5 + h[i];
    }
    for j in 0..n {
        s += g[j] * g[j];
    }
    s
}

/// The gradient of `products`, whose forward companion is the Hessian-vector product.
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(products_hvp, Dual, Dual, Dual, Dual, Dual, Dual)]
fn products_grad(
    w: &Array2<f64>,
    b: &Array1<f64>,
    x: &Array1<f64>,
    gw: &mut Array2<f64>,
    gb: &mut Array1<f64>,
    gx: &mut Array1<f64>,
) {
    products_rev(w, gw, b, gb, x, gx, 1.0);
}

/// The gradient of `lines`, whose forward companion is the Hessian-vector product.
#[autodiff_forward(lines_hvp, Dual, Dual, Dual, Dual)]
fn lines_grad(w: &Array2<f64>, x: &Array1<f64>, gw: &mut Array2<f64>, gx: &mut Array1<f64>) {
    lines_rev(w, gw, x, gx, 1.0);
}

fn matrix(m: usize, n: usize, v: &[f64]) -> Array2<f64> {
    Array2::from_shape_vec((m, n), v.to_vec()).unwrap()
}

fn flat(a: &Array2<f64>) -> Vec<f64> {
    a.iter().copied().collect()
}

/// A random shape `(m, n)` and values for an `m × n` matrix and vectors of `n` and `m`.
fn shaped() -> impl Strategy<Value = (usize, usize, Vec<f64>, Vec<f64>, Vec<f64>, f64)> {
    (1usize..5, 1usize..5).prop_flat_map(|(m, n)| {
        (
            Just(m),
            Just(n),
            prop::collection::vec(-1.5f64..1.5, m * n),
            prop::collection::vec(-1.5f64..1.5, n),
            prop::collection::vec(-1.5f64..1.5, m),
            -2.0f64..2.0,
        )
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn matrix_vector_by_index((m, n, a, x, _, seed) in shaped()) {
        let am = matrix(m, n, &a);
        let xv = Array1::from_vec(x.clone());
        let mut ax = a.clone();
        ax.extend(&x);
        let oracle = |d: &[Dual64]| tanh_mv_oracle(&d[..m * n], &d[m * n..], m, n);
        let (value, grad) = oracle_grad(oracle, &ax);

        let mut ga = Array2::zeros((m, n));
        let mut gx = Array1::zeros(n);
        let f = tanh_mv_rev(&am, &mut ga, &xv, &mut gx, seed);
        check("value", f, value);
        check("primal", tanh_mv(&am, &xv), value);
        let mut got = flat(&ga);
        got.extend(gx.iter());
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient", &got, &want);

        // Forward along a direction of all inputs.
        let dir: Vec<f64> = (0..ax.len()).map(|i| ((i * 7 % 5) as f64 - 2.0) * 0.3).collect();
        let (fv, t) = tanh_mv_fwd(&am, &matrix(m, n, &dir[..m * n]), &xv, &Array1::from_vec(dir[m * n..].to_vec()));
        check("forward value", fv, value);
        let jv: f64 = grad.iter().zip(&dir).map(|(g, d)| g * d).sum();
        check("forward tangent", t, jv);
    }

    #[test]
    fn output_array_in_both_modes((m, n, w, x, b, _) in shaped(), wts in prop::collection::vec(-1.0f64..1.0, 4)) {
        let wm = matrix(m, n, &w);
        let (bv, xv) = (Array1::from_vec(b.clone()), Array1::from_vec(x.clone()));
        let mut inputs = w.clone();
        inputs.extend(&b);
        inputs.extend(&x);
        let oracle = |d: &[Dual64]| layer_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], m, n);

        // Forward: the tangent of `out` along a direction of all inputs.
        let dir: Vec<f64> = (0..inputs.len()).map(|i| ((i * 3 % 7) as f64 - 3.0) * 0.25).collect();
        let (want_out, want_t) = oracle_jvp(oracle, &inputs, &dir);
        let mut out = Array1::zeros(m);
        let mut dout = Array1::zeros(m);
        layer_fwd(
            &wm, &matrix(m, n, &dir[..m * n]),
            &bv, &Array1::from_vec(dir[m * n..m * n + m].to_vec()),
            &xv, &Array1::from_vec(dir[m * n + m..].to_vec()),
            &mut out, &mut dout,
        );
        check_all("out", out.as_slice().unwrap(), &want_out);
        check_all("out tangent", dout.as_slice().unwrap(), &want_t);

        // Reverse: the adjoint of `out` is given in its shadow, which comes back zeroed.
        let wbar: Vec<f64> = (0..m).map(|i| wts[i % 4]).collect();
        let want = oracle_vjp(oracle, &inputs, &wbar);
        let (mut gw, mut gb, mut gx) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(n));
        let mut out = Array1::zeros(m);
        let mut bout = Array1::from_vec(wbar.clone());
        layer_rev(&wm, &mut gw, &bv, &mut gb, &xv, &mut gx, &mut out, &mut bout);
        check_all("out (reverse)", out.as_slice().unwrap(), &want_out);
        let mut got = flat(&gw);
        got.extend(gb.iter());
        got.extend(gx.iter());
        check_all("vjp", &got, &want);
        prop_assert!(bout.iter().all(|v| *v == 0.0), "the output's adjoint is consumed");
    }

    #[test]
    fn calls_iterators_and_hvp((m, n, w, x, b, _) in shaped(), v in prop::collection::vec(-1.0f64..1.0, 4), dir_seed in 0usize..5) {
        let vv: Vec<f64> = (0..m).map(|i| v[i % 4]).collect();
        let (wm, bv, vvec, xv) = (matrix(m, n, &w), Array1::from_vec(b.clone()), Array1::from_vec(vv.clone()), Array1::from_vec(x.clone()));
        let mut params = w.clone();
        params.extend(&b);
        params.extend(&vv);
        let split = |d: &[Dual64]| mlp_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], &x, m, n);
        let (value, grad) = oracle_grad(split, &params);

        let (mut gw, mut gb, mut gv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        let f = mlp_rev(&wm, &mut gw, &bv, &mut gb, &vvec, &mut gv, &xv, 1.0);
        check("value", f, value);
        let mut got = flat(&gw);
        got.extend(gb.iter());
        got.extend(gv.iter());
        check_all("gradient", &got, &grad);

        // H·v by forward over reverse.
        let dir: Vec<f64> = (0..params.len()).map(|i| (((i + dir_seed) * 5 % 9) as f64 - 4.0) * 0.2).collect();
        let (mut gw, mut gb, mut gv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        let (mut hw, mut hb, mut hv) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(m));
        mlp_hvp(
            &wm, &matrix(m, n, &dir[..m * n]),
            &bv, &Array1::from_vec(dir[m * n..m * n + m].to_vec()),
            &vvec, &Array1::from_vec(dir[m * n + m..].to_vec()),
            &mut gw, &mut hw, &mut gb, &mut hb, &mut gv, &mut hv, &xv,
        );
        let mut g2 = flat(&gw);
        g2.extend(gb.iter());
        g2.extend(gv.iter());
        check_all("gradient under H·v", &g2, &grad);
        let mut h = flat(&hw);
        h.extend(hb.iter());
        h.extend(hv.iter());
        check_hvp(&h, &params, &dir, |d| {
            let x: Vec<num_dual::HyperDual64> = x.iter().map(|t| num_dual::HyperDual64::from(*t)).collect();
            let (w, rest) = d.split_at(m * n);
            let (b, v) = rest.split_at(m);
            let mut y = num_dual::HyperDual64::from(0.0);
            let mut reg = num_dual::HyperDual64::from(0.0);
            for i in 0..m {
                let mut acc = b[i];
                for j in 0..n {
                    acc += w[i * n + j] * x[j];
                }
                y += v[i] * acc.tanh();
                reg += v[i] * v[i];
            }
            y * y * 0.5 + reg * 0.01
        });
    }

    #[test]
    fn sums_and_dot_products((m, n, a, x, y, seed) in shaped(), dir_seed in 0usize..5) {
        // `x` and `y` both of length `n`.
        let y: Vec<f64> = (0..n).map(|i| y.get(i).copied().unwrap_or(0.25) - x[i] * 0.5).collect();
        let (am, xv, yv) = (matrix(m, n, &a), Array1::from_vec(x.clone()), Array1::from_vec(y.clone()));
        let mut params = a.clone();
        params.extend(&x);
        params.extend(&y);
        let split = |d: &[Dual64]| reductions_oracle(&d[..m * n], &d[m * n..m * n + n], &d[m * n + n..]);
        let (value, grad) = oracle_grad(split, &params);
        check("primal", reductions(&am, &xv, &yv), value);

        let (mut ga, mut gx, mut gy) = (Array2::zeros((m, n)), Array1::zeros(n), Array1::zeros(n));
        let f = reductions_rev(&am, &mut ga, &xv, &mut gx, &yv, &mut gy, seed);
        check("value", f, value);
        let mut got = flat(&ga);
        got.extend(gx.iter());
        got.extend(gy.iter());
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient", &got, &want);

        let dir: Vec<f64> = (0..params.len()).map(|i| (((i + dir_seed) * 5 % 9) as f64 - 4.0) * 0.2).collect();
        let (da, dx, dy) = (matrix(m, n, &dir[..m * n]), Array1::from_vec(dir[m * n..m * n + n].to_vec()), Array1::from_vec(dir[m * n + n..].to_vec()));
        let (fv, t) = reductions_fwd(&am, &da, &xv, &dx, &yv, &dy);
        check("forward value", fv, value);
        let jv: f64 = grad.iter().zip(&dir).map(|(g, d)| g * d).sum();
        check("forward tangent", t, jv);

        let (mut ga, mut gx, mut gy) = (Array2::zeros((m, n)), Array1::zeros(n), Array1::zeros(n));
        let (mut ha, mut hx, mut hy) = (Array2::zeros((m, n)), Array1::zeros(n), Array1::zeros(n));
        reductions_hvp(&am, &da, &xv, &dx, &yv, &dy, &mut ga, &mut ha, &mut gx, &mut hx, &mut gy, &mut hy);
        let mut h = flat(&ha);
        h.extend(hx.iter());
        h.extend(hy.iter());
        check_hvp(&h, &params, &dir, |d| reductions_oracle(&d[..m * n], &d[m * n..m * n + n], &d[m * n + n..]));
    }

    #[test]
    fn rows_and_columns((m, n, a, x, _, seed) in shaped(), dir_seed in 0usize..5) {
        let (wm, xv) = (matrix(m, n, &a), Array1::from_vec(x.clone()));
        let mut params = a.clone();
        params.extend(&x);
        let oracle = |d: &[Dual64]| lines_oracle(&d[..m * n], &d[m * n..], m, n);
        let (value, grad) = oracle_grad(oracle, &params);
        check("primal", lines(&wm, &xv), value);

        let (mut gw, mut gx) = (Array2::zeros((m, n)), Array1::zeros(n));
        check("value", lines_rev(&wm, &mut gw, &xv, &mut gx, seed), value);
        let mut got = flat(&gw);
        got.extend(gx.iter());
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient", &got, &want);

        let dir: Vec<f64> = (0..params.len()).map(|i| (((i + dir_seed) * 5 % 9) as f64 - 4.0) * 0.2).collect();
        let (dw, dx) = (matrix(m, n, &dir[..m * n]), Array1::from_vec(dir[m * n..].to_vec()));
        let (fv, t) = lines_fwd(&wm, &dw, &xv, &dx);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut gw, mut hw, mut gx, mut hx) = (Array2::zeros((m, n)), Array2::zeros((m, n)), Array1::zeros(n), Array1::zeros(n));
        lines_hvp(&wm, &dw, &xv, &dx, &mut gw, &mut hw, &mut gx, &mut hx);
        let mut h = flat(&hw);
        h.extend(hx.iter());
        check_hvp(&h, &params, &dir, |d| lines_oracle(&d[..m * n], &d[m * n..], m, n));
    }

    #[test]
    fn matrix_vector_products((m, n, a, x, b, seed) in shaped(), dir_seed in 0usize..5) {
        let (wm, bv, xv) = (matrix(m, n, &a), Array1::from_vec(b.clone()), Array1::from_vec(x.clone()));
        let mut params = a.clone();
        params.extend(&b);
        params.extend(&x);
        let split = |d: &[Dual64]| products_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], m, n);
        let (value, grad) = oracle_grad(split, &params);
        check("primal", products(&wm, &bv, &xv), value);

        let (mut gw, mut gb, mut gx) = (Array2::zeros((m, n)), Array1::zeros(m), Array1::zeros(n));
        check("value", products_rev(&wm, &mut gw, &bv, &mut gb, &xv, &mut gx, seed), value);
        let mut got = flat(&gw);
        got.extend(gb.iter());
        got.extend(gx.iter());
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient", &got, &want);

        let dir: Vec<f64> = (0..params.len()).map(|i| (((i + dir_seed) * 5 % 9) as f64 - 4.0) * 0.2).collect();
        let dw = matrix(m, n, &dir[..m * n]);
        let db = Array1::from_vec(dir[m * n..m * n + m].to_vec());
        let dx = Array1::from_vec(dir[m * n + m..].to_vec());
        let (fv, t) = products_fwd(&wm, &dw, &bv, &db, &xv, &dx);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut gw, mut hw) = (Array2::zeros((m, n)), Array2::zeros((m, n)));
        let (mut gb, mut hb, mut gx, mut hx) = (Array1::zeros(m), Array1::zeros(m), Array1::zeros(n), Array1::zeros(n));
        products_hvp(&wm, &dw, &bv, &db, &xv, &dx, &mut gw, &mut hw, &mut gb, &mut hb, &mut gx, &mut hx);
        let mut h = flat(&hw);
        h.extend(hb.iter());
        h.extend(hx.iter());
        check_hvp(&h, &params, &dir, |d| products_oracle(&d[..m * n], &d[m * n..m * n + m], &d[m * n + m..], m, n));
    }

    #[test]
    fn matrices_iterated_element_by_element((m, n, a, _, _, _) in shaped(), wts in prop::collection::vec(-1.0f64..1.0, 4)) {
        let am = matrix(m, n, &a);
        let dir: Vec<f64> = (0..m * n).map(|i| ((i * 3 % 7) as f64 - 3.0) * 0.25).collect();
        let mut out = Array2::zeros((m, n));
        let mut dout = Array2::zeros((m, n));
        squash_fwd(&am, &matrix(m, n, &dir), &mut out, &mut dout);
        for i in 0..m * n {
            check("out", flat(&out)[i], 2.0 * a[i].tanh());
            check("out tangent", flat(&dout)[i], 2.0 * (1.0 - a[i].tanh().powi(2)) * dir[i]);
        }
        // Reverse: the adjoint of `out` in its shadow.
        let wbar: Vec<f64> = (0..m * n).map(|i| wts[i % 4]).collect();
        let mut ga = Array2::zeros((m, n));
        let mut out = Array2::zeros((m, n));
        let mut bout = matrix(m, n, &wbar);
        squash_rev(&am, &mut ga, &mut out, &mut bout);
        for i in 0..m * n {
            check("vjp", flat(&ga)[i], 2.0 * (1.0 - a[i].tanh().powi(2)) * wbar[i]);
        }
    }

    #[test]
    fn struct_with_array_members(p in prop::collection::vec(-1.5f64..1.5, 9), x in prop::collection::vec(-1.0f64..1.0, 2), seed in -2.0f64..2.0) {
        let m = Model { w: matrix(3, 2, &p[..6]), b: Array1::from_vec(p[6..].to_vec()) };
        let (value, grad) = oracle_grad(|d| model_loss_oracle(&d[..6], &d[6..], &x), &p);
        let mut dm = Model { w: Array2::zeros((3, 2)), b: Array1::zeros(3) };
        let f = model_loss_rev(&m, &mut dm, &x, seed);
        check("value", f, value);
        let mut got = flat(&dm.w);
        got.extend(dm.b.iter());
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient", &got, &want);

        let mut dm = Model { w: Array2::zeros((3, 2)), b: Array1::zeros(3) };
        let f = model_loss_by_shape_rev(&m, &mut dm, &x, seed);
        check("value, shapes read from the members", f, value);
        let mut got = flat(&dm.w);
        got.extend(dm.b.iter());
        check_all("gradient, shapes read from the members", &got, &want);
        // Along the first weight.
        let mut dw = Array2::zeros((3, 2));
        dw[[0, 0]] = 1.0;
        let tangent = Model { w: dw, b: Array1::zeros(3) };
        let (f, df) = model_loss_by_shape_fwd(&m, &tangent, &x);
        check("forward value, shapes read from the members", f, value);
        check("forward tangent, shapes read from the members", df, grad[0]);

        let mut dm = Model { w: Array2::zeros((3, 2)), b: Array1::zeros(3) };
        let f = model_loss_by_rows_rev(&m, &mut dm, &x, seed);
        check("value, the member read by rows", f, value);
        let mut got = flat(&dm.w);
        got.extend(dm.b.iter());
        check_all("gradient, the member read by rows", &got, &want);
        let (mut dw, mut db) = (Array2::zeros((3, 2)), Array1::zeros(3));
        dw[[1, 0]] = 1.0;
        db[2] = -0.5;
        let along = Model { w: dw, b: db };
        let (f, df) = model_loss_by_rows_fwd(&m, &along, &x);
        check("forward value, the member read by rows", f, value);
        check("forward tangent, the member read by rows", df, grad[2] - 0.5 * grad[8]);

        // A penalty read through the members' iterators.
        let (value, grad) = oracle_grad(
            |d| {
                let penalty = d[..6].iter().fold(Dual64::from(0.0), |s, &v| s + v * v)
                    + d[6..].iter().fold(Dual64::from(0.0), |s, &v| s + v);
                model_loss_oracle(&d[..6], &d[6..], &x) + penalty * 0.1
            },
            &p,
        );
        let mut dm = Model { w: Array2::zeros((3, 2)), b: Array1::zeros(3) };
        let f = regularized_loss_rev(&m, &mut dm, &x, seed);
        check("value, regularized", f, value);
        let mut got = flat(&dm.w);
        got.extend(dm.b.iter());
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient, regularized", &got, &want);
        let (f, df) = regularized_loss_fwd(&m, &tangent, &x);
        check("forward value, regularized", f, value);
        check("forward tangent, regularized", df, grad[0]);
    }

    #[test]
    fn generic_float_at_f32(x in prop::collection::vec(-2.0f32..2.0, 1..6)) {
        let a: Vec<f32> = (0..x.len()).map(|i| 0.5 + i as f32 * 0.25).collect();
        let (xv, av) = (Array1::from_vec(x.clone()), Array1::from_vec(a.clone()));
        let mut g = Array1::<f32>::zeros(x.len());
        let f = weighted_rev(&xv, &mut g, &av, 1.0);
        let want: f32 = x.iter().zip(&a).map(|(x, a)| x * x * a).sum();
        prop_assert!((f - want).abs() <= 1e-5 * (1.0 + want.abs()));
        for i in 0..x.len() {
            // d/dx_i of x_i² a_i, analytically.
            prop_assert!((g[i] - 2.0 * x[i] * a[i]).abs() <= 1e-5 * (1.0 + g[i].abs()));
        }
        // `dot` and `sum` of generic arrays: d/dx_i (x·a + Σx) = a_i + 1.
        let mut g = Array1::<f32>::zeros(x.len());
        let f = reduced_rev(&xv, &mut g, &av, 1.0);
        let want: f32 = x.iter().zip(&a).map(|(x, a)| x * a + x).sum();
        prop_assert!((f - want).abs() <= 1e-5 * (1.0 + want.abs()));
        for i in 0..x.len() {
            prop_assert!((g[i] - (a[i] + 1.0)).abs() <= 1e-5);
        }
        let v = Array1::from_vec((0..x.len()).map(|i| 1.0 - i as f32 * 0.5).collect());
        let (f, df) = reduced_fwd(&xv, &v, &av);
        let want_t: f32 = (0..x.len()).map(|i| v[i] * (a[i] + 1.0)).sum();
        prop_assert!((f - want).abs() <= 1e-5 * (1.0 + want.abs()));
        prop_assert!((df - want_t).abs() <= 1e-5 * (1.0 + want_t.abs()));
        let xd = Array1::from_vec(x.iter().map(|&v| f64::from(v)).collect());
        let ad = Array1::from_vec(a.iter().map(|&v| f64::from(v)).collect());
        let mut gd = Array1::<f64>::zeros(x.len());
        let fd = reduced_rev(&xd, &mut gd, &ad, 2.0);
        prop_assert!((fd - xd.dot(&ad) - xd.sum()).abs() <= 1e-12 * (1.0 + fd.abs()));
        for i in 0..x.len() {
            prop_assert!((gd[i] - 2.0 * (ad[i] + 1.0)).abs() <= 1e-12);
        }
    }
}
