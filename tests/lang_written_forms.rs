//! Ways of writing ordinary code that differentiated code must take as they are:
//! float methods called through their type with a literal first (`f64::sqrt(2.0)`), a
//! generic `powf` whose exponent is a call (`T::from(2.5).unwrap()`), a call's array
//! assigned through a `&mut` array (`*r = rotate(x);`), a reference pattern over an array
//! (`let &[a, b, c] = v;`), a call's vector, made in a loop, zipped with a constant
//! slice, vectors chosen by an `if` (`h = if last { z } else { relu(&z) };`, also between
//! calls with no type written), and rows of
//! data borrowed from elsewhere (`data: &[&[f64]]`, constant). Checked against num-dual in both modes, and under forward over reverse (H·v)
//! where the function is a scalar objective.

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// Float methods called through `f64::` with a literal as their first argument.
#[autodiff_forward(literal_paths_fwd, Dual, Dual)]
#[autodiff_reverse(literal_paths_rev, Active, Active)]
fn literal_paths(x: f64) -> f64 {
    x / f64::sqrt(2.0)
        + f64::max(0.5, x) * f64::powf(2.0, x)
        + f64::sin(0.5) * x
        + f64::mul_add(2.0, x, 1.0)
        + f64::atan2(2.0, x)
}

fn literal_paths_o<D: Num>(x: D) -> D {
    let peak: D = if x.re() > 0.5 { x } else { c(0.5) };
    let two: D = c(2.0);
    x / two.sqrt()
        + peak * (x * 2f64.ln()).exp()
        + x * 0.5f64.sin()
        + x * 2.0
        + 1.0
        + (two / x).atan()
}

/// The same in `f32`.
#[autodiff_reverse(literal_paths_f32_rev, Active, Active)]
fn literal_paths_f32(x: f32) -> f32 {
    x / f32::sqrt(2.0) + f32::atan2(2.0, x)
}

/// `powf` of a generic float, its exponents written as calls.
#[autodiff_forward(generic_powers_fwd, Dual, Dual)]
#[autodiff_reverse(generic_powers_rev, Active, Active)]
fn generic_powers<T: Real>(y: T) -> T {
    y.powf(T::one()) * y.powf(T::from(2.5).unwrap())
}

/// A two-by-two map with an array result.
#[differentiable]
fn twist(p: &[f64; 2]) -> [f64; 2] {
    [2.0 * p[0] * p[1], p[1].sin() - p[0]]
}

fn twist_o<D: Num>(p: &[D]) -> [D; 2] {
    [p[0] * p[1] * 2.0, p[1].sin() - p[0]]
}

/// The call's array assigned whole through the `&mut` parameter, then updated.
#[autodiff_forward(twist_into_fwd, Dual, Dual)]
#[autodiff_reverse(twist_into_rev, Duplicated, Duplicated)]
fn twist_into(x: &[f64; 2], r: &mut [f64; 2]) {
    *r = twist(x);
    r[0] += x[0] * r[1];
}

/// The same through a local, and twice: the second call reads what the first wrote.
#[autodiff_forward(twist_twice_fwd, Dual, Dual)]
#[autodiff_reverse(twist_twice_rev, Duplicated, Duplicated)]
fn twist_twice(x: &[f64; 2], r: &mut [f64; 2]) {
    let t = twist(x);
    *r = t;
    let u = twist(r);
    *r = u;
}

fn twist_into_o<D: Num>(x: &[D]) -> Vec<D> {
    let t = twist_o(x);
    vec![t[0] + x[0] * t[1], t[1]]
}

fn twist_twice_o<D: Num>(x: &[D]) -> Vec<D> {
    twist_o(&twist_o(x)).to_vec()
}

/// `let &[a, b, c] = v;` of an array parameter.
#[autodiff_forward(reference_pattern_fwd, Dual, Dual)]
#[autodiff_reverse(reference_pattern_rev, Duplicated, Active)]
fn reference_pattern(v: &[f64; 3]) -> f64 {
    let &[a, b, c] = v;
    a * b.cos() - c * b
}

fn reference_pattern_o<D: Num>(v: &[D]) -> D {
    v[0] * v[1].cos() - v[2] * v[1]
}

/// `let &[a, b] = r;` of the rows of a parameter.
#[autodiff_forward(row_patterns_fwd, Dual, Dual)]
#[autodiff_reverse(row_patterns_rev, Duplicated, Active)]
fn row_patterns(rows: &[[f64; 2]]) -> f64 {
    let mut s = 0.0;
    for r in rows {
        let &[a, b] = r;
        s += a * b.exp();
    }
    s
}

fn row_patterns_o<D: Num>(x: &[D]) -> D {
    x.chunks(2)
        .fold(c(0.0), |s: D, r: &[D]| s + r[0] * r[1].exp())
}

/// The values of a `#[differentiable]` softmax-like map.
#[differentiable]
fn exps(z: &[f64]) -> Vec<f64> {
    z.iter().map(|v| v.exp()).collect()
}

/// A call's vector made in each pass of a loop, zipped with a constant slice.
#[autodiff_forward(weighted_passes_fwd, Dual, Const, Dual)]
#[autodiff_reverse(weighted_passes_rev, Duplicated, Const, Active)]
fn weighted_passes(x: &[f64], t: &[f64]) -> f64 {
    let mut l = 0.0;
    for k in 0..2 {
        let p = exps(x);
        l += p.iter().zip(t).map(|(a, b)| a * b).sum::<f64>() * (k as f64 + 1.0);
    }
    l
}

fn weighted_passes_o<D: Num>(x: &[D], t: &[f64]) -> D {
    let s = x
        .iter()
        .zip(t)
        .fold(c(0.0), |s: D, (a, b)| s + a.exp() * c::<D>(*b));
    s * c::<D>(3.0)
}

/// Rectified values.
#[differentiable]
fn relu(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.max(0.0)).collect()
}

/// A layer without weights.
#[differentiable]
fn bend(h: &[f64]) -> Vec<f64> {
    h.iter().map(|a| 1.1 * a + a.sin()).collect()
}

/// Vectors chosen by `if`s: in a layer loop, and bound by `let`.
#[autodiff_forward(chosen_vectors_fwd, Dual, Dual)]
#[autodiff_reverse(chosen_vectors_rev, Duplicated, Active)]
fn chosen_vectors(x: &[f64]) -> f64 {
    let mut h = x.to_vec();
    for i in 0..3 {
        let z = bend(&h);
        h = if i + 1 < 3 { relu(&z) } else { z };
    }
    let g = if x[0] > 0.0 { bend(&h) } else { h.to_vec() };
    let k: Vec<f64> = if x[1] > 0.0 {
        relu(x)
    } else if x[2] > 0.0 {
        bend(x)
    } else {
        x.to_vec()
    };
    g.iter().map(|v| v * v).sum::<f64>() + k.iter().sum::<f64>()
}

fn chosen_vectors_o<D: Num>(x: &[D]) -> D {
    let relu = |v: &[D]| -> Vec<D> {
        v.iter()
            .map(|a| if a.re() > 0.0 { *a } else { c(0.0) })
            .collect()
    };
    let bend = |v: &[D]| -> Vec<D> { v.iter().map(|a| *a * 1.1 + a.sin()).collect() };
    let mut h = x.to_vec();
    for i in 0..3 {
        let z = bend(&h);
        h = if i + 1 < 3 { relu(&z) } else { z };
    }
    let g = if x[0].re() > 0.0 { bend(&h) } else { h };
    let k = if x[1].re() > 0.0 {
        relu(x)
    } else if x[2].re() > 0.0 {
        bend(x)
    } else {
        x.to_vec()
    };
    g.iter().fold(c(0.0), |s: D, v| s + *v * *v) + k.iter().fold(c(0.0), |s: D, v| s + *v)
}

/// A fit over rows borrowed from elsewhere, read by index and by row.
#[allow(clippy::needless_range_loop)] // indexing `data[i][j]` is the form under test
#[autodiff_forward(borrowed_rows_fwd, Dual, Const, Dual)]
#[autodiff_reverse(borrowed_rows_rev, Duplicated, Const, Active)]
fn borrowed_rows(w: &[f64], data: &[&[f64]]) -> f64 {
    let mut s = 0.0;
    for i in 0..data.len() {
        s += w[0] * data[i][0] + (w[1] * data[i][1]).sin();
    }
    for row in data {
        s += w[0] * row[1];
    }
    s
}

fn borrowed_rows_o<D: Num>(w: &[D], data: &[&[f64]]) -> D {
    data.iter().fold(c(0.0), |s: D, r| {
        s + w[0] * r[0] + (w[1] * r[1]).sin() + w[0] * r[1]
    })
}

/// A layer whose value is chosen by its last expression.
#[differentiable]
fn last_or_rectified(x: &[f64], last: bool) -> Vec<f64> {
    let z = bend(x);
    if last { z } else { relu(&z) }
}

/// An array chosen by the last expression, its branches ending in locals.
#[differentiable]
fn turned(r: &[f64; 3], p: &[f64; 3]) -> [f64; 3] {
    if r[0] > 0.0 {
        let o: [f64; 3] = [p[0] * r[1], p[1], p[2]];
        o
    } else {
        let u: [f64; 3] = [p[0] + r[0], p[1], p[2]];
        u
    }
}

/// An array built by `from_fn` as the last expression.
#[differentiable]
fn scaled_by(p: &[f64; 3], c: f64) -> [f64; 3] {
    std::array::from_fn(|i| p[i] * c)
}

/// More ways of choosing vectors: a copy of a local vector in one branch, the vector
/// itself in the other (`else { k }`), `match`, `Vec::from`, and helpers whose last
/// expressions choose.
#[autodiff_forward(chosen_forms_fwd, Dual, Dual)]
#[autodiff_reverse(chosen_forms_rev, Duplicated, Active)]
fn chosen_forms(x: &[f64]) -> f64 {
    let b = vec![x[0], x[1]];
    let h = if x[0] > 0.0 { b.clone() } else { relu(&b) };
    let mut k = Vec::from(x);
    for _ in 0..2 {
        k = if k[0] > 0.0 { bend(&k) } else { k };
    }
    let m: Vec<f64> = match x.len() {
        3 => bend(x),
        4 => {
            let t = relu(x);
            t.iter().map(|v| v * 0.5).collect()
        }
        _ => x.to_vec(),
    };
    k = match x.len() {
        3 => relu(&k),
        _ => k,
    };
    let l = last_or_rectified(x, x[1] > 0.0);
    let r = [x[0], x[1], x[2]];
    let p = [x[2], x[0], x[1]];
    let t = scaled_by(&turned(&r, &p), x[1]);
    h[0] + h[1] * k[1] + k[0] + l[0] * l[2] + t[0] + t[1] * t[2] + m[1] * m[2]
}

fn chosen_forms_o<D: Num>(x: &[D]) -> D {
    let relu = |v: &[D]| -> Vec<D> {
        v.iter()
            .map(|a| if a.re() > 0.0 { *a } else { c(0.0) })
            .collect()
    };
    let bend = |v: &[D]| -> Vec<D> { v.iter().map(|a| *a * 1.1 + a.sin()).collect() };
    let b = vec![x[0], x[1]];
    let h = if x[0].re() > 0.0 { b.clone() } else { relu(&b) };
    let mut k = x.to_vec();
    for _ in 0..2 {
        k = if k[0].re() > 0.0 { bend(&k) } else { k };
    }
    let m = match x.len() {
        3 => bend(x),
        4 => relu(x).iter().map(|v| *v * 0.5).collect(),
        _ => x.to_vec(),
    };
    if x.len() == 3 {
        k = relu(&k);
    }
    let z = bend(x);
    let l = if x[1].re() > 0.0 { z } else { relu(&z) };
    let (r, p) = ([x[0], x[1], x[2]], [x[2], x[0], x[1]]);
    let u = if r[0].re() > 0.0 {
        [p[0] * r[1], p[1], p[2]]
    } else {
        [p[0] + r[0], p[1], p[2]]
    };
    let t: Vec<D> = u.iter().map(|v| *v * x[1]).collect();
    h[0] + h[1] * k[1] + k[0] + l[0] * l[2] + t[0] + t[1] * t[2] + m[1] * m[2]
}

/// A call's vector moved into a `let mut` inside a branch, changed there, and chosen.
#[autodiff_forward(moved_in_branch_fwd, Dual, Dual)]
#[autodiff_reverse(moved_in_branch_rev, Duplicated, Active)]
fn moved_in_branch(x: &[f64]) -> f64 {
    let p = bend(x);
    let h: Vec<f64> = if x[0] > 0.0 {
        let mut r = p;
        r[0] *= 2.0;
        r
    } else {
        x.to_vec()
    };
    h[0] + h[1] * h[2]
}

fn moved_in_branch_o<D: Num>(x: &[D]) -> D {
    let p: Vec<D> = x.iter().map(|a| *a * 1.1 + a.sin()).collect();
    let h = if x[0].re() > 0.0 {
        vec![p[0] * 2.0, p[1], p[2]]
    } else {
        x.to_vec()
    };
    h[0] + h[1] * h[2]
}

/// Vectors chosen between calls only, with no type written: `let h = if c { relu(x) }
/// else { bend(x) };`, an `else if` chain, and a `let h;` assigned in each branch.
#[autodiff_forward(chosen_calls_fwd, Dual, Dual)]
#[autodiff_reverse(chosen_calls_rev, Duplicated, Active)]
#[allow(clippy::needless_late_init)] // the late initialization is the form under test
fn chosen_calls(x: &[f64]) -> f64 {
    let h = if x[0] > 0.0 { relu(x) } else { bend(x) };
    let k = if x[1] > 0.5 {
        bend(&h)
    } else if x[1] > -0.5 {
        relu(&h)
    } else {
        bend(x)
    };
    let g;
    if x[2] > 0.0 {
        g = bend(&k);
    } else {
        g = relu(&h);
    }
    // In a loop: the vector chosen is recorded at the end of the body, after its reads.
    let mut s = 0.0;
    for i in 0..2 {
        let e;
        if x[i] > 0.0 {
            e = bend(x);
        } else {
            e = relu(&k);
        }
        s += e[i] * e[0];
    }
    h[0] * k[1] + g[2] * g[0] + s
}

fn chosen_calls_o<D: Num>(x: &[D]) -> D {
    let relu = |v: &[D]| -> Vec<D> {
        v.iter()
            .map(|a| if a.re() > 0.0 { *a } else { c(0.0) })
            .collect()
    };
    let bend = |v: &[D]| -> Vec<D> { v.iter().map(|a| *a * 1.1 + a.sin()).collect() };
    let h = if x[0].re() > 0.0 { relu(x) } else { bend(x) };
    let k = if x[1].re() > 0.5 {
        bend(&h)
    } else if x[1].re() > -0.5 {
        relu(&h)
    } else {
        bend(x)
    };
    let g = if x[2].re() > 0.0 { bend(&k) } else { relu(&h) };
    let mut s = c::<D>(0.0);
    for i in 0..2 {
        let e = if x[i].re() > 0.0 { bend(x) } else { relu(&k) };
        s += e[i] * e[0];
    }
    h[0] * k[1] + g[2] * g[0] + s
}

/// Checks a map `[f64; 2] -> [f64; 2]` written into `r`, in both modes, against `oracle`.
#[track_caller]
fn check_map(
    (x, v, w): ([f64; 2], [f64; 2], [f64; 2]),
    fwd: impl Fn(&[f64; 2], &[f64; 2], &mut [f64; 2], &mut [f64; 2]),
    rev: impl Fn(&[f64; 2], &mut [f64; 2], &mut [f64; 2], &mut [f64; 2]),
    oracle: impl Fn(&[Dual64]) -> Vec<Dual64>,
) {
    let (value, tangent) = oracle_jvp(&oracle, &x, &v);
    let (mut r, mut dr) = ([0.0; 2], [0.0; 2]);
    fwd(&x, &v, &mut r, &mut dr);
    check_all("forward value", &r, &value);
    check_all("tangent", &dr, &tangent);
    let (mut r, mut bx, mut br) = ([0.0; 2], [0.0; 2], w);
    rev(&x, &mut bx, &mut r, &mut br);
    check_all("reverse value", &r, &value);
    check_all("vector-Jacobian product", &bx, &oracle_vjp(&oracle, &x, &w));
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn float_paths_take_a_literal_first(x in float(0.6, 2.0), v in dir(), s in seed()) {
        check1("literal_paths", (x, v, s), literal_paths, literal_paths_fwd, literal_paths_rev, literal_paths_o);
        let x32 = x as f32;
        let (_, g) = literal_paths_f32_rev(x32, 1.0);
        let want = 1.0 / 2f32.sqrt() - 2.0 / (4.0 + x32 * x32);
        prop_assert!((g - want).abs() <= 1e-5 * want.abs().max(1.0), "{g} against {want}");
    }

    #[test]
    fn generic_powf_takes_a_called_exponent(y in float(0.2, 2.0), v in dir(), s in seed()) {
        check1("generic_powers", (y, v, s), generic_powers, generic_powers_fwd, generic_powers_rev, |y: Dual64| y.powf(3.5));
    }

    #[test]
    fn a_calls_array_is_assigned_through_a_reference(x in vecf(-1.5, 1.5, 2), v in dirs(2), w in dirs(2)) {
        let case = ([x[0], x[1]], [v[0], v[1]], [w[0], w[1]]);
        check_map(case, twist_into_fwd, twist_into_rev, twist_into_o);
        check_map(case, twist_twice_fwd, twist_twice_rev, twist_twice_o);
    }

    #[test]
    fn reference_patterns_name_the_elements(x in vecf(-1.5, 1.5, 6), v in dirs(6), s in seed()) {
        let a = [x[0], x[1], x[2]];
        let mut g = [0.0; 3];
        let got = Got {
            primal: reference_pattern(&a),
            fwd: reference_pattern_fwd(&a, &[v[0], v[1], v[2]]),
            rev: reference_pattern_rev(&a, &mut g, s),
            grad: g.to_vec(),
        };
        check_scalar("reference_pattern", &x[..3], &v[..3], s, got, reference_pattern_o);

        let rows = [[x[0], x[1]], [x[2], x[3]], [x[4], x[5]]];
        let vr = [[v[0], v[1]], [v[2], v[3]], [v[4], v[5]]];
        let mut g = [[0.0; 2]; 3];
        let got = Got {
            primal: row_patterns(&rows),
            fwd: row_patterns_fwd(&rows, &vr),
            rev: row_patterns_rev(&rows, &mut g, s),
            grad: g.concat(),
        };
        check_scalar("row_patterns", &x, &v, s, got, row_patterns_o);
    }

    #[test]
    fn a_calls_vector_from_a_loop_zips_with_a_constant(x in vecf(-1.0, 1.0, 3), t in vecf(-2.0, 2.0, 3), v in dirs(3), s in seed()) {
        let mut g = vec![0.0; 3];
        let got = Got {
            primal: weighted_passes(&x, &t),
            fwd: weighted_passes_fwd(&x, &v, &t),
            rev: weighted_passes_rev(&x, &mut g, &t, s),
            grad: g,
        };
        check_scalar("weighted_passes", &x, &v, s, got, |d| weighted_passes_o(d, &t));
    }

    #[test]
    fn vectors_chosen_by_if(((x, v, s0), seed) in (slice_case(-1.5, 1.5, 3..6, 0), seed())) {
        check_slice("chosen_vectors", (&x, &v, &s0, seed), chosen_vectors, chosen_vectors_fwd, chosen_vectors_rev, chosen_vectors_o);
        check_hvp_of::<chosen_vectors_rev>(&x, &v, chosen_vectors_o);
    }

    #[test]
    fn rows_borrowed_from_elsewhere_are_data(w in vecf(-1.5, 1.5, 2), rows in vecf(-2.0, 2.0, 6), v in dirs(2), s in seed()) {
        let data: Vec<&[f64]> = rows.chunks(2).collect();
        let mut g = vec![0.0; 2];
        let got = Got {
            primal: borrowed_rows(&w, &data),
            fwd: borrowed_rows_fwd(&w, &v, &data),
            rev: borrowed_rows_rev(&w, &mut g, &data, s),
            grad: g,
        };
        check_scalar("borrowed_rows", &w, &v, s, got, |d| borrowed_rows_o(d, &data));
    }

    #[test]
    fn more_ways_of_choosing_vectors_and_arrays(((x, v, s0), seed) in (slice_case(-1.5, 1.5, 3..5, 0), seed())) {
        check_slice("chosen_forms", (&x, &v, &s0, seed), chosen_forms, chosen_forms_fwd, chosen_forms_rev, chosen_forms_o);
        check_hvp_of::<chosen_forms_rev>(&x, &v, chosen_forms_o);
    }

    #[test]
    fn vectors_chosen_between_calls_without_a_type(((x, v, s0), seed) in (slice_case(-1.5, 1.5, 3..5, 0), seed())) {
        check_slice("chosen_calls", (&x, &v, &s0, seed), chosen_calls, chosen_calls_fwd, chosen_calls_rev, chosen_calls_o);
        check_hvp_of::<chosen_calls_rev>(&x, &v, chosen_calls_o);
    }

    #[test]
    fn a_calls_vector_moved_in_a_branch(((x, v, s0), seed) in (slice_case(-1.5, 1.5, 3..5, 0), seed())) {
        check_slice("moved_in_branch", (&x, &v, &s0, seed), moved_in_branch, moved_in_branch_fwd, moved_in_branch_rev, moved_in_branch_o);
        check_hvp_of::<moved_in_branch_rev>(&x, &v, moved_in_branch_o);
    }
}

/// A matrix built in the function and written whole through a `&mut` matrix parameter:
/// `2·Aᵀ`.
#[autodiff_reverse(doubled_transpose_rev, Duplicated, Duplicated)]
#[autodiff_forward(doubled_transpose_fwd, Dual, Dual)]
fn doubled_transpose(a: &[[f64; 2]; 2], out: &mut [[f64; 2]; 2]) {
    let mut t = [[0.0; 2]; 2];
    for i in 0..2 {
        for j in 0..2 {
            t[j][i] = 2.0 * a[i][j];
        }
    }
    *out = t;
}

#[test]
fn a_matrix_written_whole_through_a_mut_parameter() {
    let a = [[1.5, -2.0], [0.25, 3.0]];
    let (mut out, mut dout) = ([[0.0; 2]; 2], [[1.0, 10.0], [100.0, 1000.0]]);
    let mut da = [[0.0; 2]; 2];
    doubled_transpose_rev(&a, &mut da, &mut out, &mut dout);
    assert_eq!(out, [[3.0, 0.5], [-4.0, 6.0]]);
    // ∂/∂a[i][j] of Σ dout[k][l]·out[k][l] is 2·dout[j][i].
    assert_eq!(da, [[2.0, 200.0], [20.0, 2000.0]]);
    let (mut out, mut tout) = ([[0.0; 2]; 2], [[0.0; 2]; 2]);
    doubled_transpose_fwd(&a, &[[1.0, 0.5], [0.0, -1.0]], &mut out, &mut tout);
    assert_eq!(tout, [[2.0, 0.0], [1.0, -2.0]]);
}
