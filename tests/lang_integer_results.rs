//! `#[differentiable]` functions whose result is, or holds, an integer: an index found by
//! a search (`fn locate(t: f64, grid: &[f64]) -> usize`) and a solver's iteration count
//! beside its root (`-> (f64, usize)`). The integer carries no derivative; the caller
//! indexes with it, converts it and compares it; and the standard searches
//! (`partition_point`, `binary_search_by`, `position`, `count`, `any`, also taken apart by
//! closures: `unwrap_or_else(|l| l)`, `map_or(0, |n| n + 1)`), whose results carry no
//! derivative either. Checked against num-dual in both modes,
//! under forward over reverse (H·v), forward over forward and reverse over forward.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

const GRID: [f64; 5] = [-2.0, -0.5, 0.25, 1.0, 2.5];
const VALS: [f64; 5] = [1.0, -0.5, 2.0, 0.5, 1.5];

/// The interval of `grid` that holds `t` (clamped to the first and last).
#[differentiable]
fn locate(t: f64, grid: &[f64]) -> usize {
    let mut i = 0;
    while i + 2 < grid.len() && grid[i + 1] <= t {
        i += 1;
    }
    i
}

/// `√a` by Newton's method, with the number of steps taken.
#[differentiable]
fn newton_sqrt(a: f64) -> (f64, usize) {
    let mut x = a.max(1.0);
    let mut steps = 0;
    if a == 1.0 {
        // An integer literal in the result (its type comes from the signature).
        return (1.0, 0);
    }
    while (x * x - a).abs() > 1e-14 * a && steps < 60 {
        x = 0.5 * (x + a / x);
        steps += 1;
    }
    // One step more: the derivatives of the iterates converge a step after their values
    // (second derivatives otherwise agree with the oracle's to only about 1e-8).
    x = 0.5 * (x + a / x);
    (x, steps)
}

/// Linear interpolation of `vals` on `grid` at each `x_i`, squared and summed, plus a
/// Newton root.
#[autodiff_forward(curve_fwd, Dual, Dual)]
#[autodiff_reverse(curve_rev, Duplicated, Active)]
fn curve(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..x.len() {
        let i = locate(x[k], &GRID);
        let w = (x[k] - GRID[i]) / (GRID[i + 1] - GRID[i]);
        let y = VALS[i] * (1.0 - w) + VALS[i + 1] * w;
        s += y * y * (1.0 + i as f64);
    }
    let (r, steps) = newton_sqrt(x[0] * x[0] + 1.0);
    let weight = if steps > 0 { 1.0 } else { 2.0 };
    s + weight * r * x[x.len() - 1]
}

fn curve_o<D: Num>(x: &[D]) -> D {
    let mut s = D::zero();
    for xk in x {
        let t = xk.re();
        let mut i = 0;
        while i + 2 < GRID.len() && GRID[i + 1] <= t {
            i += 1;
        }
        let w = (*xk - GRID[i]) / (GRID[i + 1] - GRID[i]);
        let y = (-w + 1.0) * VALS[i] + w * VALS[i + 1];
        s += y * y * (1.0 + i as f64);
    }
    // `newton_sqrt` of a ≥ 1 takes at least one step.
    s + (x[0] * x[0] + 1.0).sqrt() * x[x.len() - 1]
}

/// A second derivative through calls returning an integer and a tuple with one.
#[autodiff_forward(root_fwd, Dual, Dual)]
fn root(a: f64) -> f64 {
    let (r, steps) = newton_sqrt(a * a + 2.0);
    let i = locate(a, &GRID);
    let bonus = if steps > 100 { 1.0 } else { 0.0 };
    r * (a * 0.5).sin() + bonus * a + VALS[i] * a * a
}

#[autodiff_forward(root_fwd2, Dual, Dual)]
#[autodiff_reverse(root_rev2, Active, Active)]
fn root_slope(a: f64) -> f64 {
    root_fwd(a, 1.0).1
}

fn root_o<D: Num>(a: D) -> D {
    let t = a.re();
    let mut i = 0;
    while i + 2 < GRID.len() && GRID[i + 1] <= t {
        i += 1;
    }
    (a * a + 2.0).sqrt() * (a * 0.5).sin() + a * a * VALS[i]
}

/// The standard searches, whose results are positions, counts and truth values:
/// `partition_point`, `binary_search_by` matched with `Ok`/`Err`, `position`, `count`
/// and `any`, on a constant table and on the differentiated input.
#[autodiff_forward(searched_fwd, Dual, Dual)]
#[autodiff_reverse(searched_rev, Duplicated, Active)]
fn searched(x: &[f64]) -> f64 {
    let t = x[0];
    let i = GRID.partition_point(|&g| g < t).clamp(1, GRID.len() - 1);
    let w = (t - GRID[i - 1]) / (GRID[i] - GRID[i - 1]);
    let y = VALS[i - 1] * (1.0 - w) + VALS[i] * w;
    let j = match GRID.binary_search_by(|g| g.total_cmp(&x[1])) {
        Ok(j) => j,
        Err(j) => j.min(GRID.len() - 1),
    };
    let k = x.iter().position(|&v| v > 0.5).unwrap_or(0);
    let positive = x.iter().filter(|v| **v > 0.0).count();
    if x.iter().any(|v| v.is_nan()) {
        return 0.0;
    }
    // Searches taken apart by closures: an insertion point, and positions mapped.
    let l = GRID
        .binary_search_by(|g| g.total_cmp(&x[2]))
        .unwrap_or_else(|l| l)
        .min(GRID.len() - 1);
    let m = x
        .iter()
        .position(|&v| v > 10.0)
        .unwrap_or_else(|| x.len() - 1);
    let n = x
        .iter()
        .position(|&v| v > 0.5)
        .map_or(0, |n| (n + 1) % x.len());
    let o = x.iter().position(|&v| v > 10.0).map(|o| o * 2).unwrap_or(1);
    let o = GRID
        .binary_search_by(|g| g.total_cmp(&10.0))
        .map_err(|e| e - GRID.len() + o)
        .unwrap_or_else(|e| e);
    y * y + VALS[j] * x[1] * x[k] + positive as f64 * x[x.len() - 1] + VALS[l] * x[m] * x[n] * x[o]
}

fn searched_o<D: Num>(x: &[D]) -> D {
    let t = x[0].re();
    let mut i = 0;
    while i < GRID.len() && GRID[i] < t {
        i += 1;
    }
    let i = i.clamp(1, GRID.len() - 1);
    let w = (x[0] - GRID[i - 1]) / (GRID[i] - GRID[i - 1]);
    let y = (-w + 1.0) * VALS[i - 1] + w * VALS[i];
    let mut j = 0;
    while j < GRID.len() && GRID[j] < x[1].re() {
        j += 1;
    }
    let j = j.min(GRID.len() - 1);
    let mut k = 0;
    while k < x.len() && x[k].re() <= 0.5 {
        k += 1;
    }
    let k = if k == x.len() { 0 } else { k };
    let positive = x.iter().filter(|v| v.re() > 0.0).count();
    let l = GRID
        .iter()
        .filter(|g| **g < x[2].re())
        .count()
        .min(GRID.len() - 1);
    let m = x.len() - 1;
    let n = (0..x.len())
        .find(|n| x[*n].re() > 0.5)
        .map_or(0, |n| (n + 1) % x.len());
    y * y + x[1] * x[k] * VALS[j] + x[x.len() - 1] * positive as f64 + x[m] * x[n] * VALS[l] * x[1]
}

/// Searches taken apart by closures that read the differentiated input: the closure's
/// value carries its derivative, the position none (`map(..).unwrap_or(..)`, `map_or`,
/// `map_or_else`, `unwrap_or_else` of a `Result`'s error, `expect`).
#[autodiff_forward(picked_fwd, Dual, Dual)]
#[autodiff_reverse(picked_rev, Duplicated, Active)]
fn picked(x: &[f64]) -> f64 {
    let a = x
        .iter()
        .position(|&v| v > 0.5)
        .map(|i| x[i] * x[i])
        .unwrap_or(x[0]);
    let b = x
        .iter()
        .rposition(|&v| v < 0.0)
        .map_or(x[1].sin(), |i| x[i] * 3.0);
    let c = GRID
        .binary_search_by(|g| g.total_cmp(&x[2]))
        .map_or_else(|e| x[e.min(x.len() - 1)], |j| x[j].exp());
    let d = x
        .iter()
        .position(|&v| v > 10.0)
        .map(|i| x[i])
        .unwrap_or_else(|| x[x.len() - 1].cos());
    let e = (0..x.len())
        .rev()
        .position(|i| i == 0)
        .map(|i| x[i] * x[0])
        .expect("found");
    a + b * c + d * e
}

fn picked_o<D: Num>(x: &[D]) -> D {
    let a = match (0..x.len()).find(|&i| x[i].re() > 0.5) {
        Some(i) => x[i] * x[i],
        None => x[0],
    };
    let b = match (0..x.len()).rev().find(|&i| x[i].re() < 0.0) {
        Some(i) => x[i] * 3.0,
        None => x[1].sin(),
    };
    // (The grid holds no value of `x[2]`: always the insertion point.)
    let e = GRID.iter().filter(|g| **g < x[2].re()).count();
    let c = x[e.min(x.len() - 1)];
    let d = x[x.len() - 1].cos();
    let e = x[x.len() - 1] * x[0];
    a + b * c + d * e
}

/// Away from the grid's knots, where the interpolation has a kink.
fn off_knots(x: f64) -> bool {
    GRID.iter().all(|g| (x - g).abs() > 1e-3)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn integer_results_in_both_modes_and_hvp(x in vecf(-2.5, 3.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        prop_assume!(x.iter().all(|t| off_knots(*t)));
        check_slice("curve", (&x, &v, &s0, s), curve, curve_fwd, curve_rev, curve_o::<Dual64>);
        check_hvp_of::<curve_rev>(&x, &v, curve_o);
    }

    #[test]
    fn searches_in_both_modes_and_hvp(x in vecf(-2.5, 3.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        prop_assume!(x.iter().all(|t| off_knots(*t) && (t - 0.5).abs() > 1e-3 && t.abs() > 1e-3));
        check_slice("searched", (&x, &v, &s0, s), searched, searched_fwd, searched_rev, searched_o::<Dual64>);
        check_hvp_of::<searched_rev>(&x, &v, searched_o);
    }

    #[test]
    fn searches_taken_apart_by_closures_of_active_values(x in vecf(-2.5, 3.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        prop_assume!(x.iter().all(|t| off_knots(*t) && (t - 0.5).abs() > 1e-3 && t.abs() > 1e-3 && *t < 9.0));
        check_slice("picked", (&x, &v, &s0, s), picked, picked_fwd, picked_rev, picked_o::<Dual64>);
        check_hvp_of::<picked_rev>(&x, &v, picked_o);
    }

    #[test]
    fn second_derivatives_through_integer_results(a in float(-2.5, 3.0)) {
        prop_assume!(off_knots(a));
        let d2 = num_dual::second_derivative(root_o, a).2;
        check("primal", root(a), root_o(num_dual::Dual64::from(a)).re);
        check("forward over forward", root_fwd2(a, 1.0).1, d2);
        check("reverse over forward", root_rev2(a, 1.0).1, d2);
    }
}

/// Methods of a constant parameter of integers, kept as written: `get` with `copied` and
/// `map_or`, `iter().max()`.
#[autodiff_forward(masked_fwd, Dual, Const, Dual)]
#[autodiff_reverse(masked_rev, Duplicated, Const, Active)]
fn masked(p: &[f64], mask: &[usize]) -> f64 {
    let w = mask.get(1).copied().unwrap_or(0) as f64;
    let m = mask.iter().max().copied().unwrap_or(1);
    let b = mask.get(7).map_or(0.5, |&k| k as f64);
    w * p[0] * p[0] + p[m % p.len()] * b
}

#[test]
fn methods_of_a_constant_integer_slice() {
    // w = 4, m = 4 (so p[1]), b = 0.5: f = 4 p0² + 0.5 p1.
    let (p, mask) = ([2.0, 3.0, 5.0], [1, 4, 2]);
    let mut g = [0.0; 3];
    check("value", masked_rev(&p, &mut g, &mask, 1.0), 17.5);
    check_all("gradient", &g, &[16.0, 0.5, 0.0]);
    let (f, t) = masked_fwd(&p, &[1.0, -2.0, 3.0], &mask);
    check("forward value", f, 17.5);
    check("tangent", t, 16.0 - 1.0);
}

/// Doubles `s` and returns it: a default with an effect.
#[differentiable]
fn bump(s: &mut f64) -> f64 {
    *s *= 2.0;
    *s
}

/// Defaults of `unwrap_or` and `map_or` are evaluated whether the search finds something
/// or not, as in Rust: each `bump` doubles `s`.
#[autodiff_forward(eager_defaults_fwd, Dual, Dual)]
#[autodiff_reverse(eager_defaults_rev, Duplicated, Active)]
fn eager_defaults(x: &[f64]) -> f64 {
    let mut s = x[0];
    let a = x
        .iter()
        .position(|&v| v > 0.5)
        .map(|i| x[i])
        .unwrap_or(bump(&mut s));
    let b = x.get(1).copied().unwrap_or(bump(&mut s));
    let c = x
        .iter()
        .rposition(|&v| v > 0.5)
        .map_or(bump(&mut s), |i| x[i] * 3.0);
    a * b + c + s
}

#[test]
fn eager_defaults_are_evaluated_found_or_not() {
    // x[1] > 0.5: every search finds it; `s` is doubled three times all the same.
    let x = [0.25, 1.5];
    let want = 1.5 * 1.5 + 4.5 + 8.0 * 0.25;
    let d_want = [8.0, 2.0 * 1.5 + 3.0];
    check("primal", eager_defaults(&x), want);
    let mut g = [0.0; 2];
    check("reverse value", eager_defaults_rev(&x, &mut g, 1.0), want);
    check_all("gradient", &g, &d_want);
    for (k, v) in [[1.0, 0.0], [0.0, 1.0]].iter().enumerate() {
        let (y, t) = eager_defaults_fwd(&x, v);
        check("forward value", y, want);
        check("tangent", t, d_want[k]);
    }
}

/// Plain helpers (no attribute) taking floats and returning an integer or a truth
/// value: which interval of `GRID` holds `t`, and whether `t` is past the middle.
fn interval_of(t: f64) -> usize {
    GRID.iter()
        .take(GRID.len() - 1)
        .skip(1)
        .filter(|g| **g <= t)
        .count()
}

fn past_middle(t: f64, middle: f64) -> bool {
    t > middle
}

fn side_of(t: f64) -> i32 {
    if t < 0.0 { -1 } else { 1 }
}

/// Their results named by their written types (`let i: usize = interval_of(x[k]);`),
/// cast to an integer type, assigned to a local declared with one, matched on, and given
/// to `powi`: integers and truth values, which need no derivative, so the helpers need
/// none.
#[differentiable]
fn by_typed_helpers(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut total: usize = 0;
    for k in 0..x.len() {
        let mut i: usize = interval_of(x[k]);
        let late: bool = past_middle(x[k], 0.5);
        let side: i32 = side_of(x[k]);
        if late {
            i = GRID.len() - 2 - i;
        }
        s += VALS[i] * x[k] * x[k] + side as f64 * x[k];
        let (a, b): (usize, i32) = (interval_of(x[k]), side_of(x[k]));
        let twice = interval_of(x[k]) as i64 * 2;
        s += match interval_of(x[k]) {
            0 | 1 => x[k].sin(),
            _ => x[k].cos() * (twice as f64),
        };
        s += x[k].powi(side_of(x[k]) + 2) * VALS[a] * b as f64;
        total = interval_of(x[k]);
        total += interval_of(x[0]);
    }
    s + total as f64 * x[0]
}

#[autodiff_forward(typed_helpers_fwd, Dual, Dual)]
#[autodiff_reverse(typed_helpers_rev, Duplicated, Active)]
fn typed_helpers(x: &[f64]) -> f64 {
    by_typed_helpers(x) * x[0]
}

fn typed_helpers_o<D: Num>(x: &[D]) -> D {
    let interval = |t: f64| GRID[1..GRID.len() - 1].iter().filter(|g| **g <= t).count();
    let mut s = D::zero();
    let mut total = 0;
    for xk in x {
        let t = xk.re();
        let a = interval(t);
        let mut i = a;
        if t > 0.5 {
            i = GRID.len() - 2 - i;
        }
        let side = if t < 0.0 { -1 } else { 1 };
        s += *xk * *xk * VALS[i] + *xk * side as f64;
        s += match a {
            0 | 1 => xk.sin(),
            _ => xk.cos() * (2.0 * a as f64),
        };
        s += xk.powi(side + 2) * (VALS[a] * side as f64);
        total = a + interval(x[0].re());
    }
    (s + x[0] * total as f64) * x[0]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn integer_results_of_plain_helpers_named_by_type(x in vecf(-2.5, 3.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        prop_assume!(x.iter().all(|t| off_knots(*t) && (t - 0.5).abs() > 1e-3 && t.abs() > 1e-3));
        check_slice("typed_helpers", (&x, &v, &s0, s), typed_helpers, typed_helpers_fwd, typed_helpers_rev, typed_helpers_o::<Dual64>);
        check_hvp_of::<typed_helpers_rev>(&x, &v, typed_helpers_o);
    }
}

/// A call's integer clamped by `min`, `max` and `clamp` (methods, `std::cmp::min`, and
/// `Ord::max`), with operands that are evidently integers: the knot index of an
/// interpolation kept inside the table.
#[autodiff_forward(clamped_fwd, Dual, Dual)]
#[autodiff_reverse(clamped_rev, Duplicated, Active)]
fn clamped(x: &[f64]) -> f64 {
    let n = GRID.len();
    let mut s = 0.0;
    for k in 0..x.len() {
        let i = locate(x[k], &GRID).min(n - 3);
        let j = (i + 1).min(n - 1);
        let lo = std::cmp::min(locate(x[k], &GRID), 2);
        let hi = Ord::max(locate(x[k], &GRID), 1).clamp(1, 3);
        // (A plain helper's integer, clamped.)
        let m = interval_of(x[k]).min(2) + std::cmp::max(interval_of(x[k]), 1);
        s += VALS[i] * x[k] + VALS[j] * x[k] * x[k] + VALS[lo] * VALS[hi] * x[k].sin();
        s += VALS[m % 5] * x[k];
    }
    s
}

fn clamped_o<D: Num>(x: &[D]) -> D {
    let n = GRID.len();
    let mut s = D::zero();
    for xk in x {
        let t = xk.re();
        let mut at = 0;
        while at + 2 < n && GRID[at + 1] <= t {
            at += 1;
        }
        let (i, lo, hi) = (at.min(n - 3), at.min(2), at.max(1).clamp(1, 3));
        let j = (i + 1).min(n - 1);
        let iv = GRID[1..n - 1].iter().filter(|g| **g <= t).count();
        let m = iv.min(2) + iv.max(1);
        s += *xk * VALS[i] + *xk * *xk * VALS[j] + xk.sin() * (VALS[lo] * VALS[hi]);
        s += *xk * VALS[m % 5];
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn integer_results_clamped_by_min_and_max(x in vecf(-2.5, 3.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        prop_assume!(x.iter().all(|t| off_knots(*t)));
        check_slice("clamped", (&x, &v, &s0, s), clamped, clamped_fwd, clamped_rev, clamped_o::<Dual64>);
        check_hvp_of::<clamped_rev>(&x, &v, clamped_o);
    }
}

/// The same plain helpers' results bound without a written type, where the statements
/// after the `let` use them only as integers can be used: as an index (`VALS[i + 1]`),
/// a range's bound (`0..n`), a count (`take(n)`, `vec![v; m + 1]`) or in a comparison with an
/// integer literal (`side == -1`). A count given by such a call directly
/// (`take(interval_of(t) + 1)`, `step_by(..)`) is one too.
#[autodiff_forward(untyped_helpers_fwd, Dual, Dual)]
#[autodiff_reverse(untyped_helpers_rev, Duplicated, Active)]
fn untyped_helpers(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..x.len() {
        let i = interval_of(x[k]);
        let side = side_of(x[k]);
        let n = interval_of(x[k]) + 1;
        s += VALS[i + 1] * x[k] + x[k].powi(side + 2);
        if side == -1 {
            s += x[k].sin();
        }
        for j in 0..n {
            s += VALS[j] * x[k] * x[k];
        }
        let head: f64 = x.iter().take(n).map(|v| v * x[k]).sum();
        let direct: f64 = x.iter().take(interval_of(x[k]) + 1).map(|v| v.cos()).sum();
        s += head + direct;
        let m = interval_of(x[k]);
        let copies = vec![x[k]; m + 1];
        s += copies.iter().sum::<f64>();
    }
    for j in (0..x.len()).step_by(interval_of(x[0]) + 1) {
        s += x[j] * x[j] * x[0];
    }
    s
}

fn untyped_helpers_o<D: Num>(x: &[D]) -> D {
    let interval = |t: f64| GRID[1..GRID.len() - 1].iter().filter(|g| **g <= t).count();
    let mut s = D::zero();
    for xk in x {
        let t = xk.re();
        let (i, side) = (interval(t), if t < 0.0 { -1 } else { 1 });
        let n = i + 1;
        s += *xk * VALS[i + 1] + xk.powi(side + 2);
        if side == -1 {
            s += xk.sin();
        }
        for j in 0..n {
            s += *xk * *xk * VALS[j];
        }
        for v in x.iter().take(n) {
            s += *v * *xk + v.cos();
        }
        s += *xk * (i + 1) as f64;
    }
    for j in (0..x.len()).step_by(interval(x[0].re()) + 1) {
        s += x[j] * x[j] * x[0];
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn integer_results_of_plain_helpers_known_by_their_uses(x in vecf(-2.5, 3.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        prop_assume!(x.iter().all(|t| off_knots(*t) && t.abs() > 1e-3));
        check_slice("untyped_helpers", (&x, &v, &s0, s), untyped_helpers, untyped_helpers_fwd, untyped_helpers_rev, untyped_helpers_o::<Dual64>);
        check_hvp_of::<untyped_helpers_rev>(&x, &v, untyped_helpers_o);
    }
}
