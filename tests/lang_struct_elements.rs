//! Elements of slices of structs and of rows taken by value: `let p = ps[i];`,
//! `let mut p = ps[i];`, `for &p in ps`, `for p in ps.iter().copied()`, `for &r in rows`,
//! `for &[a, b, c] in rows`, the element `max_by`/`min_by` finds, and the elements of a
//! local vector or array of structs (`vec![P2 { .. }; n]`, `vec![P2 { .. }, P2 { .. }]`,
//! grown by `push(P2 { .. })`), in both modes
//! against num-dual and under forward over reverse against `HyperDual64`.

// Index loops and local vectors are part of the language under test.
#![allow(clippy::needless_range_loop, clippy::useless_vec)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use num_dual::HyperDual64;
use proptest::prelude::*;

#[differentiable]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct P2 {
    pub x: f64,
    pub y: f64,
}

/// Points from a flat slice `[x0, y0, x1, y1, ..]`.
fn pts(x: &[f64]) -> Vec<P2> {
    x.chunks(2).map(|c| P2 { x: c[0], y: c[1] }).collect()
}

/// The flat slice of points.
fn flat(ps: &[P2]) -> Vec<f64> {
    ps.iter().flat_map(|p| [p.x, p.y]).collect()
}

/// A softened pair energy, each point copied out of the slice with `let`.
#[autodiff_forward(pair_energy_fwd, Dual, Dual)]
#[autodiff_reverse(pair_energy_rev, Duplicated, Active)]
fn pair_energy(ps: &[P2]) -> f64 {
    let mut e = 0.0;
    for i in 0..ps.len() {
        let a = ps[i];
        for j in i + 1..ps.len() {
            let b = ps[j];
            let (dx, dy) = (a.x - b.x, a.y - b.y);
            e += 1.0 / (1.0 + dx * dx + dy * dy);
        }
    }
    e
}

fn pair_energy_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 2;
    let mut e = D::zero();
    for i in 0..n {
        for j in i + 1..n {
            let (dx, dy) = (x[2 * i] - x[2 * j], x[2 * i + 1] - x[2 * j + 1]);
            e += (dx * dx + dy * dy + 1.0).recip();
        }
    }
    e
}

/// Copies written after they are taken (`let mut p = ps[i];`), a copy taken by a
/// reference pattern (`for &p in ps`) and by `copied()`.
#[autodiff_forward(copies_fwd, Dual, Dual)]
#[autodiff_reverse(copies_rev, Duplicated, Active)]
fn copies(ps: &[P2]) -> f64 {
    let mut s = 0.0;
    for i in 0..ps.len() {
        let mut p = ps[i];
        p.x *= p.y;
        p.y = p.x.sin() + ps[i].x;
        s += p.x + p.y * p.y;
    }
    for &p in ps {
        s += p.x * p.y.cos();
    }
    for p in ps.iter().copied() {
        s += p.x * p.x;
    }
    s
}

fn copies_o<D: Num>(x: &[D]) -> D {
    let mut s = D::zero();
    for c in x.chunks(2) {
        let px = c[0] * c[1];
        let py = px.sin() + c[0];
        s += px + py * py;
    }
    for c in x.chunks(2) {
        s += c[0] * c[1].cos();
    }
    for c in x.chunks(2) {
        s += c[0] * c[0];
    }
    s
}

/// A copy of an element of a `&mut` slice, taken before the element is overwritten:
/// the copy keeps the old value.
#[autodiff_forward(overwritten_fwd, Dual, Dual)]
#[autodiff_reverse(overwritten_rev, Duplicated, Active)]
fn overwritten(ps: &mut [P2]) -> f64 {
    let mut s = 0.0;
    for i in 0..ps.len() {
        let old = ps[i];
        ps[i].x = old.y * old.y;
        ps[i].y = old.x.exp();
        s += old.x * ps[i].x + ps[i].y;
    }
    s
}

fn overwritten_o<D: Num>(x: &[D]) -> D {
    let mut s = D::zero();
    for c in x.chunks(2) {
        let (nx, ny) = (c[1] * c[1], c[0].exp());
        s += c[0] * nx + ny;
    }
    s
}

/// Rows copied by a reference pattern, destructured by one, and copied by `copied()`.
#[autodiff_forward(rows_fwd, Dual, Dual)]
#[autodiff_reverse(rows_rev, Duplicated, Active)]
fn rows(r: &[[f64; 3]]) -> f64 {
    let mut s = 0.0;
    for &row in r {
        s += row[0] * row[1];
    }
    for &[a, b, c] in r {
        s += a * b * c;
    }
    for row in r.iter().copied() {
        s += row[2].exp();
    }
    s
}

fn rows_o<D: Num>(x: &[D]) -> D {
    let mut s = D::zero();
    for r in x.chunks(3) {
        s += r[0] * r[1] + r[0] * r[1] * r[2] + r[2].exp();
    }
    s
}

/// Elements of parts of the slices (`&ps[1..]`, `ps[..k].iter().copied()`, a part bound
/// to a name), and the ends (`first`, `last`, `get`).
#[autodiff_forward(parts_fwd, Dual, Dual)]
#[autodiff_reverse(parts_rev, Duplicated, Active)]
fn parts(ps: &[P2]) -> f64 {
    let n = ps.len();
    let mut s = 0.0;
    for &p in &ps[1..] {
        s += p.x * p.y;
    }
    for p in ps[..n - 1].iter().copied() {
        s += p.y.sin();
    }
    let tail = &ps[1..];
    for i in 0..tail.len() {
        let p = tail[i];
        s += p.x * p.x;
    }
    let last = ps.last().unwrap();
    let first = ps.first().copied().unwrap();
    let second = ps.get(1).unwrap();
    s + last.x * first.y + second.y
}

fn parts_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 2;
    let mut s = D::zero();
    for i in 1..n {
        s += x[2 * i] * x[2 * i + 1];
    }
    for i in 0..n - 1 {
        s += x[2 * i + 1].sin();
    }
    for i in 1..n {
        s += x[2 * i] * x[2 * i];
    }
    s + x[2 * n - 2] * x[1] + x[3]
}

/// Rows of a part of a parameter of rows.
#[autodiff_forward(row_parts_fwd, Dual, Dual)]
#[autodiff_reverse(row_parts_rev, Duplicated, Active)]
fn row_parts(r: &[[f64; 3]]) -> f64 {
    let mut s = 0.0;
    for &row in &r[1..] {
        s += row[0] * row[2];
    }
    let last = r.last().unwrap();
    s + last[1].exp()
}

fn row_parts_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 3;
    let mut s = D::zero();
    for i in 1..n {
        s += x[3 * i] * x[3 * i + 2];
    }
    s + x[3 * n - 2].exp()
}

/// The argmax written by hand: a copy kept and assigned again from elements and from
/// other copies (`best = p;`, `best = q;`).
#[autodiff_forward(kept_best_fwd, Dual, Dual)]
#[autodiff_reverse(kept_best_rev, Duplicated, Active)]
fn kept_best(ps: &[P2]) -> f64 {
    let mut best = ps[0];
    for &p in ps {
        if p.y > best.y {
            best = p;
        }
    }
    let s = best.x * best.y;
    for i in 0..ps.len() {
        let q = ps[i];
        if q.x < best.x {
            best = q;
        }
    }
    s + best.x.sin() * best.y
}

/// The positions `kept_best` settles on, from the primal values.
fn kept_best_positions(x: &[f64]) -> (usize, usize) {
    let ps = pts(x);
    let mut a = 0;
    for (i, p) in ps.iter().enumerate() {
        if p.y > ps[a].y {
            a = i;
        }
    }
    let mut b = a;
    for (i, p) in ps.iter().enumerate() {
        if p.x < ps[b].x {
            b = i;
        }
    }
    (a, b)
}

fn kept_best_o<D: Num>(x: &[D], (a, b): (usize, usize)) -> D {
    x[2 * a] * x[2 * a + 1] + x[2 * b].sin() * x[2 * b + 1]
}

/// A copy of a copy, written (`let mut r = q;`).
#[autodiff_forward(copy_of_copy_fwd, Dual, Dual)]
#[autodiff_reverse(copy_of_copy_rev, Duplicated, Active)]
fn copy_of_copy(ps: &[P2]) -> f64 {
    let mut s = 0.0;
    for i in 0..ps.len() {
        let q = ps[i];
        let mut r = q;
        r.x = r.x * 3.0 + q.y.sin();
        s += q.x * r.x + r.y;
    }
    s
}

fn copy_of_copy_o<D: Num>(x: &[D]) -> D {
    let mut s = D::zero();
    for c in x.chunks(2) {
        let rx = c[0] * 3.0 + c[1].sin();
        s += c[0] * rx + c[1];
    }
    s
}

#[autodiff_forward(copy_of_copy_hvp, Dual, Dual)]
fn copy_of_copy_grad(ps: &[P2], g: &mut [P2]) {
    g.fill(P2::default());
    copy_of_copy_rev(ps, g, 1.0);
}

/// Elements of a `&mut` slice written whole: from a copy changed in between, and from
/// the element before (`ps[i] = ps[i - 1];`).
#[autodiff_forward(written_whole_fwd, Dual, Dual)]
#[autodiff_reverse(written_whole_rev, Duplicated, Active)]
fn written_whole(ps: &mut [P2]) -> f64 {
    let mut s = 0.0;
    for i in 0..ps.len() {
        let mut p = ps[i];
        p.x *= p.y;
        ps[i] = p;
        s += ps[i].x;
    }
    for i in 1..ps.len() {
        ps[i] = ps[i - 1];
        ps[i].x += ps[i].y * 0.5;
        s += ps[i].x * ps[i].y;
    }
    s
}

/// Elements of a `&mut` slice of structs exchanged (`swap`, a bubble pass) and reversed.
#[autodiff_forward(exchanged_fwd, Dual, Dual)]
#[autodiff_reverse(exchanged_rev, Duplicated, Active)]
fn exchanged(ps: &mut [P2]) -> f64 {
    let n = ps.len();
    let mut s = 0.0;
    for i in 0..n - 1 {
        if ps[i].y > ps[i + 1].y {
            ps.swap(i, i + 1);
        }
        s += ps[i].x * (i as f64 + 1.0);
    }
    ps.reverse();
    s + ps[0].x * ps[n - 1].y
}

fn exchanged_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 2;
    let mut p: Vec<(D, D)> = x.chunks(2).map(|c| (c[0], c[1])).collect();
    let mut s = D::zero();
    for i in 0..n - 1 {
        if p[i].1.re() > p[i + 1].1.re() {
            p.swap(i, i + 1);
        }
        s += p[i].0 * (i as f64 + 1.0);
    }
    p.reverse();
    s + p[0].0 * p[n - 1].1
}

fn written_whole_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 2;
    let mut p: Vec<(D, D)> = x.chunks(2).map(|c| (c[0], c[1])).collect();
    let mut s = D::zero();
    for q in p.iter_mut() {
        q.0 *= q.1;
        s += q.0;
    }
    for i in 1..n {
        p[i] = p[i - 1];
        let half = p[i].1 * 0.5;
        p[i].0 += half;
        s += p[i].0 * p[i].1;
    }
    s
}

/// Extrema of chains with adapters over a slice of structs: `skip`, `rev`, `filter`
/// then `copied`, and `enumerate` (the position comes with the element).
#[autodiff_forward(adapted_extremes_fwd, Dual, Dual)]
#[autodiff_reverse(adapted_extremes_rev, Duplicated, Active)]
fn adapted_extremes(ps: &[P2]) -> f64 {
    let a = ps
        .iter()
        .skip(1)
        .min_by(|a, b| a.y.partial_cmp(&b.y).unwrap())
        .unwrap();
    let b = ps
        .iter()
        .rev()
        .max_by(|a, b| a.x.partial_cmp(&b.x).unwrap())
        .unwrap();
    let c = ps
        .iter()
        .filter(|p| p.x < 10.0)
        .copied()
        .max_by(|a, b| (a.x * a.y).partial_cmp(&(b.x * b.y)).unwrap())
        .unwrap();
    let (i, d) = ps
        .iter()
        .enumerate()
        .take(3)
        .max_by(|a, b| a.1.y.partial_cmp(&b.1.y).unwrap())
        .unwrap();
    a.x * a.y + b.x.sin() + c.y * c.y + d.x * (i as f64 + 1.0)
}

/// The positions `adapted_extremes` finds, by the same chains over positions.
fn adapted_positions(x: &[f64]) -> [usize; 4] {
    let ps = pts(x);
    let n = ps.len();
    let ps = &ps;
    let by = |f: fn(&P2) -> f64| {
        move |a: &usize, b: &usize| f(&ps[*a]).partial_cmp(&f(&ps[*b])).unwrap()
    };
    [
        (0..n).skip(1).min_by(by(|p| p.y)).unwrap(),
        (0..n).rev().max_by(by(|p| p.x)).unwrap(),
        (0..n).max_by(by(|p| p.x * p.y)).unwrap(),
        (0..n).take(3).max_by(by(|p| p.y)).unwrap(),
    ]
}

fn adapted_extremes_o<D: Num>(x: &[D], [a, b, c, d]: [usize; 4]) -> D {
    x[2 * a] * x[2 * a + 1]
        + x[2 * b].sin()
        + x[2 * c + 1] * x[2 * c + 1]
        + x[2 * d] * (d as f64 + 1.0)
}

/// The point with the largest `y` (by reference) and the one with the smallest `x` (a
/// copy): the derivative reaches the element found, and only it.
#[autodiff_forward(extremes_fwd, Dual, Dual)]
#[autodiff_reverse(extremes_rev, Duplicated, Active)]
fn extremes(ps: &[P2]) -> f64 {
    let top = ps
        .iter()
        .max_by(|a, b| a.y.partial_cmp(&b.y).unwrap())
        .unwrap();
    let left = ps
        .iter()
        .copied()
        .min_by(|a, b| a.x.partial_cmp(&b.x).unwrap())
        .unwrap();
    top.x * top.y + left.x * left.y.sin()
}

/// The positions `max_by` and `min_by` find, as `std` finds them (the last maximum, the
/// first minimum).
fn extreme_positions(x: &[f64]) -> (usize, usize) {
    let ps = pts(x);
    let top = (0..ps.len())
        .max_by(|&a, &b| ps[a].y.partial_cmp(&ps[b].y).unwrap())
        .unwrap();
    let left = (0..ps.len())
        .min_by(|&a, &b| ps[a].x.partial_cmp(&ps[b].x).unwrap())
        .unwrap();
    (top, left)
}

fn extremes_o<D: Num>(x: &[D], (top, left): (usize, usize)) -> D {
    x[2 * top] * x[2 * top + 1] + x[2 * left] * x[2 * left + 1].sin()
}

/// The row with the largest first element.
#[autodiff_forward(top_row_fwd, Dual, Dual)]
#[autodiff_reverse(top_row_rev, Duplicated, Active)]
fn top_row(r: &[[f64; 3]]) -> f64 {
    let top = r
        .iter()
        .max_by(|a, b| a[0].partial_cmp(&b[0]).unwrap())
        .unwrap();
    top[1] * top[2] + top[0]
}

fn top_row_o<D: Num>(x: &[D], top: usize) -> D {
    x[3 * top + 1] * x[3 * top + 2] + x[3 * top]
}

fn top_row_position(x: &[f64]) -> usize {
    (0..x.len() / 3)
        .max_by(|&a, &b| x[3 * a].partial_cmp(&x[3 * b]).unwrap())
        .unwrap()
}

/// H·v of the pair energy: forward over its reverse companion.
#[autodiff_forward(pair_energy_hvp, Dual, Dual)]
fn pair_energy_grad(ps: &[P2], g: &mut [P2]) {
    g.fill(P2::default());
    pair_energy_rev(ps, g, 1.0);
}

/// H·v of `copies`.
#[autodiff_forward(copies_hvp, Dual, Dual)]
fn copies_grad(ps: &[P2], g: &mut [P2]) {
    g.fill(P2::default());
    copies_rev(ps, g, 1.0);
}

impl P2 {
    /// A method the local vectors' elements receive.
    #[differentiable]
    pub fn spin(&self, k: f64) -> f64 {
        self.x * self.y * k + self.y.sin()
    }
}

/// A local vector of structs (`vec![P2 { .. }; n]`) and a local array of them: elements
/// written member by member and whole, copied out, iterated by copy and by reference, and
/// receiving method calls.
#[autodiff_forward(local_points_fwd, Dual, Dual)]
#[autodiff_reverse(local_points_rev, Duplicated, Active)]
fn local_points(ps: &[P2]) -> f64 {
    let n = ps.len();
    let mut qs = vec![P2 { x: 0.0, y: 1.0 }; n];
    for i in 0..n {
        qs[i].x = ps[i].x * ps[i].y;
        qs[i].y = ps[i].y;
    }
    qs[0] = ps[n - 1];
    let first = qs[0];
    let mut s = first.x * first.y;
    for &q in qs.iter() {
        s += q.x * q.x;
    }
    for q in &qs {
        s += q.spin(0.5);
    }
    let mut pair = [P2 { x: 1.0, y: 0.0 }; 2];
    pair[1] = qs[n - 1];
    s + pair[1].spin(2.0) + qs[0].spin(1.5) * pair[0].x
}

fn local_points_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 2;
    let spin = |q: (D, D), k: f64| q.0 * q.1 * k + q.1.sin();
    let mut qs: Vec<(D, D)> = (0..n)
        .map(|i| (x[2 * i] * x[2 * i + 1], x[2 * i + 1]))
        .collect();
    qs[0] = (x[2 * n - 2], x[2 * n - 1]);
    let mut s = qs[0].0 * qs[0].1;
    for q in &qs {
        s += q.0 * q.0 + spin(*q, 0.5);
    }
    s + spin(qs[n - 1], 2.0) + spin(qs[0], 1.5)
}

/// H·v of `local_points`.
#[autodiff_forward(local_points_hvp, Dual, Dual)]
fn local_points_grad(ps: &[P2], g: &mut [P2]) {
    g.fill(P2::default());
    local_points_rev(ps, g, 1.0);
}

/// Local vectors and arrays of structs written as lists of literals whose members carry
/// derivatives (`vec![P2 { x: a, y: b }, P2 { .. }]`), one member a constant in every
/// literal, or of struct values bound before (`vec![p0, p1]`): stepped in place by a
/// method, iterated, indexed.
#[autodiff_forward(listed_points_fwd, Dual, Dual)]
#[autodiff_reverse(listed_points_rev, Duplicated, Active)]
fn listed_points(ps: &[P2]) -> f64 {
    let n = ps.len();
    let (a, b) = (ps[0], ps[n - 1]);
    let mut qs = vec![
        P2 {
            x: a.x * b.y,
            y: 0.5,
        },
        P2 {
            x: b.x.sin(),
            y: 0.5,
        },
        P2 { x: 1.5, y: 0.5 },
    ];
    let pair = [
        P2 { x: a.y, y: b.x },
        P2 {
            x: 2.0,
            y: a.x * a.x,
        },
    ];
    for q in qs.iter_mut() {
        q.x += pair[1].y * q.y;
    }
    let mut s = 0.0;
    for q in &qs {
        s += q.spin(0.5);
    }
    // Struct values bound before, one changed after it was built.
    let p0 = P2 {
        x: a.y * b.y,
        y: b.x,
    };
    let mut p1 = P2 { x: a.x, y: 0.25 };
    p1.y += a.y;
    let ws = vec![p0, p1];
    s + pair[0].spin(1.5) + qs[1].x * pair[1].x + ws[0].spin(0.7) + ws[1].x * ws[1].y
}

fn listed_points_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 2;
    let (a, b) = ((x[0], x[1]), (x[2 * n - 2], x[2 * n - 1]));
    let spin = |q: (D, D), k: f64| q.0 * q.1 * k + q.1.sin();
    let half = c::<D>(0.5);
    let pair = [(a.1, b.0), (c::<D>(2.0), a.0 * a.0)];
    let qs = [
        (a.0 * b.1 + pair[1].1 * half, half),
        (b.0.sin() + pair[1].1 * half, half),
        (c::<D>(1.5) + pair[1].1 * half, half),
    ];
    let mut s = c::<D>(0.0);
    for q in &qs {
        s += spin(*q, 0.5);
    }
    let ws = [(a.1 * b.1, b.0), (a.0, c::<D>(0.25) + a.1)];
    s + spin(pair[0], 1.5) + qs[1].0 * pair[1].0 + spin(ws[0], 0.7) + ws[1].0 * ws[1].1
}

/// Vectors of structs grown by `push` of literals whose members carry derivatives (in
/// any order, one a constant) and of a struct value bound before, from `Vec::new()`
/// without a type and `Vec::with_capacity(n)` with one: receiving a method, iterated,
/// indexed.
#[autodiff_forward(pushed_points_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_points_rev, Duplicated, Active)]
fn pushed_points(ps: &[P2]) -> f64 {
    let n = ps.len();
    let mut qs = Vec::new();
    for p in ps {
        qs.push(P2 {
            x: p.x * p.y,
            y: 0.5,
        });
    }
    let p0 = P2 {
        x: ps[0].y,
        y: ps[n - 1].x,
    };
    qs.push(p0);
    let mut rs: Vec<P2> = Vec::with_capacity(n);
    for i in 0..n {
        rs.push(P2 {
            y: ps[i].x.sin(),
            x: qs[i].x + 1.0,
        });
    }
    let mut s = 0.0;
    for q in &qs {
        s += q.spin(0.5);
    }
    for r in rs.iter() {
        s += r.x * r.y;
    }
    s + qs[n].x * rs[0].y
}

fn pushed_points_o<D: Num>(x: &[D]) -> D {
    let n = x.len() / 2;
    let spin = |q: (D, D), k: f64| q.0 * q.1 * k + q.1.sin();
    let mut qs: Vec<(D, D)> = (0..n)
        .map(|i| (x[2 * i] * x[2 * i + 1], c::<D>(0.5)))
        .collect();
    qs.push((x[1], x[2 * n - 2]));
    let rs: Vec<(D, D)> = (0..n).map(|i| (qs[i].0 + 1.0, x[2 * i].sin())).collect();
    let mut s = c::<D>(0.0);
    for q in &qs {
        s += spin(*q, 0.5);
    }
    for r in &rs {
        s += r.0 * r.1;
    }
    s + qs[n].0 * rs[0].1
}

/// H·v of `pushed_points`.
#[autodiff_forward(pushed_points_hvp, Dual, Dual)]
fn pushed_points_grad(ps: &[P2], g: &mut [P2]) {
    g.fill(P2::default());
    pushed_points_rev(ps, g, 1.0);
}

/// A struct with an array member, in a list of literals that read the parameters.
#[differentiable]
#[derive(Clone)]
pub struct Q {
    pub b: [f64; 2],
    pub z: f64,
}

#[autodiff_forward(listed_arrays_fwd, Dual, Dual)]
#[autodiff_reverse(listed_arrays_rev, Duplicated, Active)]
fn listed_arrays(c: &[f64]) -> f64 {
    let qs = vec![
        Q {
            b: [c[0], c[1]],
            z: 0.0,
        },
        Q {
            b: [c[2], c[3]],
            z: c[0],
        },
    ];
    qs[0].b[0] * qs[1].b[1] + qs[1].z * qs[0].b[1].sin()
}

fn listed_arrays_o<D: Num>(c: &[D]) -> D {
    c[0] * c[3] + c[0] * c[1].sin()
}

/// The same structs pushed onto a vector, one member read from the vector before the
/// push, one pushed under a condition.
#[autodiff_forward(pushed_arrays_fwd, Dual, Dual)]
#[autodiff_reverse(pushed_arrays_rev, Duplicated, Active)]
fn pushed_arrays(c: &[f64]) -> f64 {
    let mut qs = Vec::new();
    qs.push(Q {
        b: [c[0], c[1]],
        z: c[2],
    });
    qs.push(Q {
        b: [1.0, c[0] * c[3]],
        z: qs[0].z * 2.0,
    });
    if c[1] > 0.0 {
        qs.push(Q {
            b: [c[1], 0.5],
            z: qs.len() as f64,
        });
    }
    let mut s = 0.0;
    for q in &qs {
        s += q.b[0] * q.b[1] + q.z.sin();
    }
    s
}

fn pushed_arrays_o<D: Num>(c: &[D]) -> D {
    let mut s = c[0] * c[1] + c[2].sin() + c[0] * c[3] + (c[2] * 2.0).sin();
    if c[1].re() > 0.0 {
        s += c[1] * 0.5 + 2.0f64.sin();
    }
    s
}

/// H·v of `listed_points`.
#[autodiff_forward(listed_points_hvp, Dual, Dual)]
fn listed_points_grad(ps: &[P2], g: &mut [P2]) {
    g.fill(P2::default());
    listed_points_rev(ps, g, 1.0);
}

/// [`check_slice`] of a function of points, its points given flat.
#[track_caller]
fn check_points(
    name: &str,
    (x, v, s0, s): (&[f64], &[f64], &[f64], f64),
    f: impl Fn(&[P2]) -> f64,
    fwd: impl Fn(&[P2], &[P2]) -> (f64, f64),
    rev: impl Fn(&[P2], &mut [P2], f64) -> f64,
    oracle: impl Fn(&[Dual64]) -> Dual64,
) {
    check_slice(
        name,
        (x, v, s0, s),
        |x| f(&pts(x)),
        |x, v| fwd(&pts(x), &pts(v)),
        |x, sh, s| {
            let mut d = pts(sh);
            let r = rev(&pts(x), &mut d, s);
            sh.copy_from_slice(&flat(&d));
            r
        },
        oracle,
    );
}

/// [`check_points`] of a function of a `&mut` slice of points, whose final values get no
/// seed (the result's seed alone counts); then the slice holds what the function leaves
/// in it, after either companion.
#[track_caller]
fn check_mut_points(
    name: &str,
    (x, v, s0, s): (&[f64], &[f64], &[f64], f64),
    f: impl Fn(&mut [P2]) -> f64,
    fwd: impl Fn(&mut [P2], &mut [P2]) -> (f64, f64),
    rev: impl Fn(&mut [P2], &mut [P2], f64) -> f64,
    oracle: impl Fn(&[Dual64]) -> Dual64,
) {
    check_points(
        name,
        (x, v, s0, s),
        |ps| f(&mut ps.to_vec()),
        |ps, dps| fwd(&mut ps.to_vec(), &mut dps.to_vec()),
        |ps, d, s| {
            let mut shadow = vec![P2::default(); ps.len()];
            let r = rev(&mut ps.to_vec(), &mut shadow, s);
            for (acc, g) in d.iter_mut().zip(&shadow) {
                acc.x += g.x;
                acc.y += g.y;
            }
            r
        },
        oracle,
    );
    let mut want = pts(x);
    f(&mut want);
    let mut got = pts(x);
    rev(&mut got, &mut vec![P2::default(); x.len() / 2], s);
    assert_eq!(got, want, "{name}: the slice after the reverse companion");
    let mut got = pts(x);
    fwd(&mut got, &mut pts(v));
    assert_eq!(got, want, "{name}: the slice after the forward companion");
}

/// [`check_slice`] of a function of rows of three, its rows given flat.
#[track_caller]
fn check_rows(
    name: &str,
    (x, v, s0, s): (&[f64], &[f64], &[f64], f64),
    f: impl Fn(&[[f64; 3]]) -> f64,
    fwd: impl Fn(&[[f64; 3]], &[[f64; 3]]) -> (f64, f64),
    rev: impl Fn(&[[f64; 3]], &mut [[f64; 3]], f64) -> f64,
    oracle: impl Fn(&[Dual64]) -> Dual64,
) {
    let rows = |x: &[f64]| -> Vec<[f64; 3]> { x.chunks(3).map(|c| [c[0], c[1], c[2]]).collect() };
    check_slice(
        name,
        (x, v, s0, s),
        |x| f(&rows(x)),
        |x, v| fwd(&rows(x), &rows(v)),
        |x, sh, s| {
            let mut d = rows(sh);
            let r = rev(&rows(x), &mut d, s);
            sh.copy_from_slice(d.as_flattened());
            r
        },
        oracle,
    );
}

/// Checks the H·v of a function of points (forward over `grad`) against its oracle.
#[track_caller]
fn check_points_hvp(
    x: &[f64],
    v: &[f64],
    hvp: impl Fn(&[P2], &[P2], &mut [P2], &mut [P2]),
    oracle: impl Fn(&[HyperDual64]) -> HyperDual64,
) {
    let n = x.len() / 2;
    let (mut g, mut hv) = (vec![P2::default(); n], vec![P2::default(); n]);
    hvp(&pts(x), &pts(v), &mut g, &mut hv);
    check_hvp(&flat(&hv), x, v, oracle);
}

/// Points: an even number of floats.
fn points_case(
    lo: f64,
    hi: f64,
    pairs: std::ops::Range<usize>,
) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>)> {
    pairs.prop_flat_map(move |n| (vecf(lo, hi, 2 * n), dirs(2 * n), dirs(2 * n)))
}

/// Rows of three.
fn rows_case(
    rows: std::ops::Range<usize>,
) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>)> {
    rows.prop_flat_map(move |n| (vecf(-1.5, 1.5, 3 * n), dirs(3 * n), dirs(3 * n)))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn elements_copied_with_let((x, v, s0) in points_case(-2.0, 2.0, 1..6), s in seed()) {
        check_points("pair_energy", (&x, &v, &s0, s), pair_energy, pair_energy_fwd, pair_energy_rev, pair_energy_o::<Dual64>);
        check_points_hvp(&x, &v, pair_energy_hvp, pair_energy_o);
    }

    #[test]
    fn local_vectors_of_structs((x, v, s0) in points_case(-1.5, 1.5, 1..6), s in seed()) {
        check_points("local_points", (&x, &v, &s0, s), local_points, local_points_fwd, local_points_rev, local_points_o::<Dual64>);
        check_points_hvp(&x, &v, local_points_hvp, local_points_o);
    }

    #[test]
    fn local_lists_of_struct_literals((x, v, s0) in points_case(-1.5, 1.5, 1..6), s in seed()) {
        check_points("listed_points", (&x, &v, &s0, s), listed_points, listed_points_fwd, listed_points_rev, listed_points_o::<Dual64>);
        check_points_hvp(&x, &v, listed_points_hvp, listed_points_o);
    }

    #[test]
    fn vectors_of_structs_grown_by_push((x, v, s0) in points_case(-1.5, 1.5, 1..6), s in seed()) {
        check_points("pushed_points", (&x, &v, &s0, s), pushed_points, pushed_points_fwd, pushed_points_rev, pushed_points_o::<Dual64>);
        check_points_hvp(&x, &v, pushed_points_hvp, pushed_points_o);
    }

    #[test]
    fn local_lists_of_structs_with_arrays((x, v, s0) in slice_case(-1.5, 1.5, 4..5, 0), s in seed()) {
        check_slice("listed_arrays", (&x, &v, &s0, s), listed_arrays, listed_arrays_fwd, listed_arrays_rev, listed_arrays_o::<Dual64>);
        check_hvp_of::<listed_arrays_rev>(&x, &v, listed_arrays_o);
    }

    #[test]
    fn structs_with_arrays_pushed((x, v, s0) in slice_case(-1.5, 1.5, 4..5, 0), s in seed()) {
        check_slice("pushed_arrays", (&x, &v, &s0, s), pushed_arrays, pushed_arrays_fwd, pushed_arrays_rev, pushed_arrays_o::<Dual64>);
        check_hvp_of::<pushed_arrays_rev>(&x, &v, pushed_arrays_o);
    }

    #[test]
    fn elements_copied_written_and_iterated((x, v, s0) in points_case(-1.5, 1.5, 1..6), s in seed()) {
        check_points("copies", (&x, &v, &s0, s), copies, copies_fwd, copies_rev, copies_o::<Dual64>);
        check_points_hvp(&x, &v, copies_hvp, copies_o);
    }

    #[test]
    fn copy_keeps_the_value_before_an_overwrite((x, v, s0) in points_case(-1.5, 1.5, 1..6), s in seed()) {
        check_mut_points("overwritten", (&x, &v, &s0, s), overwritten, overwritten_fwd, overwritten_rev, overwritten_o::<Dual64>);
    }

    #[test]
    fn elements_of_parts_and_ends((x, v, s0) in points_case(-1.5, 1.5, 2..6), s in seed()) {
        check_points("parts", (&x, &v, &s0, s), parts, parts_fwd, parts_rev, parts_o::<Dual64>);
    }

    #[test]
    fn rows_of_parts((x, v, s0) in rows_case(2..5), s in seed()) {
        check_rows("row_parts", (&x, &v, &s0, s), row_parts, row_parts_fwd, row_parts_rev, row_parts_o::<Dual64>);
    }

    #[test]
    fn a_copy_assigned_again_from_elements((x, v, s0) in points_case(-2.0, 2.0, 1..6), s in seed()) {
        let at = kept_best_positions(&x);
        check_points("kept_best", (&x, &v, &s0, s), kept_best, kept_best_fwd, kept_best_rev, |d| kept_best_o(d, at));
    }

    #[test]
    fn copies_of_copies((x, v, s0) in points_case(-1.5, 1.5, 1..6), s in seed()) {
        check_points("copy_of_copy", (&x, &v, &s0, s), copy_of_copy, copy_of_copy_fwd, copy_of_copy_rev, copy_of_copy_o::<Dual64>);
        check_points_hvp(&x, &v, copy_of_copy_hvp, copy_of_copy_o);
    }

    #[test]
    fn elements_written_whole((x, v, s0) in points_case(-1.5, 1.5, 1..6), s in seed()) {
        check_mut_points("written_whole", (&x, &v, &s0, s), written_whole, written_whole_fwd, written_whole_rev, written_whole_o::<Dual64>);
    }

    #[test]
    fn extrema_through_adapters((x, v, s0) in points_case(-2.0, 2.0, 2..6), s in seed()) {
        let at = adapted_positions(&x);
        check_points("adapted_extremes", (&x, &v, &s0, s), adapted_extremes, adapted_extremes_fwd, adapted_extremes_rev, |d| adapted_extremes_o(d, at));
    }

    #[test]
    fn elements_exchanged((x, v, s0) in points_case(-1.5, 1.5, 2..6), s in seed()) {
        check_mut_points("exchanged", (&x, &v, &s0, s), exchanged, exchanged_fwd, exchanged_rev, exchanged_o::<Dual64>);
    }

    #[test]
    fn rows_copied_by_patterns((x, v, s0) in rows_case(1..5), s in seed()) {
        check_rows("rows", (&x, &v, &s0, s), rows, rows_fwd, rows_rev, rows_o::<Dual64>);
    }

    #[test]
    fn the_extremum_found_carries_the_derivative((x, v, s0) in points_case(-2.0, 2.0, 1..6), s in seed()) {
        let at = extreme_positions(&x);
        check_points("extremes", (&x, &v, &s0, s), extremes, extremes_fwd, extremes_rev, |d| extremes_o(d, at));
    }

    #[test]
    fn the_row_found_carries_the_derivative((x, v, s0) in rows_case(1..5), s in seed()) {
        let at = top_row_position(&x);
        check_rows("top_row", (&x, &v, &s0, s), top_row, top_row_fwd, top_row_rev, |d| top_row_o(d, at));
    }
}

/// Ties: `max_by` keeps the last maximum and `min_by` the first minimum, as `std` does,
/// so the gradient lands on those elements.
#[test]
fn ties_resolve_as_in_std() {
    let ps = [
        P2 { x: 0.5, y: 2.0 },
        P2 { x: -1.0, y: 2.0 },
        P2 { x: -1.0, y: 0.5 },
    ];
    let mut d = [P2::default(); 3];
    extremes_rev(&ps, &mut d, 1.0);
    // top = ps[1] (the last of the two largest y), left = ps[1] (the first of the two
    // smallest x): d/dx of x·y + x·sin(y), d/dy of x·y + x·cos(y)·1.
    let want = P2 {
        x: 2.0 + 2.0f64.sin(),
        y: -1.0 + -2.0f64.cos(),
    };
    assert_eq!(d, [P2::default(), want, P2::default()]);
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gate {
    Open,
    Shut,
}

/// Elements of a constant slice of an enum, compared by value: `for &g in gates` names
/// the element itself, not a reference to it.
#[autodiff_forward(gated_fwd, Dual, Const, Dual)]
fn gated(x: &[f64], gates: &[Gate]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        for &g in gates {
            if g == Gate::Open {
                s += x[i] * x[i];
            }
        }
    }
    s
}

#[test]
fn enum_elements_compare_by_value() {
    let gates = [Gate::Open, Gate::Shut, Gate::Open];
    let (x, v) = ([1.5, -2.0], [1.0, 0.5]);
    let (y, dy) = gated_fwd(&x, &v, &gates);
    check("gated", y, 2.0 * (1.5f64.powi(2) + 4.0));
    check(
        "gated tangent",
        dy,
        2.0 * (2.0 * 1.5 * 1.0 + 2.0 * -2.0 * 0.5),
    );
}
