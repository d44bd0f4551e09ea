//! Products of `ndarray` matrices in whole-array expressions (`a.dot(&b)`), whose
//! derivatives multiply matrices (`ā += c̄·bᵀ`, `b̄ += aᵀ·c̄`, `ċ = ȧ·b + a·ḃ`), with
//! either operand active or constant, chained, transposed and mapped; and elementwise
//! expressions evaluated in one loop per array (maps whose closures capture and shadow
//! names, `map` by reference, floats broadcast), and the reductions `mean().unwrap()`,
//! `sum_axis(Axis(k))` and `mean_axis(Axis(k)).unwrap()`, in both modes and under H·v, at
//! random shapes and points, names bound again to arrays computed from them, and arrays
//! that are members of a struct (`let w: &Array2<f64> = &self.w;`), against num-dual
//! oracles written on flat row-major slices.

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use ndarray::{Array1, Array2, Axis};
use num_dual::Dual64;
use proptest::prelude::*;

/// `Σ (A B Cᵀ)² / 10 + Σ tanh(A sin(B))`: products of two active matrices, a product of a
/// product, a product with a transpose and with a map.
#[autodiff_forward(chain_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(chain_rev, Duplicated, Duplicated, Duplicated, Active)]
#[autodiff_reverse(chain_rev_const_b, Duplicated, Const, Duplicated, Active)]
#[autodiff_forward(chain_fwd_const_a, Const, Dual, Dual, Dual)]
fn chain(a: &Array2<f64>, b: &Array2<f64>, c: &Array2<f64>) -> f64 {
    let p = a.dot(b);
    let q = p.dot(&c.t());
    (&q * &q).sum() / 10.0 + a.dot(&b.mapv(f64::sin)).mapv(|v| v.tanh()).sum()
}

/// Its oracle, for `a` of `m × k`, `b` of `k × n` and `c` of `r × n`.
fn chain_oracle<D: Num>(
    a: &[D],
    b: &[D],
    c: &[D],
    (m, k, n, r): (usize, usize, usize, usize),
) -> D {
    let mut total = D::zero();
    for i in 0..m {
        let p: Vec<D> = (0..n)
            .map(|j| (0..k).fold(D::zero(), |s, l| s + a[i * k + l] * b[l * n + j]))
            .collect();
        for t in 0..r {
            let q = (0..n).fold(D::zero(), |s, j| s + p[j] * c[t * n + j]);
            total += q * q / 10.0;
        }
        for j in 0..n {
            let s = (0..k).fold(D::zero(), |s, l| s + a[i * k + l] * b[l * n + j].sin());
            total += s.tanh();
        }
    }
    total
}

/// The gradient, whose forward companion is the H·v.
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(chain_hvp, Dual, Dual, Dual, Dual, Dual, Dual)]
fn chain_grad(
    a: &Array2<f64>,
    b: &Array2<f64>,
    c: &Array2<f64>,
    ga: &mut Array2<f64>,
    gb: &mut Array2<f64>,
    gc: &mut Array2<f64>,
) {
    chain_rev(a, ga, b, gb, c, gc, 1.0);
}

/// Elementwise trees in one loop: closures that capture a float named as another
/// closure's parameter, `map` by reference, a float broadcast, a vector broadcast along
/// a product's rows, negation, copies and nested maps.
#[autodiff_forward(trees_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(trees_rev, Duplicated, Duplicated, Duplicated, Active)]
fn trees(a: &Array2<f64>, b: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let v = x[0];
    let h = a.mapv(|v| v * 2.0) + b.mapv(|u| u * v);
    let g = (a.map(|e| e * e) - &(b * v) + x)
        .mapv(f64::sin)
        .mapv(|w| w * w + v);
    let k = -(a.dot(&b.t()) + x[1]).clone() * 0.5;
    h.sum() + (&g * &h).sum() + k.mapv(f64::exp).sum()
}

/// Its oracle, for `a` and `b` of `m × n` and `x` of `n` (`n ≥ 2`).
fn trees_oracle<D: Num>(a: &[D], b: &[D], x: &[D], m: usize, n: usize) -> D {
    let v = x[0];
    let mut total = D::zero();
    for i in 0..m {
        for j in 0..n {
            let (ae, be) = (a[i * n + j], b[i * n + j]);
            let h = ae * 2.0 + be * v;
            let s = (ae * ae - be * v + x[j]).sin();
            let g = s * s + v;
            total += h + g * h;
        }
        for t in 0..m {
            let p = (0..n).fold(D::zero(), |s, j| s + a[i * n + j] * b[t * n + j]);
            total += ((p + x[1]) * -0.5).exp();
        }
    }
    total
}

/// A product of `f32` matrices.
#[autodiff_reverse(prod32_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(prod32_fwd, Dual, Dual, Dual)]
fn prod32(a: &Array2<f32>, b: &Array2<f32>) -> f32 {
    (a.dot(b) * 0.5f32).mapv(f32::tanh).sum()
}

/// Names bound again to arrays computed from them (`let h = &h * 2.0 + 1.0;`), a
/// product of an array with itself, and an array moved to another name.
#[autodiff_forward(rebound_fwd, Dual, Dual)]
#[autodiff_reverse(rebound_rev, Duplicated, Active)]
fn rebound(a: &Array2<f64>) -> f64 {
    let h = a.mapv(f64::sin);
    let h = &h * 2.0 + 1.0;
    let h = h.mapv(|v| v * v);
    let c = a.dot(&a.t());
    let c = c.dot(&c);
    let c2 = c;
    h.sum() + c2.sum() / 10.0
}

/// Its oracle, for `a` of `m × n`.
fn rebound_oracle<D: Num>(a: &[D], m: usize, n: usize) -> D {
    let h = a.iter().fold(D::zero(), |s, v| {
        let t = v.sin() * 2.0 + 1.0;
        s + t * t
    });
    let c: Vec<D> = (0..m * m)
        .map(|k| {
            (0..n).fold(D::zero(), |s, j| {
                s + a[(k / m) * n + j] * a[(k % m) * n + j]
            })
        })
        .collect();
    let cc = (0..m * m).fold(D::zero(), |s, k| {
        let (i, t) = (k / m, k % m);
        (0..m).fold(s, |s, l| s + c[i * m + l] * c[l * m + t])
    });
    h + cc / 10.0
}

/// A regression through a leaky ReLU written in whole-array operations: a closure with a
/// branch, a map of a sum along an axis, a closure that captures a float, a mean. Every
/// array here is made from another whose element type only the parameters name.
#[autodiff_forward(leaky_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(leaky_rev, Duplicated, Const, Const, Active)]
fn leaky(w: &Array2<f64>, x: &Array2<f64>, y: &Array1<f64>) -> f64 {
    let z = x.dot(w);
    let a = z.mapv(|v| if v > 0.0 { v } else { 0.01 * v });
    let s = (&a * &a).sum_axis(Axis(1)).mapv(|t| (t + 1.0).ln());
    let r = &s - y;
    let k = 3.0;
    let p = a.map(|e| e.powi(2) * k).mean().unwrap();
    r.dot(&r) / r.len() as f64 + p
}

/// Its oracle, for `w` of `k × n`, `x` of `m × k` and `y` of `m`.
fn leaky_oracle<D: Num>(w: &[D], x: &[f64], y: &[f64], (m, k, n): (usize, usize, usize)) -> D {
    let (mut loss, mut p) = (D::zero(), D::zero());
    for i in 0..m {
        let mut s = D::zero();
        for j in 0..n {
            let z = (0..k).fold(D::zero(), |a, l| a + w[l * n + j] * x[i * k + l]);
            let a = if z.re() > 0.0 { z } else { z * 0.01 };
            s += a * a;
            p += a.powi(2) * 3.0;
        }
        let r = (s + 1.0).ln() - y[i];
        loss += r * r;
    }
    loss / m as f64 + p / (m * n) as f64
}

/// A layer whose weights are `ndarray` members of a struct.
#[differentiable]
struct Layer {
    w: Array2<f64>,
    b: Array1<f64>,
}

#[differentiable]
impl Layer {
    /// `Σ tanh(x W + b)`, the members bound by `let`s that write their types.
    fn score(&self, x: &Array2<f64>) -> f64 {
        let w: &Array2<f64> = &self.w;
        let b: &Array1<f64> = &self.b;
        (x.dot(w) + b).mapv(f64::tanh).sum()
    }
}

/// The layer's score and a penalty on its members, read through typed `let`s and
/// through the method.
#[autodiff_forward(layer_fwd, Dual, Const, Dual)]
#[autodiff_reverse(layer_rev, Duplicated, Const, Active)]
fn layer_loss(l: &Layer, x: &Array2<f64>) -> f64 {
    let w: &Array2<f64> = &l.w;
    let b: &Array1<f64> = &l.b;
    let p = w.mapv(|v| v * v).sum() + b[0] * w[[0, 0]];
    l.score(x) * 2.0 + p
}

/// Its oracle, for `w` of `k × n`, `b` of `n` and `x` of `m × k`.
fn layer_oracle<D: Num>(w: &[D], b: &[D], x: &[f64], (m, k, n): (usize, usize, usize)) -> D {
    let mut s = D::zero();
    for i in 0..m {
        for j in 0..n {
            let z = (0..k).fold(b[j], |a, l| a + w[l * n + j] * x[i * k + l]);
            s += z.tanh() * 2.0;
        }
    }
    w.iter().fold(s, |a, v| a + *v * *v) + b[0] * w[0]
}

/// Means and sums along axes: of a parameter, of an elementwise expression and of a
/// product, read by `sum`, `dot` and an index.
#[autodiff_forward(reduced_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(reduced_rev, Duplicated, Duplicated, Active)]
fn reduced(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    let cols = a.sum_axis(Axis(0));
    let rows = (a * b).mapv(f64::sin).sum_axis(Axis(1));
    let products = a.dot(&b.t()).sum_axis(Axis(0));
    let col_means = (a - b).mapv(f64::cos).mean_axis(Axis(0)).unwrap();
    let row_means = b.mapv(|v| v * v).mean_axis(Axis(1)).expect("columns");
    a.mean().unwrap() * (a * b).mapv(f64::exp).mean().unwrap()
        + cols.dot(&cols)
        + rows.mapv(f64::tanh).sum()
        + products.sum() * row_means[0]
        + col_means.dot(&col_means)
}

/// Its oracle, for `a` and `b` of `m × n`.
fn reduced_oracle<D: Num>(a: &[D], b: &[D], m: usize, n: usize) -> D {
    let sum = |v: &mut dyn Iterator<Item = D>| v.fold(D::zero(), |s, t| s + t);
    let mean_a = sum(&mut a.iter().copied()) / (m * n) as f64;
    let mean_exp = sum(&mut (0..m * n).map(|k| (a[k] * b[k]).exp())) / (m * n) as f64;
    let cols = (0..n).fold(D::zero(), |s, j| {
        let c = sum(&mut (0..m).map(|i| a[i * n + j]));
        s + c * c
    });
    let rows = (0..m).fold(D::zero(), |s, i| {
        s + sum(&mut (0..n).map(|j| (a[i * n + j] * b[i * n + j]).sin())).tanh()
    });
    // Every element of a bᵀ (m × m), summed.
    let products = sum(&mut (0..m * m).map(|k| {
        let (i, t) = (k / m, k % m);
        sum(&mut (0..n).map(|j| a[i * n + j] * b[t * n + j]))
    }));
    let row0 = sum(&mut (0..n).map(|j| b[j] * b[j])) / n as f64;
    let col_means = (0..n).fold(D::zero(), |s, j| {
        let c = sum(&mut (0..m).map(|i| (a[i * n + j] - b[i * n + j]).cos())) / m as f64;
        s + c * c
    });
    mean_a * mean_exp + cols + rows + products * row0 + col_means
}

/// The gradient, whose forward companion is the H·v.
#[autodiff_forward(reduced_hvp, Dual, Dual, Dual, Dual)]
fn reduced_grad(a: &Array2<f64>, b: &Array2<f64>, ga: &mut Array2<f64>, gb: &mut Array2<f64>) {
    reduced_rev(a, ga, b, gb, 1.0);
}

/// Row means and a mean in code generic over the float type.
#[autodiff_reverse(generic_means_rev, Duplicated, Active)]
fn generic_means<T: num_traits::Float + num_traits::FromPrimitive + 'static>(a: &Array2<T>) -> T {
    let m = a.mapv(|v| v * v).mean_axis(Axis(1)).unwrap();
    m.sum() + a.mean().unwrap()
}

/// ⟨g, d⟩.
fn along(g: &[f64], d: &[f64]) -> f64 {
    g.iter().zip(d).map(|(g, d)| g * d).sum()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn products_of_matrices(
        (m, k, n, r) in (1usize..5, 1usize..5, 1usize..5, 1usize..4),
        p in prop::collection::vec(-1.2f64..1.2, 60),
        seed in 0usize..9,
    ) {
        let shape = (m, k, n, r);
        let (na, nb, nc) = (m * k, k * n, r * n);
        let params = p[..na + nb + nc].to_vec();
        let parts = |d: &[f64]| (matrix(m, k, &d[..na]), matrix(k, n, &d[na..na + nb]), matrix(r, n, &d[na + nb..]));
        let oracle = |d: &[Dual64]| chain_oracle(&d[..na], &d[na..na + nb], &d[na + nb..], shape);
        let (value, grad) = oracle_grad(oracle, &params);
        let (a, b, c) = parts(&params);
        check("primal", chain(&a, &b, &c), value);

        let (mut ga, mut gb, mut gc) = (Array2::zeros((m, k)), Array2::zeros((k, n)), Array2::zeros((r, n)));
        check("value", chain_rev(&a, &mut ga, &b, &mut gb, &c, &mut gc, 1.0), value);
        let got: Vec<f64> = flat(&ga).into_iter().chain(flat(&gb)).chain(flat(&gc)).collect();
        check_all("gradient", &got, &grad);

        // A constant operand: the other adjoints are the same.
        let (mut ga, mut gc) = (Array2::zeros((m, k)), Array2::zeros((r, n)));
        check("value, b constant", chain_rev_const_b(&a, &mut ga, &b, &c, &mut gc, 0.5), value);
        let got: Vec<f64> = flat(&ga).into_iter().chain(flat(&gc)).map(|g| g * 2.0).collect();
        let want: Vec<f64> = grad[..na].iter().chain(&grad[na + nb..]).copied().collect();
        check_all("gradient, b constant", &got, &want);

        let dir = direction(params.len(), seed);
        let (da, db, dc) = parts(&dir);
        let (fv, t) = chain_fwd(&a, &da, &b, &db, &c, &dc);
        check("forward value", fv, value);
        check("forward tangent", t, along(&grad, &dir));
        let (fv, t) = chain_fwd_const_a(&a, &b, &db, &c, &dc);
        check("forward value, a constant", fv, value);
        check("forward tangent, a constant", t, along(&grad[na..], &dir[na..]));

        let (mut ga, mut gb, mut gc) = (Array2::zeros((m, k)), Array2::zeros((k, n)), Array2::zeros((r, n)));
        let (mut ha, mut hb, mut hc) = (Array2::zeros((m, k)), Array2::zeros((k, n)), Array2::zeros((r, n)));
        chain_hvp(&a, &da, &b, &db, &c, &dc, &mut ga, &mut ha, &mut gb, &mut hb, &mut gc, &mut hc);
        let hv: Vec<f64> = flat(&ha).into_iter().chain(flat(&hb)).chain(flat(&hc)).collect();
        check_hvp(&hv, &params, &dir, |d| chain_oracle(&d[..na], &d[na..na + nb], &d[na + nb..], shape));
    }

    #[test]
    fn elementwise_trees_in_one_loop(
        (m, n) in (1usize..5, 2usize..5),
        p in prop::collection::vec(-1.2f64..1.2, 45),
        seed in 0usize..9,
    ) {
        let nm = m * n;
        let params = p[..2 * nm + n].to_vec();
        let oracle = |d: &[Dual64]| trees_oracle(&d[..nm], &d[nm..2 * nm], &d[2 * nm..], m, n);
        let (value, grad) = oracle_grad(oracle, &params);
        let (a, b, x) = (matrix(m, n, &params[..nm]), matrix(m, n, &params[nm..2 * nm]), Array1::from_vec(params[2 * nm..].to_vec()));
        check("primal", trees(&a, &b, &x), value);

        let (mut ga, mut gb, mut gx) = (Array2::zeros((m, n)), Array2::zeros((m, n)), Array1::zeros(n));
        check("value", trees_rev(&a, &mut ga, &b, &mut gb, &x, &mut gx, 1.0), value);
        let got: Vec<f64> = flat(&ga).into_iter().chain(flat(&gb)).chain(gx.iter().copied()).collect();
        check_all("gradient", &got, &grad);

        let dir = direction(params.len(), seed);
        let (fv, t) = trees_fwd(&a, &matrix(m, n, &dir[..nm]), &b, &matrix(m, n, &dir[nm..2 * nm]), &x, &Array1::from_vec(dir[2 * nm..].to_vec()));
        check("forward value", fv, value);
        check("forward tangent", t, along(&grad, &dir));
    }

    #[test]
    fn arrays_typed_by_their_operands(
        (m, k, n) in (1usize..4, 1usize..4, 1usize..4),
        p in prop::collection::vec(-1.2f64..1.2, 40),
        seed in 0usize..9,
    ) {
        let (nw, shape) = (k * n, (m, k, n));
        let params = p[..nw].to_vec();
        let (x, y) = (p[16..16 + m * k].to_vec(), p[32..32 + m].to_vec());
        let (value, grad) = oracle_grad(|d: &[Dual64]| leaky_oracle(d, &x, &y, shape), &params);
        let (wm, xm, yv) = (matrix(k, n, &params), matrix(m, k, &x), Array1::from_vec(y.clone()));
        check("primal", leaky(&wm, &xm, &yv), value);
        let mut g = Array2::zeros((k, n));
        check("value", leaky_rev(&wm, &mut g, &xm, &yv, 1.0), value);
        check_all("gradient", &flat(&g), &grad);
        let dir = direction(params.len(), seed);
        let (fv, t) = leaky_fwd(&wm, &matrix(k, n, &dir), &xm, &yv);
        check("forward value", fv, value);
        check("forward tangent", t, along(&grad, &dir));
    }

    #[test]
    fn arrays_that_are_members_of_a_struct(
        (m, k, n) in (1usize..4, 1usize..4, 1usize..4),
        p in prop::collection::vec(-1.2f64..1.2, 32),
        seed in 0usize..9,
    ) {
        let (nw, shape) = (k * n, (m, k, n));
        let params = p[..nw + n].to_vec();
        let x = p[16..16 + m * k].to_vec();
        let oracle = |d: &[Dual64]| layer_oracle(&d[..nw], &d[nw..], &x, shape);
        let (value, grad) = oracle_grad(oracle, &params);
        let layer = |d: &[f64]| Layer { w: matrix(k, n, &d[..nw]), b: Array1::from_vec(d[nw..].to_vec()) };
        let (l, xm) = (layer(&params), matrix(m, k, &x));
        check("primal", layer_loss(&l, &xm), value);
        let mut g = layer(&vec![0.0; nw + n]);
        check("value", layer_rev(&l, &mut g, &xm, 1.0), value);
        let got: Vec<f64> = flat(&g.w).into_iter().chain(g.b.iter().copied()).collect();
        check_all("gradient", &got, &grad);
        let dir = direction(params.len(), seed);
        let (fv, t) = layer_fwd(&l, &layer(&dir), &xm);
        check("forward value", fv, value);
        check("forward tangent", t, along(&grad, &dir));
    }

    #[test]
    fn names_bound_again(
        (m, n) in (1usize..5, 1usize..5),
        p in prop::collection::vec(-1.2f64..1.2, 16),
        seed in 0usize..9,
    ) {
        let params = p[..m * n].to_vec();
        let (value, grad) = oracle_grad(|d: &[Dual64]| rebound_oracle(d, m, n), &params);
        let a = matrix(m, n, &params);
        check("primal", rebound(&a), value);
        let mut g = Array2::zeros((m, n));
        check("value", rebound_rev(&a, &mut g, 1.0), value);
        check_all("gradient", &flat(&g), &grad);
        let dir = direction(params.len(), seed);
        let (fv, t) = rebound_fwd(&a, &matrix(m, n, &dir));
        check("forward value", fv, value);
        check("forward tangent", t, along(&grad, &dir));
    }

    #[test]
    fn means_and_sums_along_axes(
        (m, n) in (1usize..5, 1usize..5),
        p in prop::collection::vec(-1.2f64..1.2, 32),
        seed in 0usize..9,
    ) {
        let nm = m * n;
        let params = p[..2 * nm].to_vec();
        let oracle = |d: &[Dual64]| reduced_oracle(&d[..nm], &d[nm..], m, n);
        let (value, grad) = oracle_grad(oracle, &params);
        let (a, b) = (matrix(m, n, &params[..nm]), matrix(m, n, &params[nm..]));
        check("primal", reduced(&a, &b), value);

        let (mut ga, mut gb) = (Array2::zeros((m, n)), Array2::zeros((m, n)));
        check("value", reduced_rev(&a, &mut ga, &b, &mut gb, 1.0), value);
        let got: Vec<f64> = flat(&ga).into_iter().chain(flat(&gb)).collect();
        check_all("gradient", &got, &grad);

        let dir = direction(params.len(), seed);
        let (da, db) = (matrix(m, n, &dir[..nm]), matrix(m, n, &dir[nm..]));
        let (fv, t) = reduced_fwd(&a, &da, &b, &db);
        check("forward value", fv, value);
        check("forward tangent", t, along(&grad, &dir));

        let (mut ga, mut gb) = (Array2::zeros((m, n)), Array2::zeros((m, n)));
        let (mut ha, mut hb) = (Array2::zeros((m, n)), Array2::zeros((m, n)));
        reduced_hvp(&a, &da, &b, &db, &mut ga, &mut ha, &mut gb, &mut hb);
        let hv: Vec<f64> = flat(&ha).into_iter().chain(flat(&hb)).collect();
        check_hvp(&hv, &params, &dir, |d| reduced_oracle(&d[..nm], &d[nm..], m, n));
    }

    #[test]
    fn means_in_generic_code(
        (m, n) in (1usize..5, 1usize..5),
        p in prop::collection::vec(-1.5f64..1.5, 16),
    ) {
        let a = matrix(m, n, &p[..m * n]);
        let mut g = Array2::zeros((m, n));
        let value = generic_means_rev(&a, &mut g, 1.0);
        // Σ_i (Σ_j a_ij² / n) + Σ a / (mn): the gradient is 2a/n + 1/(mn).
        check("value", value, a.mapv(|v| v * v).sum() / n as f64 + a.sum() / (m * n) as f64);
        for (got, v) in g.iter().zip(a.iter()) {
            check("gradient", *got, 2.0 * v / n as f64 + 1.0 / (m * n) as f64);
        }
        let a32 = a.mapv(|v| v as f32);
        let mut g32 = Array2::zeros((m, n));
        let v32 = generic_means_rev(&a32, &mut g32, 1.0);
        check_tol("f32 value", v32 as f64, value, 1e-5);
    }

    #[test]
    fn a_product_of_f32_matrices(
        (m, k, n) in (1usize..4, 1usize..4, 1usize..4),
        p in prop::collection::vec(-1.0f32..1.0, 24),
    ) {
        let a = Array2::from_shape_vec((m, k), p[..m * k].to_vec()).unwrap();
        let b = Array2::from_shape_vec((k, n), p[12..12 + k * n].to_vec()).unwrap();
        let (mut ga, mut gb) = (Array2::zeros((m, k)), Array2::zeros((k, n)));
        let value = prod32_rev(&a, &mut ga, &b, &mut gb, 1.0);
        // d/dA Σ tanh(AB/2) = (sech²(AB/2)/2) Bᵀ, d/dB = Aᵀ (sech²(AB/2)/2).
        let s = (a.dot(&b) * 0.5f32).mapv(|v| (1.0 - v.tanh() * v.tanh()) * 0.5);
        check_tol("value", value as f64, (a.dot(&b) * 0.5f32).mapv(f32::tanh).sum() as f64, 1e-5);
        for (got, want) in ga.iter().zip(s.dot(&b.t()).iter()) {
            check_tol("gradient of a", *got as f64, *want as f64, 1e-5);
        }
        for (got, want) in gb.iter().zip(a.t().dot(&s).iter()) {
            check_tol("gradient of b", *got as f64, *want as f64, 1e-5);
        }
        let (_, t) = prod32_fwd(&a, &Array2::ones((m, k)), &b, &Array2::zeros((k, n)));
        check_tol("forward tangent", t as f64, ga.sum() as f64, 1e-4);
    }
}
