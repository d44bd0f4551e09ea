//! Tables of data as tuples: a constant `&[(f64, f64)]` parameter and a local array of
//! tuple literals (also written in the loop itself), iterated with `&(a, y)` and `(a, y)`
//! patterns (by value, and by reference: `for (w, c) in t.iter()` over a local table)
//! and read by index (`data[i].0`); the rows of a `const` matrix iterated. The rows carry
//! no derivative; checked against num-dual in both modes and under forward over reverse.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// A least-squares fit of a line to `(a, y)` rows, plus terms that read the rows by
/// reference and by index.
#[autodiff_forward(fit_fwd, Dual, Const, Dual)]
#[autodiff_reverse(fit_rev, Duplicated, Const, Active)]
fn fit(w: &[f64], data: &[(f64, f64)]) -> f64 {
    let mut s = 0.0;
    for &(a, y) in data.iter() {
        let r = w[0] * a + w[1] - y;
        s += r * r;
    }
    for (a, y) in data.iter() {
        s += w[0] * a * y;
    }
    for i in 0..data.len() {
        s += data[i].0 * w[1] * w[1];
    }
    s
}

fn fit_o<D: Num>(w: &[D], data: &[(f64, f64)]) -> D {
    let mut s = D::zero();
    for &(a, y) in data {
        let r = w[0] * a + w[1] - y;
        s += r * r + w[0] * a * y + w[1] * w[1] * a;
    }
    s
}

/// The same with the table a local array of tuple literals.
#[autodiff_forward(fixed_fwd, Dual, Dual)]
#[autodiff_reverse(fixed_rev, Duplicated, Active)]
fn fixed(w: &[f64]) -> f64 {
    let pairs = [(0.5, 0.2), (1.0, -0.4), (-1.5, 0.9)];
    let mut s = 0.0;
    for &(a, y) in pairs.iter() {
        s += (w[0] * a - y).powi(2) * w[1].exp();
    }
    s
}

fn fixed_o<D: Num>(w: &[D]) -> D {
    let mut s = D::zero();
    for (a, y) in [(0.5, 0.2), (1.0, -0.4), (-1.5, 0.9)] {
        s += (w[0] * a - y).powi(2) * w[1].exp();
    }
    s
}

/// Tables of tuple literals written in the loop itself: by value, behind `&`, through
/// `iter().enumerate()`, with integer offsets and float weights.
#[autodiff_forward(inline_tables_fwd, Dual, Dual)]
#[autodiff_reverse(inline_tables_rev, Duplicated, Active)]
fn inline_tables(w: &[f64]) -> f64 {
    let mut s = 0.0;
    for (a, b) in [(0usize, 1usize), (1, 2), (2, 0)] {
        s += w[a] * w[b];
    }
    for &(c, i) in &[(0.5, 0usize), (-0.25, 2)] {
        s += c * w[i].sin();
    }
    for (k, (c, i)) in [(2.0, 1usize), (3.0, 0)].iter().enumerate() {
        s += (k as f64 + c) * w[*i] * w[*i];
    }
    // A reference to a table, bound with `let`, its elements by reference.
    let t = &[(1.5, 1usize), (0.5, 2)];
    for (c, i) in t.iter() {
        s += c * w[*i].exp();
    }
    s
}

fn inline_tables_o<D: Num>(w: &[D]) -> D {
    let mut s = w[0] * w[1] + w[1] * w[2] + w[2] * w[0];
    s += w[0].sin() * 0.5 - w[2].sin() * 0.25;
    s + w[1] * w[1] * 2.0 + w[0] * w[0] * 4.0 + w[1].exp() * 1.5 + w[2].exp() * 0.5
}

/// A local table bound with `let`, its elements by reference (`(w, c)` binds `&f64`s):
/// in a `for` over `iter()` and over `&t`, in a `map` closure, under `enumerate`, and in
/// an inner loop whose parts are bound again in a tuple.
#[autodiff_forward(table_refs_fwd, Dual, Dual)]
#[autodiff_reverse(table_refs_rev, Duplicated, Active)]
fn table_refs(x: &[f64]) -> f64 {
    let t = [(0.5, 0.1), (0.3, 0.7), (-0.2, 0.9)];
    let mut s = 0.0;
    for (w, c) in t.iter() {
        s += w * (x[0] * c).sin() * x[1];
    }
    for (w, c) in &t {
        s += *w * (x[1] * *c).exp() + x[0] * x[0] * c;
    }
    s += t
        .iter()
        .map(|(w, c)| w * (x[0] * c + x[1]).cos())
        .sum::<f64>();
    for (i, (w, c)) in t.iter().enumerate() {
        s += w * (x[i % 2] * c).tanh();
    }
    for j in 0..2 {
        for (w, c) in t.iter() {
            let (p, q) = (w * x[j], c * x[1 - j]);
            s += (p * q).sin();
        }
    }
    s
}

fn table_refs_o<D: Num>(x: &[D]) -> D {
    let t = [(0.5, 0.1), (0.3, 0.7), (-0.2, 0.9)];
    let mut s = D::zero();
    for (i, &(w, c)) in t.iter().enumerate() {
        s += (x[0] * c).sin() * x[1] * w + (x[1] * c).exp() * w + x[0] * x[0] * c;
        s += (x[0] * c + x[1]).cos() * w + (x[i % 2] * c).tanh() * w;
    }
    for j in 0..2 {
        for &(w, c) in t.iter() {
            s += (x[j] * w * (x[1 - j] * c)).sin();
        }
    }
    s
}

/// A covariance as a `const` matrix.
const COV: [[f64; 3]; 3] = [[1.0, 0.5, 0.0], [0.5, 2.0, -0.3], [0.0, -0.3, 1.5]];

/// `wᵀ Σ w` over the rows of a `const` matrix, iterated (`COV[i].iter().enumerate()`).
#[autodiff_forward(quadratic_fwd, Dual, Dual)]
#[autodiff_reverse(quadratic_rev, Duplicated, Active)]
fn quadratic(w: &[f64]) -> f64 {
    let mut v = 0.0;
    for i in 0..3 {
        for (j, c) in COV[i].iter().enumerate() {
            v += w[i] * c * w[j];
        }
    }
    v
}

fn quadratic_o<D: Num>(w: &[D]) -> D {
    let mut v = D::zero();
    for i in 0..3 {
        for j in 0..3 {
            v += w[i] * COV[i][j] * w[j];
        }
    }
    v
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn rows_of_a_const_matrix_iterated((x, v, s0) in slice_case(-1.5, 1.5, 3..4, 0), s in seed()) {
        check_slice("quadratic", (&x, &v, &s0, s), quadratic, quadratic_fwd, quadratic_rev, quadratic_o);
        check_hvp_of::<quadratic_rev>(&x, &v, quadratic_o);
    }

    #[test]
    fn a_constant_table_parameter(
        w in vecf(-1.5, 1.5, 2),
        rows in prop::collection::vec((-2.0f64..2.0, -2.0f64..2.0), 1..6),
        v in dirs(2),
        s in seed(),
    ) {
        let (value, grad) = oracle_grad(|d| fit_o(d, &rows), &w);
        let mut gw = [0.0; 2];
        check("value", fit_rev(&w, &mut gw, &rows, s), value);
        check_all("gradient", &gw, &grad.iter().map(|g| g * s).collect::<Vec<_>>());
        let (fv, t) = fit_fwd(&w, &v, &rows);
        check("forward value", fv, value);
        check("forward tangent", t, grad[0] * v[0] + grad[1] * v[1]);
        check("primal", fit(&w, &rows), value);
    }

    #[test]
    fn tables_written_in_the_loop((x, v, s0) in slice_case(-1.5, 1.5, 3..4, 0), s in seed()) {
        check_slice("inline_tables", (&x, &v, &s0, s), inline_tables, inline_tables_fwd, inline_tables_rev, inline_tables_o::<Dual64>);
        check_hvp_of::<inline_tables_rev>(&x, &v, inline_tables_o);
    }

    #[test]
    fn a_local_table_read_by_reference((x, v, s0) in slice_case(-1.5, 1.5, 2..3, 0), s in seed()) {
        check_slice("table_refs", (&x, &v, &s0, s), table_refs, table_refs_fwd, table_refs_rev, table_refs_o::<Dual64>);
        check_hvp_of::<table_refs_rev>(&x, &v, table_refs_o);
    }

    #[test]
    fn a_local_table_of_tuple_literals((x, v, s0) in slice_case(-1.5, 1.5, 2..3, 0), s in seed()) {
        check_slice("fixed", (&x, &v, &s0, s), fixed, fixed_fwd, fixed_rev, fixed_o::<Dual64>);
        check_hvp_of::<fixed_rev>(&x, &v, fixed_o);
    }
}
