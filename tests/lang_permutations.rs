//! Buffers reordered in place, in both modes and under forward over reverse, at random
//! points against a num-dual oracle: `swap`, `reverse`, and `sort_by` /
//! `sort_unstable_by` with the comparisons users write (`partial_cmp`, `total_cmp`), on
//! local buffers, on `&mut` parameters and on sub-slices, and a sort inside a loop;
//! `retain`, `insert`, `remove`, `swap_remove`, `rotate_left` and `rotate_right` of local
//! vectors, of a struct's `Vec` member, of a `&mut` parameter and of a sub-slice.

// Index loops in the oracles mirror the constructs under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// A weighted sum of the sorted values (an L-statistic: the median's smooth cousin),
/// after swaps and reversals.
#[autodiff_forward(ordered_fwd, Dual, Dual)]
#[autodiff_reverse(ordered_rev, Duplicated, Active)]
fn ordered(x: &[f64]) -> f64 {
    let n = x.len();
    let mut v: Vec<f64> = x.iter().map(|a| a * a.cos()).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut s = 0.0;
    for k in 0..n {
        s += v[k] * (k as f64 + 1.0);
    }
    let mut w = x.to_vec();
    w.swap(0, n - 1);
    w[..n / 2 + 1].reverse();
    w.sort_unstable_by(f64::total_cmp);
    w.reverse();
    for k in 0..n {
        s += w[k] * w[k] * (0.5 + k as f64);
    }
    s
}

fn ordered_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut v: Vec<D> = x.iter().map(|a| *a * a.cos()).collect();
    v.sort_by(|a, b| a.re().partial_cmp(&b.re()).unwrap());
    let mut s = c::<D>(0.0);
    for k in 0..n {
        s += v[k] * (k as f64 + 1.0);
    }
    let mut w = x.to_vec();
    w.swap(0, n - 1);
    w[..n / 2 + 1].reverse();
    w.sort_by(|a, b| a.re().total_cmp(&b.re()));
    w.reverse();
    for k in 0..n {
        s += w[k] * w[k] * (0.5 + k as f64);
    }
    s
}

/// A sort inside a loop: the reverse sweep keeps each iteration's permutation.
#[autodiff_forward(resorted_fwd, Dual, Dual)]
#[autodiff_reverse(resorted_rev, Duplicated, Active)]
fn resorted(x: &[f64]) -> f64 {
    let n = x.len();
    let mut v = x.to_vec();
    let mut s = 0.0;
    for i in 0..n {
        v[i] = v[i] * 1.5 - s * 0.25;
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        s += v[0] * v[n - 1] + v[n / 2].sin();
    }
    s
}

fn resorted_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut v = x.to_vec();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        v[i] = v[i] * 1.5 - s * 0.25;
        v.sort_by(|a, b| a.re().partial_cmp(&b.re()).unwrap());
        s += v[0] * v[n - 1] + v[n / 2].sin();
    }
    s
}

/// An in-place reordering of a `&mut` parameter: its shadow follows its elements.
#[autodiff_forward(reorder_fwd, Dual, Dual)]
#[autodiff_reverse(reorder_rev, Duplicated, Duplicated)]
fn reorder(x: &[f64], y: &mut [f64]) {
    let n = y.len();
    for i in 0..n {
        y[i] *= x[i];
    }
    y.sort_by(|a, b| b.partial_cmp(a).unwrap());
    y.swap(0, n / 2);
    for i in 1..n {
        y[i] += y[i - 1] * 0.5;
    }
}

/// `std::mem::swap` of two float locals and of two elements, in a loop.
#[autodiff_forward(swapped_fwd, Dual, Dual)]
#[autodiff_reverse(swapped_rev, Duplicated, Active)]
fn swapped(x: &[f64]) -> f64 {
    let mut u = x[0];
    let mut w = x[x.len() - 1] * 2.0;
    let mut v = x.to_vec();
    let mut y: Vec<f64> = x.iter().map(|t| t * t).collect();
    for k in 0..3 {
        std::mem::swap(&mut u, &mut w);
        u = u * 0.5 + w.sin();
        std::mem::swap(&mut v[0], &mut y[k % x.len()]);
        v[0] *= u;
    }
    // Elements exchanged through the references of `iter_mut`.
    for (a, b) in v.iter_mut().zip(y.iter_mut()).skip(1) {
        std::mem::swap(a, b);
    }
    u * w + v[0] - v[v.len() - 1] + y[0] * y[y.len() - 1]
}

fn swapped_o<D: Num>(x: &[D]) -> D {
    let mut u = x[0];
    let mut w = x[x.len() - 1] * 2.0;
    let mut v = x.to_vec();
    let mut y: Vec<D> = x.iter().map(|t| *t * *t).collect();
    let n = v.len();
    for k in 0..3 {
        std::mem::swap(&mut u, &mut w);
        u = u * 0.5 + w.sin();
        std::mem::swap(&mut v[0], &mut y[k % n]);
        v[0] *= u;
    }
    for i in 1..n {
        std::mem::swap(&mut v[i], &mut y[i]);
    }
    u * w + v[0] - v[n - 1] + y[0] * y[n - 1]
}

/// Double buffering: explicit steps of a heat equation into `next`, then
/// `std::mem::swap(&mut u, &mut next)`; two local arrays swapped; and two vectors of
/// different lengths swapped (each takes the other's length).
#[autodiff_forward(heat_fwd, Dual, Dual)]
#[autodiff_reverse(heat_rev, Duplicated, Active)]
fn heat(x: &[f64]) -> f64 {
    let n = x.len();
    let k = 0.1 + 0.05 * x[0];
    let mut u = x.to_vec();
    let mut next = vec![0.0; n];
    for _ in 0..5 {
        next[0] = u[0];
        next[n - 1] = u[n - 1];
        for i in 1..n - 1 {
            next[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        std::mem::swap(&mut u, &mut next);
    }
    let mut a = [x[0], x[n - 1] * x[0]];
    let mut b = [u[0].sin(), 2.0];
    for _ in 0..3 {
        std::mem::swap(&mut a, &mut b);
        a[1] *= b[0];
    }
    let mut short = vec![x[0]; 2];
    let mut long = u.clone();
    std::mem::swap(&mut short, &mut long);
    short[n - 1] *= long[1];
    // Matrices swapped whole.
    let mut m = [[x[0], x[1]], [x[2], 1.0]];
    let mut w = [[0.5, x[n - 1]], [x[1] * x[2], 2.0]];
    std::mem::swap(&mut m, &mut w);
    let m3 = m[0][1] * w[1][0] + m[1][0];
    u.iter().map(|v| v * v).sum::<f64>() + a[1] * b[1] + short.iter().sum::<f64>() + m3
}

fn heat_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let k = x[0] * 0.05 + 0.1;
    let mut u = x.to_vec();
    for _ in 0..5 {
        let mut next = u.clone();
        for i in 1..n - 1 {
            next[i] = u[i] + k * (u[i - 1] - u[i] * 2.0 + u[i + 1]);
        }
        u = next;
    }
    let mut a = [x[0], x[n - 1] * x[0]];
    let mut b = [u[0].sin(), c::<D>(2.0)];
    for _ in 0..3 {
        std::mem::swap(&mut a, &mut b);
        a[1] *= b[0];
    }
    let mut short = u.clone();
    short[n - 1] *= x[0];
    let m3 = x[n - 1] * x[2] + x[1] * x[2];
    u.iter().fold(c::<D>(0.0), |s, v| s + *v * *v)
        + a[1] * b[1]
        + short.iter().fold(c::<D>(0.0), |s, v| s + *v)
        + m3
}

/// Points (rows of a `Vec<[f64; 2]>`) sorted by their first coordinate, swapped and
/// reversed as rows, then read through an iterator only (never indexed twice).
#[autodiff_forward(sorted_points_fwd, Dual, Dual)]
#[autodiff_reverse(sorted_points_rev, Duplicated, Active)]
fn sorted_points(x: &[f64]) -> f64 {
    let mut ps: Vec<[f64; 2]> = Vec::new();
    for i in 0..x.len() {
        let p = [x[i].sin(), x[i] * x[(i + 1) % x.len()]];
        ps.push(p);
    }
    ps.sort_by(|a, b| a[0].partial_cmp(&b[0]).unwrap());
    let mut qs = Vec::new();
    for p in &ps {
        qs.push([p[1], p[0] * p[0]]);
    }
    let n = qs.len();
    qs.swap(0, n - 1);
    qs.reverse();
    qs.sort_by(|a, b| b[0].total_cmp(&a[0]));
    let mut s = 0.0;
    for (k, (p, q)) in ps.iter().zip(qs.iter()).enumerate() {
        s += (k as f64 + 1.0) * (p[0] * p[1] + q[0].cos() * q[1]);
    }
    s
}

fn sorted_points_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut ps: Vec<[D; 2]> = (0..n)
        .map(|i| [x[i].sin(), x[i] * x[(i + 1) % n]])
        .collect();
    ps.sort_by(|a, b| a[0].re().partial_cmp(&b[0].re()).unwrap());
    let mut qs: Vec<[D; 2]> = ps.iter().map(|p| [p[1], p[0] * p[0]]).collect();
    qs.swap(0, n - 1);
    qs.reverse();
    qs.sort_by(|a, b| b[0].re().total_cmp(&a[0].re()));
    let mut s = D::zero();
    for k in 0..n {
        let (p, q) = (ps[k], qs[k]);
        s += (p[0] * p[1] + q[0].cos() * q[1]) * (k as f64 + 1.0);
    }
    s
}

/// Elements kept, inserted, removed and rotated: a local vector edited by every
/// method, a struct's member, and a `&mut` parameter rotated by a callee.
#[autodiff_forward(edited_fwd, Dual, Dual)]
#[autodiff_reverse(edited_rev, Duplicated, Active)]
fn edited(x: &[f64]) -> f64 {
    let a = x[0];
    let mut v: Vec<f64> = x.iter().map(|t| t * a).collect();
    v.retain(|t| *t > -0.3);
    v.insert(v.len() / 2, a * a);
    v.insert(0, x[1]);
    v.insert(v.len(), a * 0.25);
    let r = v.remove(1);
    v.remove(0);
    let s = v.swap_remove(0);
    let k = v.len() / 3;
    v.rotate_left(k);
    let m = v.len().min(1);
    v.rotate_right(m);
    let mut tot = r * s;
    for (i, t) in v.iter().enumerate() {
        tot += t * (i as f64 + 1.0);
    }
    let mut h = Hist {
        w: x.to_vec(),
        scale: x[1],
    };
    h.w.retain(|&t| t < 0.8);
    h.w.insert(0, h.scale);
    let q = h.w.remove(h.w.len() - 1);
    let mut w = x.to_vec();
    turned(&mut w, 1);
    w[1..].rotate_left(1);
    tot + q * h.w[0] + w[0] * w[w.len() - 1]
}

/// A struct with a vector member.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Hist {
    pub w: Vec<f64>,
    pub scale: f64,
}

/// Rotates a `&mut` parameter and doubles its first element.
#[differentiable]
fn turned(out: &mut [f64], k: usize) {
    out.rotate_right(k);
    out[0] *= 2.0;
}

fn edited_o<D: Num>(x: &[D]) -> D {
    let a = x[0];
    let mut v: Vec<D> = x.iter().map(|t| *t * a).collect();
    v.retain(|t| t.re() > -0.3);
    v.insert(v.len() / 2, a * a);
    v.insert(0, x[1]);
    v.insert(v.len(), a * 0.25);
    let r = v.remove(1);
    v.remove(0);
    let s = v.swap_remove(0);
    let k = v.len() / 3;
    v.rotate_left(k);
    let m = v.len().min(1);
    v.rotate_right(m);
    let mut tot = r * s;
    for (i, t) in v.iter().enumerate() {
        tot += *t * (i as f64 + 1.0);
    }
    let mut hw = x.to_vec();
    hw.retain(|t| t.re() < 0.8);
    hw.insert(0, x[1]);
    let q = hw.remove(hw.len() - 1);
    let mut w = x.to_vec();
    w.rotate_right(1);
    w[0] *= 2.0;
    w[1..].rotate_left(1);
    tot + q * hw[0] + w[0] * w[w.len() - 1]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn elements_kept_inserted_removed_and_rotated(
        (x, v, s0, seed) in slice_seed_case(-1.0, 1.0, 2..9)
    ) {
        check_slice("edited", (&x, &v, &s0, seed), edited, edited_fwd, edited_rev, edited_o);
        check_hvp_of::<edited_rev>(&x, &v, edited_o);
    }

    #[test]
    fn buffers_swapped_whole((x, v, s0, seed) in slice_seed_case(-1.0, 1.0, 3..8)) {
        check_slice("heat", (&x, &v, &s0, seed), heat, heat_fwd, heat_rev, heat_o);
        check_hvp_of::<heat_rev>(&x, &v, heat_o);
    }

    #[test]
    fn sort_swap_and_reverse_on_local_buffers((x, v, s0, seed) in slice_seed_case(-2.0, 2.0, 1..9)) {
        check_slice("ordered", (&x, &v, &s0, seed), ordered, ordered_fwd, ordered_rev, ordered_o);
        // H·v against the oracle's second-order duals, not differences of the gradient:
        // those jump wherever two values lie within their step of each other (the sort's
        // order flips there), which random inputs hit now and then.
        check_hvp_of::<ordered_rev>(&x, &v, ordered_o);
    }

    #[test]
    fn rows_sorted_swapped_and_reversed((x, v, s0, seed) in slice_seed_case(-2.0, 2.0, 1..9)) {
        check_slice("sorted_points", (&x, &v, &s0, seed), sorted_points, sorted_points_fwd, sorted_points_rev, sorted_points_o);
        check_hvp_of::<sorted_points_rev>(&x, &v, sorted_points_o);
    }

    #[test]
    fn mem_swap_of_floats((x, v, s0, seed) in slice_seed_case(-2.0, 2.0, 2..9)) {
        check_slice("swapped", (&x, &v, &s0, seed), swapped, swapped_fwd, swapped_rev, swapped_o);
    }

    #[test]
    fn a_sort_inside_a_loop((x, v, s0, seed) in slice_seed_case(-2.0, 2.0, 1..9)) {
        check_slice("resorted", (&x, &v, &s0, seed), resorted, resorted_fwd, resorted_rev, resorted_o);
        check_hvp_of::<resorted_rev>(&x, &v, resorted_o);
    }

    #[test]
    fn sort_and_swap_on_a_mut_parameter(
        x in prop::collection::vec(-2.0..2.0f64, 1..8),
        y0 in prop::collection::vec(-2.0..2.0f64, 8),
        dx in prop::collection::vec(-1.0..1.0f64, 8),
        dy0 in prop::collection::vec(-1.0..1.0f64, 8),
        wy in prop::collection::vec(-1.0..1.0f64, 8),
    ) {
        let n = x.len();
        let (y0, dx, dy0, wy) = (&y0[..n], &dx[..n], &dy0[..n], &wy[..n]);
        // The oracle: the same steps on num-dual values, seeded with the tangents.
        let xd: Vec<Dual64> = (0..n).map(|i| Dual64::new(x[i], dx[i])).collect();
        let mut yd: Vec<Dual64> = (0..n).map(|i| Dual64::new(y0[i], dy0[i])).collect();
        for i in 0..n {
            yd[i] *= xd[i];
        }
        yd.sort_by(|a, b| b.re.partial_cmp(&a.re).unwrap());
        yd.swap(0, n / 2);
        for i in 1..n {
            let prev = yd[i - 1];
            yd[i] += prev * 0.5;
        }
        // Forward: tangents of the final values.
        let (mut y, mut ty) = (y0.to_vec(), dy0.to_vec());
        reorder_fwd(&x, dx, &mut y, &mut ty);
        for i in 0..n {
            check("reorder value", y[i], yd[i].re);
            check("reorder tangent", ty[i], yd[i].eps);
        }
        // Reverse: <wy, J (dx, dy0)> = <J^T wy, (dx, dy0)>.
        let (mut y, mut gx, mut gy) = (y0.to_vec(), vec![0.0; n], wy.to_vec());
        reorder_rev(&x, &mut gx, &mut y, &mut gy);
        let lhs: f64 = (0..n).map(|i| wy[i] * yd[i].eps).sum();
        let rhs: f64 = (0..n).map(|i| gx[i] * dx[i] + gy[i] * dy0[i]).sum();
        check("reorder adjoint", rhs, lhs);
    }
}
