//! Iterator adapters that move positions on slices, in both modes and under forward over
//! reverse, at random points against a num-dual oracle: `rev()` (Horner's rule as a
//! fold), `windows(k)`, `skip(n)`, `take(n)`, `step_by(k)`, each also after and before
//! `enumerate`, `zip` and `map`, `filter` on slices and ranges, the element found by
//! `reduce`, `max_by`, `min_by`, `first` and `last`, a local buffer of buffers built
//! with `vec![vec![0.0; m]; n]`, `const` and `static` arrays iterated, iterators
//! bound with `let` before they are consumed, chains over a slice of structs, and local
//! arrays and vectors iterated by value (`for z in zs`, over a copy where the body writes
//! `zs`).

// Index loops in the oracles mirror the constructs under test, and `map(|v| *v)` and
// `(&[..]).iter()` are constructs under test.
#![allow(
    clippy::needless_range_loop,
    clippy::map_clone,
    clippy::needless_borrow
)]

mod lang_common;
mod nested_common;

use autodiff_core::prelude::*;
use lang_common::*;
use nested_common::{assert_all_close, fd_hvp, grad_of};
use num_traits::Float;
use proptest::prelude::*;

/// Horner's rule over the coefficients, highest first: `Σ c_k x^k`, generic.
#[autodiff_forward(horner_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(horner_rev, Duplicated, Active, Active)]
fn horner<T: Float>(c: &[T], x: T) -> T {
    c.iter().rev().fold(T::zero(), |acc, &ck| acc * x + ck)
}

/// Rosenbrock over the pairs `windows(2)` gives.
#[autodiff_forward(rosen_windows_fwd, Dual, Dual)]
#[autodiff_reverse(rosen_windows_rev, Duplicated, Active)]
fn rosen_windows(x: &[f64]) -> f64 {
    x.windows(2)
        .map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2))
        .sum()
}

/// Windows whose width is known only at run time.
#[autodiff_reverse(wide_windows_rev, Duplicated, Active)]
fn wide_windows(x: &[f64]) -> f64 {
    let n = 2 + x.len() % 2;
    let mut e = 0.0;
    for w in x.windows(n) {
        let y = w[0] * w[n - 1] + w[1].sin();
        e += y * y;
    }
    e
}

fn rosen_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() - 1 {
        s += (x[i + 1] - x[i] * x[i]).powi(2) * 100.0 + (-x[i] + 1.0).powi(2);
    }
    s
}

/// Every adapter that moves positions, on its own and combined with the others.
#[autodiff_forward(moved_fwd, Dual, Dual)]
#[autodiff_reverse(moved_rev, Duplicated, Active)]
fn moved(x: &[f64]) -> f64 {
    // Neighbours by `zip` with `skip`.
    let a: f64 = x
        .iter()
        .zip(x.iter().skip(1))
        .map(|(p, q)| p * q.sin())
        .sum();
    // A prefix, every other element, and the two together.
    let b: f64 = x.iter().take(3).map(|v| v.exp()).sum();
    let c: f64 = x.iter().step_by(2).map(|v| v * v).sum();
    let d: f64 = x.iter().skip(1).step_by(2).take(2).map(|v| v.cos()).sum();
    // Reversed with positions: the weight counts from the end.
    let mut e = 0.0;
    for (i, v) in x.iter().rev().enumerate() {
        e += (i as f64 + 1.0) * v;
    }
    // Positions counted before the skip.
    let mut f = 0.0;
    for (i, v) in x.iter().enumerate().skip(2) {
        f += v * i as f64;
    }
    // Overlapping windows of three, reversed, in a fold whose order matters.
    let g = x
        .windows(3)
        .rev()
        .fold(0.5, |acc, w| acc * 0.7 + w[0] * w[2] - w[1]);
    // `rev` of a chunked slice.
    let mut h = 0.0;
    for (k, ch) in x.chunks(2).rev().enumerate() {
        h += ch[0] * (k as f64 + 0.5);
    }
    // A prefix reversed, then every other element of it.
    let i: f64 = x.iter().take(3).rev().step_by(2).map(|v| v.sin()).sum();
    // `skip` after adapters whose length is a quotient, with a literal and a local size.
    let s: usize = 2;
    let j: f64 = x.iter().step_by(s).skip(1).map(|v| v * v).sum();
    let k: f64 = x.chunks(2).skip(1).map(|ch| ch[0] * ch[ch.len() - 1]).sum();
    let l: f64 = x.chunks_exact(s).skip(1).map(|ch| ch[1].sin()).sum();
    a + b + c + d + e + f + g + h + i + j + k + l
}

fn moved_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut a = c::<D>(0.0);
    for i in 0..n - 1 {
        a += x[i] * x[i + 1].sin();
    }
    let mut b = c::<D>(0.0);
    for i in 0..n.min(3) {
        b += x[i].exp();
    }
    let mut cc = c::<D>(0.0);
    for i in (0..n).step_by(2) {
        cc += x[i] * x[i];
    }
    let mut d = c::<D>(0.0);
    for i in (1..n).step_by(2).take(2) {
        d += x[i].cos();
    }
    let mut e = c::<D>(0.0);
    for i in 0..n {
        e += x[n - 1 - i] * (i as f64 + 1.0);
    }
    let mut f = c::<D>(0.0);
    for i in 2..n {
        f += x[i] * i as f64;
    }
    let mut g = c::<D>(0.5);
    for i in (0..n.saturating_sub(2)).rev() {
        g = g * 0.7 + x[i] * x[i + 2] - x[i + 1];
    }
    let mut h = c::<D>(0.0);
    let chunks = n.div_ceil(2);
    for k in 0..chunks {
        h += x[2 * (chunks - 1 - k)] * (k as f64 + 0.5);
    }
    let mut ii = c::<D>(0.0);
    let m = n.min(3);
    for k in (0..m).step_by(2) {
        ii += x[m - 1 - k].sin();
    }
    let mut j = c::<D>(0.0);
    for i in (2..n).step_by(2) {
        j += x[i] * x[i];
    }
    let mut k = c::<D>(0.0);
    for start in (2..n).step_by(2) {
        k += x[start] * x[(start + 1).min(n - 1)];
    }
    let mut l = c::<D>(0.0);
    for start in (2..n.saturating_sub(1)).step_by(2) {
        l += x[start + 1].sin();
    }
    a + b + cc + d + e + f + g + h + ii + j + k + l
}

/// A local matrix: `vec![vec![0.0; m]; n]`, written and read by two indices, and rows
/// summed by nested iterators.
#[autodiff_forward(matrix_fwd, Dual, Dual)]
#[autodiff_reverse(matrix_rev, Duplicated, Active)]
fn matrix(x: &[f64]) -> f64 {
    let n = x.len();
    let mut m = vec![vec![0.0; n]; 2];
    for j in 0..n {
        m[0][j] = x[j] * x[j];
        m[1][j] = x[j].sin() + m[0][j];
    }
    m[1][0] *= x[n - 1];
    m.iter().map(|row| row.iter().sum::<f64>()).product()
}

fn matrix_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut r0 = c::<D>(0.0);
    let mut r1 = c::<D>(0.0);
    for j in 0..n {
        r0 += x[j] * x[j];
        let v = x[j].sin() + x[j] * x[j];
        r1 += if j == 0 { v * x[n - 1] } else { v };
    }
    r0 * r1
}

/// `filter` on slices and ranges, before and after `map`, `copied` and `enumerate`, consumed
/// by `sum`, `fold`, `for` and `collect`.
#[autodiff_forward(filtered_fwd, Dual, Dual)]
#[autodiff_reverse(filtered_rev, Duplicated, Active)]
fn filtered(x: &[f64]) -> f64 {
    let pos: f64 = x.iter().filter(|v| **v > 0.0).map(|v| v * v).sum();
    let neg = x
        .iter()
        .copied()
        .filter(|&v| v < -0.25)
        .fold(1.0, |a, v| a * (1.0 + v * 0.5));
    let mut s = pos + neg;
    for (i, v) in x.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        s += v.sin() * i as f64;
    }
    let thirds: f64 = (0..x.len()).filter(|i| i % 3 != 1).map(|i| x[i] * s).sum();
    let kept: Vec<f64> = x
        .iter()
        .map(|v| v * 2.0)
        .filter(|v| v.abs() < 1.0)
        .collect();
    s + thirds + kept.iter().sum::<f64>() * kept.len() as f64
}

fn filtered_o<D: Num>(x: &[D]) -> D {
    let mut pos = c::<D>(0.0);
    let mut neg = c::<D>(1.0);
    for v in x {
        if v.re() > 0.0 {
            pos += *v * *v;
        }
        if v.re() < -0.25 {
            neg *= *v * 0.5 + 1.0;
        }
    }
    let mut s = pos + neg;
    for i in (0..x.len()).step_by(2) {
        s += x[i].sin() * i as f64;
    }
    let mut thirds = c::<D>(0.0);
    for i in 0..x.len() {
        if i % 3 != 1 {
            thirds += x[i] * s;
        }
    }
    let (mut kept_sum, mut kept_len) = (c::<D>(0.0), 0);
    for v in x {
        if (*v * 2.0).re().abs() < 1.0 {
            kept_sum += *v * 2.0;
            kept_len += 1;
        }
    }
    s + thirds + kept_sum * kept_len as f64
}

/// The element a reduction finds: `reduce` (with a method path and with a closure),
/// `max_by`/`min_by` (on references and on values), `first`/`last`, through `unwrap`,
/// `expect`, `unwrap_or` and `copied`.
#[autodiff_forward(extremes_fwd, Dual, Dual)]
#[autodiff_reverse(extremes_rev, Duplicated, Active)]
fn extremes(x: &[f64]) -> f64 {
    let top = x.iter().copied().reduce(f64::max).unwrap();
    let damped = x
        .iter()
        .map(|v| v.sin())
        .reduce(|a, b| a * 0.5 + b)
        .unwrap_or(0.0);
    let hi = x
        .iter()
        .max_by(|a, b| a.total_cmp(b))
        .copied()
        .unwrap_or(0.0);
    let lo = *x.iter().min_by(|a, b| a.partial_cmp(b).unwrap()).unwrap();
    let sq = x
        .iter()
        .map(|v| (v - 0.25) * (v - 0.25))
        .max_by(f64::total_cmp)
        .expect("a non-empty slice");
    let ends = *x.last().unwrap() * x.first().copied().unwrap();
    // A `map` that hands the element itself on (a place, not a new value).
    let lo_mapped = x
        .iter()
        .map(|v| *v)
        .min_by(|a, b| a.partial_cmp(b).unwrap())
        .unwrap();
    top * damped + hi * lo + sq + ends + lo_mapped * 0.5
}

/// The argmax idiom: `max_by`/`min_by` over `enumerate()` (of references and of values,
/// after `skip`) and over a `zip`, the index picking another element.
#[autodiff_forward(arg_extremes_fwd, Dual, Dual)]
#[autodiff_reverse(arg_extremes_rev, Duplicated, Active)]
fn arg_extremes(x: &[f64]) -> f64 {
    let n = x.len();
    let (k, top) = x
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    let (j, _) = x
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.partial_cmp(b.1).unwrap())
        .unwrap();
    let late = x
        .iter()
        .enumerate()
        .skip(1)
        .max_by(|a, b| (a.1 * a.1).total_cmp(&(b.1 * b.1)))
        .expect("two elements")
        .0;
    let (p, q) = x
        .iter()
        .zip(x.iter().rev())
        .min_by(|a, b| (a.0 - a.1).total_cmp(&(b.0 - b.1)))
        .unwrap();
    top * x[(k + 1) % n] + x[j] * 3.0 + x[late].sin() + p * q
}

fn arg_extremes_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let re: Vec<f64> = x.iter().map(|v| v.re()).collect();
    // The last maximum and the first minimum, as `max_by` and `min_by` pick them.
    let (mut k, mut j, mut late, mut m) = (0, 0, 1, 0);
    for i in 0..n {
        if re[i] >= re[k] {
            k = i;
        }
        if re[i] < re[j] {
            j = i;
        }
        if i >= 1 && re[i] * re[i] >= re[late] * re[late] {
            late = i;
        }
        if re[i] - re[n - 1 - i] < re[m] - re[n - 1 - m] {
            m = i;
        }
    }
    x[k] * x[(k + 1) % n] + x[j] * 3.0 + x[late].sin() + x[m] * x[n - 1 - m]
}

/// Array literals as a loop's source: integer positions computed in the loop
/// (`for c in [2 * k + 1, 2 * k + 2]`, a binary tree's children), values that carry
/// derivatives (`for w in [a, b * 2.0, c.sin()]`), `&[..]`, `.iter()` with
/// `enumerate()`, and `(&[..]).iter()`.
#[autodiff_forward(literal_sources_fwd, Dual, Dual)]
#[autodiff_reverse(literal_sources_rev, Duplicated, Active)]
fn literal_sources(x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for k in 0..n {
        for c in [2 * k + 1, 2 * k + 2] {
            if c < n {
                s += x[c] * x[k];
            }
        }
    }
    for w in [x[0], x[1] * 2.0, x[n - 1].sin()] {
        s += w * w;
    }
    for &w in &[x[1], 0.5] {
        s -= w * x[0];
    }
    for (i, w) in [x[0].exp(), x[1]].iter().enumerate() {
        s += (i as f64 + 1.0) * w * x[n - 1];
    }
    for w in (&[x[1], 0.5]).iter() {
        s += w * x[n - 1];
    }
    s
}

fn literal_sources_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut s = D::zero();
    for k in 0..n {
        for c in [2 * k + 1, 2 * k + 2] {
            if c < n {
                s += x[c] * x[k];
            }
        }
    }
    for w in [x[0], x[1] * 2.0, x[n - 1].sin()] {
        s += w * w;
    }
    for w in [x[1], c(0.5)] {
        s -= w * x[0];
        s += w * x[n - 1];
    }
    s + (x[0].exp() + x[1] * 2.0) * x[n - 1]
}

/// Elements by position: `get(i)` with `unwrap_or`, in and out of range, `first`/`last`
/// with `unwrap_or` on an empty slice (the default, not a panic).
#[autodiff_forward(positions_fwd, Dual, Dual)]
#[autodiff_reverse(positions_rev, Duplicated, Active)]
fn positions(x: &[f64]) -> f64 {
    let second = x.get(1).copied().unwrap_or(0.5);
    let far = *x.get(x.len() + 2).unwrap_or(&0.25);
    let none = x[..0].first().copied().unwrap_or(-1.5) + x[..0].last().copied().unwrap_or(2.0);
    let last = *x.get(x.len() / 2).unwrap();
    second * far + none * x[0] + last.sin()
}

fn positions_o<D: Num>(x: &[D]) -> D {
    let second = if x.len() > 1 { x[1] } else { c(0.5) };
    second * 0.25 + x[0] * 0.5 + x[x.len() / 2].sin()
}

/// Elements by position bound by `if let Some(..)`, by a `match` with `Some` and `None`
/// arms (in either order, with a guard on `Some`) and by `let Some(..) = .. else`: a
/// reference (`Some(v)`), the element (`Some(&v)`, or `Some(v)` through `copied()`), in
/// and out of range, with and without `else`, as statements and values, a `match` with
/// several `Some` arms.
#[autodiff_forward(optional_positions_fwd, Dual, Dual)]
#[autodiff_reverse(optional_positions_rev, Duplicated, Active)]
fn optional_positions(x: &[f64]) -> f64 {
    let mut s = 0.0;
    if let Some(v) = x.get(1) {
        s += v * v;
    }
    if let Some(&w) = x.first() {
        s += w.sin();
    } else {
        s -= 1.0;
    }
    if let Some(z) = x.get(x.len() + 3) {
        s += z * 1000.0;
    }
    let t = if let Some(u) = x.last().copied() {
        u * 3.0
    } else {
        0.0
    };
    let m = match x.get(2) {
        Some(v) => v.exp(),
        None => 0.5,
    };
    let e = match x[..0].last() {
        None => 2.0,
        Some(&q) => q,
    };
    let g = match x.first() {
        Some(&q) if q > 0.0 => q * q,
        _ => -0.5 * x[0],
    };
    // Several `Some` arms, the first guarded, `None` first.
    let h = match x.get(1) {
        None => 0.25,
        Some(v) if *v > 0.5 => v * x[0],
        Some(v) => v * v * 2.0,
    };
    let Some(&w1) = x.get(1) else {
        return s * t + m * e + g + h;
    };
    s * t + m * e + g + h + w1.cos()
}

/// The element a reduction finds bound by `let Some(..) = .. else` (leaving an empty
/// slice's function early), by `if let Some(..)` (a reference, `&v`, through `copied()`,
/// with and without `else`, of an empty chain too) and by a `match` with `Some` and
/// `None` arms.
#[autodiff_forward(optional_extremes_fwd, Dual, Dual)]
#[autodiff_reverse(optional_extremes_rev, Duplicated, Active)]
#[allow(clippy::manual_unwrap_or)] // (The `match` is part of the language under test.)
fn optional_extremes(x: &[f64]) -> f64 {
    let Some(top) = x.iter().copied().reduce(f64::max) else {
        return 0.0;
    };
    let mut s = top * x[0];
    if let Some(lo) = x.iter().min_by(|a, b| a.total_cmp(b)) {
        s += lo * lo;
    }
    if let Some(&hi) = x.iter().max_by(|a, b| a.total_cmp(b)) {
        s += hi.sin();
    }
    if let Some(z) = x[..0].iter().copied().reduce(|a, b| a + b) {
        s += z * 100.0;
    } else {
        s -= 1.0;
    }
    let t = match x.iter().map(|v| v * v).reduce(|a, b| a * 0.5 + b) {
        Some(r) => r,
        None => 0.25,
    };
    s + t
}

fn optional_extremes_o<D: Num>(x: &[D]) -> D {
    if x.is_empty() {
        return c(0.0);
    }
    let (mut top, mut lo, mut t) = (x[0], x[0], x[0] * x[0]);
    for k in 1..x.len() {
        if x[k].re() > top.re() {
            top = x[k];
        }
        if x[k].re() < lo.re() {
            lo = x[k];
        }
        t = t * 0.5 + x[k] * x[k];
    }
    top * x[0] + lo * lo + top.sin() - 1.0 + t
}

/// Two slices iterated as one (`a.chain(b)`, `b` also `&y[..k]`), followed by `map`,
/// `filter` and `copied`: in `for` loops (elements by reference and by value, a body
/// with `continue` and `return`) and in `sum`, `product` and `fold`, one part empty too,
/// and in the items of `vec![..]`.
#[autodiff_forward(chained_fwd, Dual, Dual)]
#[autodiff_reverse(chained_rev, Duplicated, Active)]
#[allow(clippy::useless_vec)] // (`vec!` is part of the language under test.)
fn chained(x: &[f64]) -> f64 {
    let h = x.len() / 2;
    let (a, b) = x.split_at(h);
    let mut s = a.iter().chain(b.iter()).map(|v| v.sin()).sum::<f64>();
    let p: f64 = a
        .iter()
        .copied()
        .chain(b[..0].iter().copied())
        .map(|v| 1.0 + 0.1 * v)
        .product();
    let f = b
        .iter()
        .chain(&a[..h.min(1)])
        .fold(0.25, |acc, v| acc * 0.5 + v * v);
    for &v in a.iter().chain(b.iter()).filter(|v| **v > 0.0) {
        s += v.exp() * 0.5;
    }
    for v in b.iter().chain(a.iter()) {
        s += v * p;
    }
    // `continue` goes on to the next element, `return` leaves the function.
    for v in b.iter().chain(a.iter()) {
        if *v < -1.0 {
            continue;
        }
        if *v > 1.15 {
            return s * 0.5 + v;
        }
        s += v * v * 0.25;
    }
    // In a `vec!` (whose items the lowering reads), and repeated.
    let parts = vec![a.iter().chain(b.iter()).map(|v| v * v).sum::<f64>(), 0.5];
    let row = vec![b.iter().chain(a.iter()).fold(0.0, |m, v| m * 0.5 + v); 2];
    s * p + f + parts[0] * parts[1] + row[1]
}

fn chained_o<D: Num>(x: &[D]) -> D {
    let h = x.len() / 2;
    let (a, b) = x.split_at(h);
    let mut s = x.iter().fold(c::<D>(-0.0), |s, v| s + v.sin());
    let p = a.iter().fold(c::<D>(1.0), |p, v| p * (*v * 0.1 + 1.0));
    let mut f = c::<D>(0.25);
    for v in b.iter().chain(&a[..h.min(1)]) {
        f = f * 0.5 + *v * *v;
    }
    for v in x {
        if v.re() > 0.0 {
            s += v.exp() * 0.5;
        }
    }
    for v in b.iter().chain(a) {
        s += *v * p;
    }
    for v in b.iter().chain(a) {
        if v.re() < -1.0 {
            continue;
        }
        if v.re() > 1.15 {
            return s * 0.5 + *v;
        }
        s += *v * *v * 0.25;
    }
    let squares = x.iter().fold(c::<D>(-0.0), |q, v| q + *v * *v);
    let mut m = c::<D>(0.0);
    for v in b.iter().chain(a) {
        m = m * 0.5 + *v;
    }
    s * p + f + squares * 0.5 + m
}

/// A `Vec` member of a struct read by position (`m.w.get(i)`, `first`, `last`).
#[differentiable]
struct Weights {
    w: Vec<f64>,
}

#[autodiff_reverse(member_positions_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(member_positions_fwd, Dual, Dual, Dual)]
fn member_positions(m: &Weights, x: &[f64]) -> f64 {
    let a = m.w.get(1).unwrap();
    let b = *m.w.first().unwrap();
    let c = m.w.last().copied().unwrap_or(0.5);
    let mut s = a * x[0] + b * c;
    if let Some(v) = m.w.get(2) {
        s += v.sin() * x[1];
    }
    if let Some(v) = m.w.get(m.w.len() + 1) {
        s += v * 1000.0;
    }
    s
}

fn member_positions_o<D: Num>(d: &[D]) -> D {
    // d = [w0, w1, w2, x0, x1]
    d[1] * d[3] + d[0] * d[2] + d[2].sin() * d[4]
}

#[test]
fn a_vec_member_read_by_position() {
    let (w, x) = (vec![0.7, -1.3, 0.4], [2.0, -0.5]);
    let all: Vec<f64> = w.iter().chain(&x).copied().collect();
    let (value, grad) = oracle_grad(member_positions_o, &all);
    let m = Weights { w: w.clone() };
    let mut dm = Weights { w: vec![0.0; 3] };
    let mut dx = [0.0; 2];
    let f = member_positions_rev(&m, &mut dm, &x, &mut dx, 1.0);
    check("value", f, value);
    let got: Vec<f64> = dm.w.iter().chain(&dx).copied().collect();
    check_all("gradient", &got, &grad);
    let tangent = Weights {
        w: vec![0.0, 1.0, 0.0],
    };
    let (f, df) = member_positions_fwd(&m, &tangent, &x, &[0.0, 1.0]);
    check("forward value", f, value);
    check("forward tangent", df, grad[1] + grad[4]);
}

fn optional_positions_o<D: Num>(x: &[D]) -> D {
    let mut s = x[0].sin();
    if x.len() > 1 {
        s += x[1] * x[1];
    }
    let t = x[x.len() - 1] * 3.0;
    let m = if x.len() > 2 { x[2].exp() } else { c(0.5) };
    let g = if x[0].re() > 0.0 {
        x[0] * x[0]
    } else {
        x[0] * -0.5
    };
    let w = if x.len() > 1 { x[1].cos() } else { c(0.0) };
    let h = if x.len() < 2 {
        c(0.25)
    } else if x[1].re() > 0.5 {
        x[1] * x[0]
    } else {
        x[1] * x[1] * 2.0
    };
    s * t + m * 2.0 + g + h + w
}

fn extremes_o<D: Num>(x: &[D]) -> D {
    let (mut top, mut lo, mut sq) = (x[0], x[0], (x[0] - 0.25) * (x[0] - 0.25));
    let mut damped = x[0].sin();
    for k in 1..x.len() {
        if x[k].re() > top.re() {
            top = x[k];
        }
        if x[k].re() < lo.re() {
            lo = x[k];
        }
        let s = (x[k] - 0.25) * (x[k] - 0.25);
        if s.re() >= sq.re() {
            sq = s;
        }
        damped = damped * 0.5 + x[k].sin();
    }
    let ends = x[x.len() - 1] * x[0];
    top * damped + top * lo + sq + ends + lo * 0.5
}

/// The element a search finds, read through `Option::map`: the argmin idiom
/// `enumerate().min_by(..).map(|(i, _)| i).unwrap()`, a typed closure parameter with
/// `unwrap_or`, a reduction with `unwrap_or_else` (found or not), `first` with
/// `map_or` (also in the items of a `vec!`), `last` with `expect`, `get` past the end, and
/// `position` (read by the lowering itself).
#[autodiff_forward(mapped_finds_fwd, Dual, Dual)]
#[autodiff_reverse(mapped_finds_rev, Duplicated, Active)]
#[allow(clippy::useless_vec)] // (`vec!` is part of the language under test.)
fn mapped_finds(x: &[f64]) -> f64 {
    let i = x
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
        .unwrap();
    let j = x
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(j, _): (usize, &f64)| j)
        .unwrap_or(0);
    let m = x
        .iter()
        .copied()
        .filter(|v| *v > 0.5)
        .reduce(f64::max)
        .map(|m| m * m)
        .unwrap_or_else(|| 0.25);
    let f = x.first().map_or(1.0, |v| v.sin());
    let l = x.last().map(|v| v * v).expect("at least one element");
    let g = x.get(4).map(|v| v.exp()).unwrap_or(0.5);
    let p = x
        .iter()
        .position(|v| *v > 0.0)
        .map(|k| x[k] * x[0])
        .unwrap_or(0.0);
    // In a `vec!` (whose items the lowering reads).
    let w = vec![x.first().map_or(0.0, |v| v * 3.0), 0.5];
    x[i] * x[j] + m + f * l + g + p + w[0] * w[1]
}

fn mapped_finds_o<D: Num>(x: &[D]) -> D {
    let re = |k: usize| x[k].re();
    let (mut i, mut j) = (0, 0);
    for k in 1..x.len() {
        if re(k) < re(i) {
            i = k;
        }
        if re(k) >= re(j) {
            j = k;
        }
    }
    let mut m: Option<D> = None;
    for v in x.iter().filter(|v| v.re() > 0.5) {
        if m.is_none_or(|m| v.re() > m.re()) {
            m = Some(*v);
        }
    }
    let m = m.map_or(c(0.25), |m| m * m);
    let l = x[x.len() - 1] * x[x.len() - 1];
    let g = if x.len() > 4 { x[4].exp() } else { c(0.5) };
    let p = (0..x.len())
        .find(|k| re(*k) > 0.0)
        .map_or(c(0.0), |k| x[k] * x[0]);
    x[i] * x[j] + m + x[0].sin() * l + g + p + x[0] * 1.5
}

/// `take_while` and `skip_while`: before `map` in `sum`s, over a range, after `copied`,
/// in `for` loops by reference and by value, and in the items of a `vec!`, with prefixes
/// of every length.
#[autodiff_forward(prefixes_fwd, Dual, Dual)]
#[autodiff_reverse(prefixes_rev, Duplicated, Active)]
#[allow(clippy::useless_vec)] // (`vec!` is part of the language under test.)
fn prefixes(x: &[f64]) -> f64 {
    let mut s: f64 = x.iter().take_while(|v| **v > -0.5).map(|v| v.sin()).sum();
    for v in x.iter().skip_while(|v| **v < 0.5) {
        s += v * v;
    }
    for &v in x.iter().take_while(|&&v| v < 1.0) {
        s = s * 0.5 + v;
    }
    let n = x.len();
    let t: f64 = (0..n)
        .take_while(|i| x[*i] > -1.0)
        .map(|i| x[i] * x[i])
        .sum();
    let u: f64 = x
        .iter()
        .copied()
        .skip_while(|v| *v > 0.0)
        .map(|v| v * 3.0)
        .sum();
    let parts = vec![x.iter().take_while(|v| **v > 0.0).sum::<f64>(), 2.0];
    s + t * u + parts[0] * parts[1]
}

fn prefixes_o<D: Num>(x: &[D]) -> D {
    let prefix = |p: &dyn Fn(f64) -> bool| x.iter().position(|v| !p(v.re())).unwrap_or(x.len());
    let mut s = x[..prefix(&|v| v > -0.5)]
        .iter()
        .fold(c::<D>(-0.0), |s, v| s + v.sin());
    for v in &x[prefix(&|v| v < 0.5)..] {
        s += *v * *v;
    }
    for v in &x[..prefix(&|v| v < 1.0)] {
        s = s * 0.5 + *v;
    }
    let t = x[..prefix(&|v| v > -1.0)]
        .iter()
        .fold(c::<D>(-0.0), |s, v| s + *v * *v);
    let u = x[prefix(&|v| v > 0.0)..]
        .iter()
        .fold(c::<D>(-0.0), |s, v| s + *v * 3.0);
    let part = x[..prefix(&|v| v > 0.0)]
        .iter()
        .fold(c::<D>(-0.0), |s, v| s + *v);
    s + t * u + part * 2.0
}

/// `next`, `nth` and `last` of iterator chains: of `iter`, after `map`, `rev`, `skip` and
/// `filter`, of `windows` and of a range, read by `copied().unwrap()`, `map_or`,
/// `unwrap_or` and `if let`, and in the items of a `vec!`.
#[autodiff_forward(chain_items_fwd, Dual, Dual)]
#[autodiff_reverse(chain_items_rev, Duplicated, Active)]
#[allow(
    clippy::useless_vec,
    clippy::iter_nth_zero,
    clippy::iter_next_slice,
    clippy::double_ended_iterator_last,
    clippy::iter_skip_next,
    clippy::filter_next,
    clippy::iter_nth,
    clippy::manual_next_back
)] // (the forms under test)
fn chain_items(x: &[f64]) -> f64 {
    let n = x.len();
    let first = x.iter().next().copied().unwrap();
    let second = x.iter().nth(1).map_or(0.5, |v| v * v);
    let last_sin = x.iter().map(|v| v.sin()).last().unwrap();
    let back = x.iter().rev().skip(1).nth(1).copied().unwrap_or(0.25);
    let big = if let Some(&b) = x.iter().filter(|v| **v > 0.0).next() {
        b.exp()
    } else {
        1.0
    };
    let step = x.windows(2).map(|w| w[1] - w[0]).last().unwrap_or(0.0);
    let k = (0..n).rev().next().unwrap();
    let parts = vec![x.iter().map(|v| v * 3.0).nth(0).unwrap(), 2.0];
    // The item of a reference chain read through `*v` in a condition.
    let sign = match x.iter().skip(1).nth(0) {
        Some(v) => {
            if (*v) >= 0.0 {
                1.0
            } else {
                -1.0
            }
        }
        None => 0.0,
    };
    first * second + last_sin + back * x[k] + big + step * step + parts[0] * parts[1] + sign * x[0]
}

fn chain_items_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let second = if n > 1 { x[1] * x[1] } else { c(0.5) };
    let back = if n > 2 { x[n - 3] } else { c(0.25) };
    let big = match x.iter().find(|v| v.re() > 0.0) {
        Some(b) => b.exp(),
        None => c(1.0),
    };
    let step = if n > 1 { x[n - 1] - x[n - 2] } else { c(0.0) };
    let sign = match x.get(1) {
        Some(v) if v.re() >= 0.0 => 1.0,
        Some(_) => -1.0,
        None => 0.0,
    };
    x[0] * second
        + x[n - 1].sin()
        + back * x[n - 1]
        + big
        + step * step
        + x[0] * 3.0 * 2.0
        + x[0] * sign
}

/// `find` of chains, read by `copied().unwrap_or`, `if let`, `match` and `map_or` (of
/// `iter`, after `map`, of a range, and of pairs of `enumerate` and `zip`), and `filter_map` of closures that choose between
/// `Some(e)` and `None` (with either arm first, or by `c.then(|| e)` and
/// `c.then_some(e)`), summed, collected, and read by a `for` loop over `windows`.
#[autodiff_forward(searches_fwd, Dual, Dual)]
#[autodiff_reverse(searches_rev, Duplicated, Active)]
#[allow(clippy::filter_map_bool_then)] // (the form under test)
fn searches(x: &[f64]) -> f64 {
    let big = x.iter().copied().find(|v| *v > 0.5).unwrap_or(0.25);
    let neg = if let Some(v) = x.iter().find(|v| **v < 0.0) {
        v * v
    } else {
        1.0
    };
    let sq = match x.iter().map(|v| v * v).find(|s| *s > 0.1) {
        Some(s) => s.sqrt(),
        None => 0.0,
    };
    let k = (1..x.len())
        .find(|i| x[*i] > -0.5)
        .map_or(0.0, |i| x[i] * i as f64);
    let at = x
        .iter()
        .enumerate()
        .find(|(_, v)| **v > 0.2)
        .map(|(i, _)| i)
        .unwrap_or(0);
    let rise = x
        .iter()
        .zip(x.iter().skip(1))
        .find(|(a, b)| a < b)
        .map_or(0.0, |(a, b)| a * b);
    let pos: f64 = x
        .iter()
        .filter_map(|v| if *v > 0.0 { Some(v.exp()) } else { None })
        .sum();
    let odd: f64 = x
        .iter()
        .enumerate()
        .filter_map(|(i, &v)| if i % 2 == 0 { None } else { Some(v * v) })
        .sum();
    let kept: Vec<f64> = x
        .iter()
        .filter_map(|&v| if v.abs() < 1.0 { Some(v.sin()) } else { None })
        .collect();
    let cubes: f64 = x.iter().filter_map(|v| (*v < 0.3).then(|| v * v * v)).sum();
    let halves: f64 = (0..x.len())
        .filter_map(|i| (i > 1).then_some(x[i] * 0.5))
        .sum();
    let mut rises = 0.0;
    for s in x
        .windows(2)
        .filter_map(|w| if w[0] < w[1] { Some(w[1] - w[0]) } else { None })
    {
        rises += s * s;
    }
    let lead: f64 = x
        .iter()
        .map_while(|v| if *v < 0.8 { Some(v * 2.0) } else { None })
        .sum();
    let warm: f64 = x
        .iter()
        .copied()
        .map_while(|v| (v > -0.6).then(|| v.exp()))
        .sum();
    big * big
        + lead
        + warm
        + neg
        + sq
        + k
        + x[at]
        + rise
        + pos
        + odd
        + kept.iter().sum::<f64>() * 0.5
        + rises
        + cubes
        + halves
}

fn searches_o<D: Num>(x: &[D]) -> D {
    let mut big = c(0.25);
    if let Some(v) = x.iter().position(|v| v.re() > 0.5) {
        big = x[v];
    }
    let neg = match x.iter().position(|v| v.re() < 0.0) {
        Some(i) => x[i] * x[i],
        None => c(1.0),
    };
    let sq = match x.iter().position(|v| v.re() * v.re() > 0.1) {
        Some(i) => (x[i] * x[i]).sqrt(),
        None => c(0.0),
    };
    let k = match (1..x.len()).find(|i| x[*i].re() > -0.5) {
        Some(i) => x[i] * i as f64,
        None => c(0.0),
    };
    let at = x.iter().position(|v| v.re() > 0.2).unwrap_or(0);
    let rise = match (1..x.len()).find(|i| x[i - 1].re() < x[*i].re()) {
        Some(i) => x[i - 1] * x[i],
        None => c(0.0),
    };
    let (mut pos, mut odd, mut kept, mut rises): (D, D, D, D) = (c(0.0), c(0.0), c(0.0), c(0.0));
    let (mut cubes, mut halves): (D, D) = (c(0.0), c(0.0));
    for (i, v) in x.iter().enumerate() {
        if v.re() > 0.0 {
            pos += v.exp();
        }
        if i % 2 == 1 {
            odd += *v * *v;
        }
        if v.re().abs() < 1.0 {
            kept += v.sin();
        }
        if v.re() < 0.3 {
            cubes += *v * *v * *v;
        }
        if i > 1 {
            halves += *v * 0.5;
        }
        if i > 0 && x[i - 1].re() < v.re() {
            rises += (*v - x[i - 1]) * (*v - x[i - 1]);
        }
    }
    let mut lead: D = c(0.0);
    for v in x.iter().take_while(|v| v.re() < 0.8) {
        lead += *v * 2.0;
    }
    let mut warm: D = c(0.0);
    for v in x.iter().take_while(|v| v.re() > -0.6) {
        warm += v.exp();
    }
    big * big
        + lead
        + warm
        + neg
        + sq
        + k
        + x[at]
        + rise
        + pos
        + odd
        + kept * 0.5
        + rises
        + cubes
        + halves
}

/// Elements bound by `&mut` through `last_mut`, `first_mut` and `get_mut` in `if let`
/// (nested, of two buffers) and in a `match` with a `None` arm, written through `*v`.
#[autodiff_forward(mutable_elements_fwd, Dual, Dual)]
#[autodiff_reverse(mutable_elements_rev, Duplicated, Active)]
fn mutable_elements(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    let mut w = [1.0; 3];
    if let Some(l) = v.last_mut() {
        *l *= 2.0;
        if let Some(b) = w.get_mut(1) {
            *b += *l * x[0];
        }
        *l += w[1];
    }
    if let Some(f) = v.first_mut() {
        *f = f.sin() + 1.0;
    }
    match v.get_mut(4) {
        Some(m) => *m -= x[0] * x[0],
        None => v[0] *= 3.0,
    }
    v.iter().map(|a| a * a).sum::<f64>() + w[1]
}

fn mutable_elements_o<D: Num>(x: &[D]) -> D {
    let mut v = x.to_vec();
    let n = v.len();
    v[n - 1] *= 2.0;
    let w1 = c::<D>(1.0) + v[n - 1] * x[0];
    v[n - 1] += w1;
    v[0] = v[0].sin() + 1.0;
    if n > 4 {
        v[4] -= x[0] * x[0];
    } else {
        v[0] *= 3.0;
    }
    v.iter().fold(c::<D>(0.0), |s, a| s + *a * *a) + w1
}

/// Iterators held in variables: the first item taken by `next`, then the rest read by a
/// `for` loop (the running maximum); items taken by `next` and `nth` of a mapped chain,
/// then the rest read by `while let Some(v) = it.next()`; a range's first index, then
/// the rest summed; the first item of a filter; a reversed chain summed.
#[autodiff_forward(iterator_variables_fwd, Dual, Dual)]
#[autodiff_reverse(iterator_variables_rev, Duplicated, Active)]
#[allow(clippy::while_let_on_iterator, clippy::filter_next)] // (the forms under test)
fn iterator_variables(x: &[f64]) -> f64 {
    let mut it = x.iter();
    let first = *it.next().unwrap();
    let mut top = first;
    for &v in it {
        top = top.max(v);
    }
    let mut squares = x.iter().map(|v| v * v);
    let a = squares.next().unwrap();
    let b = squares.nth(1).unwrap_or(0.5);
    let mut s = a * b;
    while let Some(q) = squares.next() {
        if q > 2.0 {
            break;
        }
        s += q.sin();
    }
    let mut r = 0..x.len();
    let i0 = r.next().unwrap();
    let rest: f64 = r.map(|i| x[i] * x[i0]).sum();
    let mut positive = x.iter().filter(|v| **v > 0.0);
    let p = positive.next().map_or(0.25, |v| v * 3.0);
    let backwards = x.iter().rev().step_by(2);
    let t: f64 = backwards.sum();
    // A chain whose closure reads the buffer through `last()` (which writes nothing).
    let mut scaled = x.iter().map(|v| v * *x.last().unwrap());
    let u0 = scaled.next().unwrap_or(0.25);
    let u = u0 + scaled.sum::<f64>();
    top + s + rest + p + t.cos() + u
}

fn iterator_variables_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let top = x
        .iter()
        .skip(1)
        .fold(x[0], |m, &v| if v.re() > m.re() { v } else { m });
    let b = if n > 2 { x[2] * x[2] } else { c(0.5) };
    let mut s = x[0] * x[0] * b;
    for v in x.iter().skip(3) {
        let q = *v * *v;
        if q.re() > 2.0 {
            break;
        }
        s += q.sin();
    }
    let rest = x.iter().skip(1).fold(c::<D>(0.0), |r, &v| r + v * x[0]);
    let p = match x.iter().find(|v| v.re() > 0.0) {
        Some(&v) => v * 3.0,
        None => c(0.25),
    };
    let t = x.iter().rev().step_by(2).fold(c::<D>(0.0), |t, &v| t + v);
    let u = x.iter().fold(c::<D>(0.0), |u, &v| u + v * x[n - 1]);
    top + s + rest + p + t.cos() + u
}

/// `scan` that always goes on: a running sum collected into a `Vec` (typed by the `let`),
/// a running product of a map read by a `for` loop with `continue`, a sum (typed by the
/// turbofish) of running maxima with typed parameters, and a scan inside another's
/// closure that reads the outer state.
#[autodiff_forward(scans_fwd, Dual, Dual)]
#[autodiff_reverse(scans_rev, Duplicated, Active)]
fn scans(x: &[f64]) -> f64 {
    let running: Vec<f64> = x
        .iter()
        .scan(0.0, |acc, &v| {
            *acc += v;
            Some(*acc)
        })
        .collect();
    let mut s = 0.0;
    for p in x.iter().map(|v| v.sin()).scan(1.0, |prod, v| {
        *prod *= 1.0 + 0.5 * v;
        Some(*prod * 2.0)
    }) {
        if p < 0.5 {
            continue;
        }
        s += p;
    }
    let top = x
        .iter()
        .scan(f64::NEG_INFINITY, |best: &mut f64, v: &f64| {
            *best = best.max(*v);
            Some(*best)
        })
        .sum::<f64>();
    // A scan inside another's closure, reading the outer state.
    let nested = x
        .iter()
        .scan(0.5, |outer, &v| {
            let inner = x
                .iter()
                .scan(0.0, |acc, &w| {
                    *acc += w * *outer;
                    Some(*acc)
                })
                .sum::<f64>();
            *outer += v * 0.1;
            Some(inner)
        })
        .sum::<f64>();
    running.iter().map(|r| r * r).sum::<f64>() + s + top + nested
}

fn scans_o<D: Num>(x: &[D]) -> D {
    let mut acc = c::<D>(0.0);
    let mut total = c::<D>(0.0);
    for v in x {
        acc += *v;
        total += acc * acc;
    }
    let mut prod = c::<D>(1.0);
    for v in x {
        prod *= v.sin() * 0.5 + 1.0;
        if (prod * 2.0).re() >= 0.5 {
            total += prod * 2.0;
        }
    }
    let mut best = x[0];
    for v in x {
        if v.re() > best.re() {
            best = *v;
        }
        total += best;
    }
    let mut outer = c::<D>(0.5);
    for v in x {
        let mut acc = c::<D>(0.0);
        for w in x {
            acc += *w * outer;
            total += acc;
        }
        outer += *v * 0.1;
    }
    total
}

/// The parts of a slice flattened again: `flat_map` (a typed parameter, a block body,
/// `skip` inside, `filter` after) and `flatten` of `chunks` and `windows`, in `for` loops
/// (one with `continue`), in `sum` (typed by turbofish and by `let`), `product` and
/// `fold`, and in the items of a `vec!`.
#[autodiff_forward(flattened_fwd, Dual, Dual)]
#[autodiff_reverse(flattened_rev, Duplicated, Active)]
#[allow(clippy::useless_vec)] // (`vec!` is part of the language under test.)
fn flattened(x: &[f64]) -> f64 {
    let mut t = x
        .chunks(3)
        .flat_map(|r| r.iter())
        .fold(0.0, |s, v| s * 0.5 + v * v);
    for v in x.windows(2).flatten() {
        t += v.sin();
    }
    for &v in x
        .chunks(2)
        .flat_map(|r: &[f64]| r.iter().skip(1))
        .filter(|v| **v > 0.0)
    {
        if v > 1.0 {
            continue;
        }
        t += v.exp();
    }
    let s: f64 = x.chunks(4).flatten().map(|v| v * v).sum();
    let p = x
        .chunks(3)
        .flat_map(|r| r.iter().copied())
        .map(|v| 1.0 + 0.1 * v)
        .product::<f64>();
    let q = x.chunks(2).flat_map(|r| r.iter()).sum::<f64>();
    let row = vec![x.chunks(2).flatten().map(|v| v * v * v).sum::<f64>(); 2];
    // A sum of rows inside the closure of another, both rows named `r`; a loop body that
    // names an outer `r`.
    let nested = x
        .chunks(2)
        .flat_map(|r| r.iter())
        .map(|v| {
            v * x
                .chunks(3)
                .flat_map(|r| r.iter())
                .map(|w| w - 1.0)
                .sum::<f64>()
        })
        .sum::<f64>();
    let r = x[0];
    for v in x.chunks(3).flat_map(|r| r.iter()) {
        t += 0.1 * v * r;
    }
    t + s * p + q + row[1] + 0.1 * nested
}

fn flattened_o<D: Num>(x: &[D]) -> D {
    let mut t = x.iter().fold(c::<D>(0.0), |s, v| s * 0.5 + *v * *v);
    for w in x.windows(2) {
        t += w[0].sin() + w[1].sin();
    }
    for r in x.chunks(2) {
        if let Some(v) = r.get(1)
            && v.re() > 0.0
            && v.re() <= 1.0
        {
            t += v.exp();
        }
    }
    let s = x.iter().fold(c::<D>(0.0), |s, v| s + *v * *v);
    let p = x.iter().fold(c::<D>(1.0), |p, v| p * (*v * 0.1 + 1.0));
    let q = x.iter().fold(c::<D>(0.0), |s, v| s + *v);
    let cubes = x.iter().fold(c::<D>(0.0), |s, v| s + *v * *v * *v);
    let nested = q * (q - x.len() as f64);
    t += q * x[0] * 0.1;
    t + s * p + q + cubes + nested * 0.1
}

/// The rows of a buffer parameter flattened: `m.iter().flatten()` in a `for` loop and a
/// `sum`, `flat_map` with `map` in a `fold` (and `squared_rows` below).
#[autodiff_forward(flattened_rows_fwd, Dual, Dual)]
#[autodiff_reverse(flattened_rows_rev, Duplicated, Active)]
fn flattened_rows(m: &[Vec<f64>]) -> f64 {
    let mut t = 0.0;
    for v in m.iter().flatten() {
        t = t * 0.75 + v.cos();
    }
    let s: f64 = m.iter().flatten().map(|v| v * v).sum();
    let f = m
        .iter()
        .flat_map(|r| r.iter().map(|v| v * 2.0))
        .fold(1.0, |a, v| a * 0.5 + v);
    t * s + f
}

/// `Σ v²` over the rows flattened, the sum typed by the function's result.
#[autodiff_forward(squared_rows_fwd, Dual, Dual)]
#[autodiff_reverse(squared_rows_rev, Duplicated, Active)]
fn squared_rows(m: &[Vec<f64>]) -> f64 {
    m.iter().flatten().map(|v| v * v).sum()
}

fn flattened_rows_o<D: Num>(x: &[D]) -> D {
    let mut t = c::<D>(0.0);
    for v in x {
        t = t * 0.75 + v.cos();
    }
    let s = x.iter().fold(c::<D>(0.0), |s, v| s + *v * *v);
    let f = x.iter().fold(c::<D>(1.0), |a, v| a * 0.5 + *v * 2.0);
    t * s + f
}

fn case(min: usize) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>, f64)> {
    slice_seed_case(-1.2, 1.2, min..10)
}

/// A local output written chunk by chunk (`chunks_mut`) beside the input's chunks.
#[autodiff_forward(rotated_fwd, Dual, Dual)]
#[autodiff_reverse(rotated_rev, Duplicated, Active)]
fn rotated(x: &[f64]) -> f64 {
    let (s, c) = x[0].sin_cos();
    let mut out = vec![0.0; x.len()];
    for (o, p) in out.chunks_mut(2).zip(x.chunks(2)) {
        let last = p.len() - 1;
        o[0] = c * p[0] - s * p[last];
        o[last] = s * p[0] + c * p[last] + o[0];
    }
    out.iter().map(|v| v * v * 0.5 + v).sum()
}

fn rotated_o<D: Num>(x: &[D]) -> D {
    let (sn, cs) = (x[0].sin(), x[0].cos());
    let n = x.len();
    let mut out = vec![c::<D>(0.0); n];
    for start in (0..n).step_by(2) {
        let last = start + (n - start).min(2) - 1;
        out[start] = cs * x[start] - sn * x[last];
        out[last] = sn * x[start] + cs * x[last] + out[start];
    }
    out.iter().fold(c::<D>(0.0), |a, v| a + *v * *v * 0.5 + *v)
}

/// Chunks of a local copy scaled in place by their last element, read through the
/// chunk's own length (`c[c.len() - 1]`).
#[autodiff_forward(scaled_chunks_fwd, Dual, Dual)]
#[autodiff_reverse(scaled_chunks_rev, Duplicated, Active)]
fn scaled_chunks(x: &[f64]) -> f64 {
    let mut out = x.to_vec();
    for c in out.chunks_mut(3) {
        let last = c[c.len() - 1];
        c[0] *= last;
        if !c.is_empty() {
            c[c.len() - 1] += 0.5 * c[0];
        }
    }
    out.iter().map(|v| v * v).sum()
}

fn scaled_chunks_o<D: Num>(x: &[D]) -> D {
    let mut out = x.to_vec();
    for start in (0..x.len()).step_by(3) {
        let last = start + (x.len() - start).min(3) - 1;
        let l = out[last];
        out[start] *= l;
        let half = out[start] * 0.5;
        out[last] += half;
    }
    out.iter().fold(c::<D>(0.0), |a, v| a + *v * *v)
}

/// Folds with a tuple accumulator: a sum and a sum of squares, and a recurrence that
/// reads the first fold's result.
#[autodiff_forward(tuple_folds_fwd, Dual, Dual)]
#[autodiff_reverse(tuple_folds_rev, Duplicated, Active)]
fn tuple_folds(x: &[f64]) -> f64 {
    let (s, q) = x.iter().fold((0.0, 0.0), |(s, q), &v| (s + v, q + v * v));
    let (a, b) = x
        .iter()
        .fold((1.0, x[0]), |(a, b), v| (a * v + b, b.sin() * q));
    s * q + a * b
}

fn tuple_folds_o<D: Num>(x: &[D]) -> D {
    let (mut s, mut q) = (c::<D>(0.0), c::<D>(0.0));
    for &v in x {
        s += v;
        q += v * v;
    }
    let (mut a, mut b) = (c::<D>(1.0), x[0]);
    for &v in x {
        let next = (a * v + b, b.sin() * q);
        (a, b) = next;
    }
    s * q + a * b
}

/// Iterators bound with `let` and consumed later: by `sum`, by a `for` loop, and by more
/// adapters and a `fold`.
#[autodiff_forward(bound_iterators_fwd, Dual, Dual)]
#[autodiff_reverse(bound_iterators_rev, Duplicated, Active)]
fn bound_iterators(x: &[f64]) -> f64 {
    let k = x[0] * 2.0;
    let scaled = x.iter().map(|v| v * k);
    let s: f64 = scaled.sum();
    let pairs = x.iter().zip(x.iter().skip(1));
    let mut t = 0.0;
    for (a, b) in pairs {
        t += a * b;
    }
    let values = x.iter().copied();
    let m = values.map(|v| v.sin()).fold(0.0, |acc, v| acc + v * s);
    s * t + m
}

fn bound_iterators_o<D: Num>(x: &[D]) -> D {
    let k = x[0] * 2.0;
    let s = x.iter().fold(c::<D>(0.0), |acc, v| acc + *v * k);
    let t = x.windows(2).fold(c::<D>(0.0), |acc, w| acc + w[0] * w[1]);
    let m = x.iter().fold(c::<D>(0.0), |acc, v| acc + v.sin() * s);
    s * t + m
}

const COEFFS: [f64; 4] = [0.5, -1.0, 0.25, 2.0];
static NODES: [f64; 3] = [-0.774_596_669_241_483_4, 0.0, 0.774_596_669_241_483_4];
static WEIGHTS: [f64; 3] = [5.0 / 9.0, 8.0 / 9.0, 5.0 / 9.0];

/// `const` and `static` arrays (and a local copy of one) iterated, zipped, enumerated and
/// folded in reverse (a polynomial by Horner's rule, Gauss-Legendre quadrature of
/// `∫ sin(a t + b) t² dt`).
#[autodiff_forward(constant_tables_fwd, Dual, Dual)]
#[autodiff_reverse(constant_tables_rev, Duplicated, Active)]
fn constant_tables(x: &[f64]) -> f64 {
    let t = x[0];
    let p = COEFFS.iter().rev().fold(0.0, |acc, &c| acc * t + c);
    let q: f64 = x.iter().zip(COEFFS.iter()).map(|(a, w)| w * a * a).sum();
    let local = COEFFS;
    let q = q + x.iter().zip(local.iter()).map(|(a, w)| w * a).sum::<f64>();
    let mut integral = 0.0;
    for (node, w) in NODES.iter().zip(&WEIGHTS) {
        integral += w * (x[1] * node + t).sin() * node * node;
    }
    let mut r = 0.0;
    for (i, c) in COEFFS.iter().enumerate() {
        r += c * x[i % x.len()];
    }
    for c in COEFFS {
        r = r * 0.5 + c * t;
    }
    for (w, c) in COEFFS.windows(2).zip(COEFFS.chunks(2)) {
        r += (w[1] - w[0]) * x[1] * c[0];
    }
    p + q + integral * r
}

fn constant_tables_o<D: Num>(x: &[D]) -> D {
    let t = x[0];
    let mut p = c::<D>(0.0);
    for k in (0..4).rev() {
        p = p * t + COEFFS[k];
    }
    let mut q = c::<D>(0.0);
    for i in 0..x.len().min(4) {
        q += x[i] * x[i] * COEFFS[i] + x[i] * COEFFS[i];
    }
    let mut integral = c::<D>(0.0);
    for k in 0..3 {
        integral += (x[1] * NODES[k] + t).sin() * (WEIGHTS[k] * NODES[k] * NODES[k]);
    }
    let mut r = c::<D>(0.0);
    for i in 0..4 {
        r += x[i % x.len()] * COEFFS[i];
    }
    for k in 0..4 {
        r = r * 0.5 + t * COEFFS[k];
    }
    for k in 0..2 {
        r += x[1] * ((COEFFS[k + 1] - COEFFS[k]) * COEFFS[2 * k]);
    }
    p + q + integral * r
}

/// A constant buffer of indices (`idx: &[usize]`, `Const`) zipped with values, on either
/// side of the `zip`, enumerated, and `copied`/`cloned`, moved (`skip`, `rev`) and sliced
/// (`&idx[1..]`): a sparse gather.
#[autodiff_forward(gathered_fwd, Dual, Const, Dual)]
#[autodiff_reverse(gathered_rev, Duplicated, Const, Active)]
fn gathered(x: &[f64], idx: &[usize]) -> f64 {
    let mut s: f64 = x.iter().zip(idx.iter()).map(|(v, &i)| v * x[i]).sum();
    for (k, &i) in idx.iter().enumerate() {
        s += (k as f64 + 1.0) * x[i].sin();
    }
    for (&i, w) in idx.iter().zip(x.iter().skip(1)) {
        s += w * w * x[i];
    }
    for (i, w) in idx.iter().copied().zip(x.iter()) {
        s += w * x[i].cos();
    }
    for &i in idx.iter().skip(1) {
        s += x[i] * 0.5;
    }
    for (k, &i) in idx.iter().rev().enumerate() {
        s += x[i] * x[i] * k as f64;
    }
    for &i in &idx[1..] {
        s += x[i].exp() * 0.25;
    }
    s + idx.iter().cloned().map(|i| x[i] * x[i]).sum::<f64>()
}

fn gathered_o<D: Num>(x: &[D], idx: &[usize]) -> D {
    let mut s = c::<D>(0.0);
    for k in 0..x.len().min(idx.len()) {
        s += x[k] * x[idx[k]];
    }
    for k in 0..idx.len() {
        s += x[idx[k]].sin() * (k as f64 + 1.0);
    }
    for k in 0..idx.len().min(x.len() - 1) {
        s += x[k + 1] * x[k + 1] * x[idx[k]];
    }
    for k in 0..idx.len().min(x.len()) {
        s += x[k] * x[idx[k]].cos();
    }
    for &i in idx {
        s += x[i] * x[i];
    }
    let n = idx.len();
    for k in 1..n {
        s += x[idx[k]] * 0.5 + x[idx[k]].exp() * 0.25;
    }
    for k in 0..n {
        s += x[idx[n - 1 - k]] * x[idx[n - 1 - k]] * k as f64;
    }
    s
}

/// The gradient of [`gathered`], whose forward companion is H·v.
#[autodiff_forward(gathered_hvp, Dual, Const, Dual)]
fn gathered_grad(x: &[f64], idx: &[usize], g: &mut [f64]) {
    g.fill(0.0);
    gathered_rev(x, g, idx, 1.0);
}

/// Ranges read by position: zipped on either side of a slice's chain (bounded, unbounded,
/// reversed, inclusive, of another integer type) and enumerated.
#[autodiff_forward(counted_fwd, Dual, Dual)]
#[autodiff_reverse(counted_rev, Duplicated, Active)]
fn counted(x: &[f64]) -> f64 {
    let mut s = x
        .iter()
        .zip((0..3).rev())
        .map(|(a, k)| a * k as f64)
        .sum::<f64>();
    s += (1..)
        .zip(x.iter())
        .map(|(i, v)| v.sin() * i as f64)
        .sum::<f64>();
    for (v, i) in x.iter().zip(0u32..) {
        s += v * v * f64::from(i);
    }
    for (i, w) in (2..=4).zip(x.windows(2)) {
        s += (w[1] - w[0]) * w[0] * i as f64;
    }
    for (p, i) in (0..x.len()).rev().enumerate() {
        s += x[i] * x[i] * p as f64;
    }
    s
}

fn counted_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for k in 0..x.len().min(3) {
        s += x[k] * (2 - k) as f64;
    }
    for k in 0..x.len() {
        s += x[k].sin() * (k + 1) as f64;
        s += x[k] * x[k] * k as f64;
    }
    for k in 0..x.len().saturating_sub(1).min(3) {
        s += (x[k + 1] - x[k]) * x[k] * (k + 2) as f64;
    }
    let n = x.len();
    for p in 0..n {
        let i = n - 1 - p;
        s += x[i] * x[i] * p as f64;
    }
    s
}

/// A permutation of `0..n` that moves every index when `n > 1`.
fn scattered(n: usize) -> Vec<usize> {
    (0..n).map(|i| (3 * i + 1) % n).collect()
}

/// `(a - m)²`.
#[differentiable]
fn sq_from(a: f64, m: f64) -> f64 {
    (a - m) * (a - m)
}

/// Local arrays and vectors iterated by value (`for z in zs`): each element is a value,
/// passed to a callee as one, and the loop runs over a copy of an array that its body
/// writes.
#[autodiff_forward(by_value_fwd, Dual, Dual)]
#[autodiff_reverse(by_value_rev, Duplicated, Active)]
fn by_value(x: &[f64]) -> f64 {
    let table = [1.2, 0.4, -0.3];
    let mut s = 0.0;
    for t in table {
        s += sq_from(t, x[0]);
    }
    let z = [x[0], 2.0 * x[1], 0.3];
    for zi in z {
        s += sq_from(zi, x[1]) * zi;
    }
    let v = z.to_vec();
    for vi in v.into_iter() {
        s += sq_from(vi, 0.5);
    }
    s += z.into_iter().map(|a| sq_from(a, 0.25)).sum::<f64>();
    s += table.into_iter().map(|t| sq_from(t, x[1])).sum::<f64>();
    let mut w = [x[0], x[1]];
    for wi in w {
        w[1] = 10.0 * wi;
        s += wi * w[1];
    }
    let copied = z.to_vec();
    for (i, a) in copied.clone().into_iter().enumerate() {
        s += sq_from(a, x[i % 2]) + 0.0 * copied[i];
    }
    // A call's vector, and the rows of local matrices (the second written while its
    // rows are iterated).
    let h = halves(x);
    for a in h {
        s += sq_from(a, 0.1);
    }
    let m = [[x[0], x[1]], [x[1], x[0] * x[1]]];
    for row in m {
        s += row[0] * row[1];
    }
    let mut n = [[x[0], 1.0], [x[1], 0.5]];
    for [a, b] in n {
        n[1][0] = a * 3.0;
        s += a * b + n[1][0];
    }
    // A row copied into a `mut` pattern and written: the copy changes, not `m`.
    for mut row in m {
        row[0] = 2.0 * row[1];
        s += row[0] * row[1];
    }
    // A matrix's rows by value while the loop writes the matrix, and a copy's rows.
    let mut q = [[x[0], x[1]], [x[1], 2.0]];
    for row in q {
        q[1][0] = row[0] * 0.5;
        s += row[0] * q[1][0];
    }
    let copy = q;
    for mut row in copy {
        row[1] *= 3.0;
        s += row[1];
    }
    for mut row in copy.iter().copied() {
        row[0] *= row[1];
        s += row[0];
    }
    // A struct's array member, written while it is iterated.
    let mut pair = Pair { a: [x[0], x[1]] };
    for z in pair.a {
        pair.a[1] = z * 0.5;
        s += z * pair.a[1];
    }
    s + w[0] * w[1] + m[0][0]
}

/// Two floats in a struct.
#[differentiable]
#[derive(Clone)]
struct Pair {
    a: [f64; 2],
}

/// Each element halved.
#[differentiable]
fn halves(x: &[f64]) -> Vec<f64> {
    x.iter().map(|a| 0.5 * a).collect()
}

fn by_value_o<D: Num>(x: &[D]) -> D {
    let sq = |a: D, m: D| (a - m) * (a - m);
    let mut s: D = c(0.0);
    for t in [1.2, 0.4, -0.3] {
        s += sq(c(t), x[0]);
    }
    let z = [x[0], x[1] * 2.0, c(0.3)];
    for zi in z {
        s += sq(zi, x[1]) * zi;
    }
    for vi in z {
        s += sq(vi, c(0.5));
    }
    for a in z {
        s += sq(a, c(0.25));
    }
    for t in [1.2, 0.4, -0.3] {
        s += sq(c(t), x[1]);
    }
    let mut w = [x[0], x[1]];
    let original = w;
    for wi in original {
        w[1] = wi * 10.0;
        s += wi * w[1];
    }
    for (i, a) in z.into_iter().enumerate() {
        s += sq(a, x[i % 2]);
    }
    for a in x {
        s += sq(*a * 0.5, c(0.1));
    }
    s += x[0] * x[1] + x[1] * x[0] * x[1];
    let mut n = [[x[0], c(1.0)], [x[1], c(0.5)]];
    for [a, b] in [[x[0], c(1.0)], [x[1], c(0.5)]] {
        n[1][0] = a * 3.0;
        s += a * b + n[1][0];
    }
    for row in [[x[0], x[1]], [x[1], x[0] * x[1]]] {
        s += row[1] * 2.0 * row[1];
    }
    // q's rows: [x0, x1] then [x1, 2] (iterated over a copy); q[1][0] ends as x1 / 2.
    s += x[0] * (x[0] * 0.5) + x[1] * (x[1] * 0.5);
    s += x[1] * 3.0 + c::<D>(2.0) * 3.0;
    s += x[0] * x[1] + x[1] * 0.5 * 2.0;
    let mut a = [x[0], x[1]];
    for z in [x[0], x[1]] {
        a[1] = z * 0.5;
        s += z * a[1];
    }
    s + w[0] * w[1] + x[0]
}

/// A named closure over an active value, passed by reference (`map(&g)`), and by value,
/// and called afterwards.
#[autodiff_forward(closure_by_ref_fwd, Dual, Dual)]
#[autodiff_reverse(closure_by_ref_rev, Duplicated, Active)]
fn closure_by_ref(x: &[f64]) -> f64 {
    let a = x[0];
    let g = |v: f64| (v * a).sin();
    x.iter().copied().map(&g).sum::<f64>()
        + x.iter().map(|v| v * v).map(g).sum::<f64>()
        + g(x[x.len() - 1])
}

fn closure_by_ref_o<D: Num>(x: &[D]) -> D {
    let g = |v: D| (v * x[0]).sin();
    let mut s = g(x[x.len() - 1]);
    for v in x {
        s += g(*v) + g(*v * *v);
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn closures_passed_by_reference((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice("closure_by_ref", (&x, &v, &s0, s), closure_by_ref, closure_by_ref_fwd, closure_by_ref_rev, closure_by_ref_o::<Dual64>);
        check_hvp_of::<closure_by_ref_rev>(&x, &v, closure_by_ref_o);
    }

    #[test]
    fn iterators_bound_before_they_are_consumed((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice("bound_iterators", (&x, &v, &s0, s), bound_iterators, bound_iterators_fwd, bound_iterators_rev, bound_iterators_o::<Dual64>);
        check_hvp_of::<bound_iterators_rev>(&x, &v, bound_iterators_o);
    }

    #[test]
    fn locals_iterated_by_value((x, v, s0) in slice_case(-1.0, 1.0, 2..5, 0), s in seed()) {
        check_slice("by_value", (&x, &v, &s0, s), by_value, by_value_fwd, by_value_rev, by_value_o::<Dual64>);
        check_hvp_of::<by_value_rev>(&x, &v, by_value_o);
    }

    #[test]
    fn const_and_static_arrays((x, v, s0) in slice_case(-1.0, 1.0, 2..6, 0), s in seed()) {
        check_slice("constant_tables", (&x, &v, &s0, s), constant_tables, constant_tables_fwd, constant_tables_rev, constant_tables_o::<Dual64>);
        check_hvp_of::<constant_tables_rev>(&x, &v, constant_tables_o);
    }

    #[test]
    fn constant_indices_zipped_and_enumerated((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        let idx = scattered(x.len());
        check_slice(
            "gathered",
            (&x, &v, &s0, s),
            |x| gathered(x, &idx),
            |x, dx| gathered_fwd(x, dx, &idx),
            |x, dx, seed| gathered_rev(x, dx, &idx, seed),
            |d| gathered_o(d, &idx),
        );
        let (mut g, mut hv) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        gathered_hvp(&x, &v, &idx, &mut g, &mut hv);
        check_hvp(&hv, &x, &v, |d: &[num_dual::HyperDual64]| gathered_o(d, &idx));
    }

    #[test]
    fn ranges_zipped_and_enumerated((x, v, s0) in slice_case(-1.0, 1.0, 1..7, 0), s in seed()) {
        check_slice("counted", (&x, &v, &s0, s), counted, counted_fwd, counted_rev, counted_o::<Dual64>);
        check_hvp_of::<counted_rev>(&x, &v, counted_o);
    }

    #[test]
    fn horner_as_a_reversed_fold(
        cs in prop::collection::vec(-2.0..2.0f64, 1..8),
        x in -1.5..1.5f64,
        dx in dir(),
        s in seed(),
    ) {
        // d/dx p(x) = Σ k c_k x^(k-1); d/dc_k = x^k.
        let dp: f64 = (1..cs.len()).map(|k| k as f64 * cs[k] * x.powi(k as i32 - 1)).sum();
        let mut gc = vec![0.0; cs.len()];
        let (p, gx) = horner_rev(&cs, &mut gc, x, s);
        let p_want: f64 = (0..cs.len()).map(|k| cs[k] * x.powi(k as i32)).sum();
        check("horner primal", p, p_want);
        check("horner d/dx", gx, s * dp);
        for (k, g) in gc.iter().enumerate() {
            check("horner d/dc", *g, s * x.powi(k as i32));
        }
        let zeros = vec![0.0; cs.len()];
        check("horner tangent", horner_fwd(&cs, &zeros, x, dx).1, dx * dp);
        // At `f32` too.
        let c32: Vec<f32> = cs.iter().map(|&v| v as f32).collect();
        let mut g32 = vec![0.0f32; cs.len()];
        let (_, gx32) = horner_rev(&c32, &mut g32, x as f32, 1.0);
        check_tol("horner d/dx at f32", gx32 as f64, dp, 1e-4);
    }

    #[test]
    fn rosenbrock_over_windows((x, v, s0, seed) in case(2)) {
        check_slice(
            "rosen_windows",
            (&x, &v, &s0, seed),
            rosen_windows,
            rosen_windows_fwd,
            rosen_windows_rev,
            rosen_o,
        );
    }

    #[test]
    fn folds_with_tuple_accumulators((x, v, s0, seed) in case(1)) {
        check_slice("tuple_folds", (&x, &v, &s0, seed), tuple_folds, tuple_folds_fwd, tuple_folds_rev, tuple_folds_o);
        let hv = autodiff_core::hvp::<tuple_folds_rev>(&x, &v);
        check_hvp(&hv, &x, &v, tuple_folds_o);
    }

    #[test]
    fn chunks_written_in_place((x, v, s0, seed) in case(1)) {
        check_slice("rotated", (&x, &v, &s0, seed), rotated, rotated_fwd, rotated_rev, rotated_o);
        check_slice("scaled_chunks", (&x, &v, &s0, seed), scaled_chunks, scaled_chunks_fwd, scaled_chunks_rev, scaled_chunks_o);
    }

    #[test]
    fn skip_take_step_by_rev_and_windows((x, v, s0, seed) in case(1)) {
        check_slice("moved", (&x, &v, &s0, seed), moved, moved_fwd, moved_rev, moved_o);
    }

    #[test]
    fn filter_on_slices_and_ranges((x, v, s0, seed) in case(0)) {
        check_slice("filtered", (&x, &v, &s0, seed), filtered, filtered_fwd, filtered_rev, filtered_o);
    }

    #[test]
    fn elements_found_by_reductions((x, v, s0, seed) in case(1)) {
        check_slice("extremes", (&x, &v, &s0, seed), extremes, extremes_fwd, extremes_rev, extremes_o);
    }

    #[test]
    fn elements_found_by_reductions_bound_by_patterns((x, v, s0, seed) in case(0)) {
        check_slice(
            "optional_extremes",
            (&x, &v, &s0, seed),
            optional_extremes,
            optional_extremes_fwd,
            optional_extremes_rev,
            optional_extremes_o,
        );
        if !x.is_empty() {
            check_hvp_of::<optional_extremes_rev>(&x, &v, optional_extremes_o);
        }
    }

    #[test]
    fn two_slices_chained((x, v, s0, seed) in case(2)) {
        check_slice("chained", (&x, &v, &s0, seed), chained, chained_fwd, chained_rev, chained_o);
        check_hvp_of::<chained_rev>(&x, &v, chained_o);
    }

    #[test]
    fn found_elements_read_through_option_maps((x, v, s0, seed) in case(1)) {
        check_slice("mapped_finds", (&x, &v, &s0, seed), mapped_finds, mapped_finds_fwd, mapped_finds_rev, mapped_finds_o);
        check_hvp_of::<mapped_finds_rev>(&x, &v, mapped_finds_o);
    }

    #[test]
    fn prefixes_taken_and_skipped_while((x, v, s0, seed) in case(1)) {
        check_slice("prefixes", (&x, &v, &s0, seed), prefixes, prefixes_fwd, prefixes_rev, prefixes_o);
        check_hvp_of::<prefixes_rev>(&x, &v, prefixes_o);
    }

    #[test]
    fn first_nth_and_last_items_of_chains((x, v, s0, seed) in case(1)) {
        check_slice("chain_items", (&x, &v, &s0, seed), chain_items, chain_items_fwd, chain_items_rev, chain_items_o);
        check_hvp_of::<chain_items_rev>(&x, &v, chain_items_o);
    }

    #[test]
    fn items_found_and_filtered_maps((x, v, s0, seed) in case(1)) {
        check_slice("searches", (&x, &v, &s0, seed), searches, searches_fwd, searches_rev, searches_o);
        check_hvp_of::<searches_rev>(&x, &v, searches_o);
    }

    #[test]
    fn elements_bound_by_mutable_reference((x, v, s0, seed) in case(1)) {
        check_slice("mutable_elements", (&x, &v, &s0, seed), mutable_elements, mutable_elements_fwd, mutable_elements_rev, mutable_elements_o);
        check_hvp_of::<mutable_elements_rev>(&x, &v, mutable_elements_o);
    }

    #[test]
    fn iterators_held_in_variables((x, v, s0, seed) in case(1)) {
        check_slice("iterator_variables", (&x, &v, &s0, seed), iterator_variables, iterator_variables_fwd, iterator_variables_rev, iterator_variables_o);
        check_hvp_of::<iterator_variables_rev>(&x, &v, iterator_variables_o);
    }

    #[test]
    fn scans_that_always_go_on((x, v, s0, seed) in case(1)) {
        check_slice("scans", (&x, &v, &s0, seed), scans, scans_fwd, scans_rev, scans_o);
        check_hvp_of::<scans_rev>(&x, &v, scans_o);
    }

    #[test]
    fn parts_of_a_slice_flattened((x, v, s0, seed) in case(2)) {
        check_slice("flattened", (&x, &v, &s0, seed), flattened, flattened_fwd, flattened_rev, flattened_o);
        check_hvp_of::<flattened_rev>(&x, &v, flattened_o);
    }

    #[test]
    fn rows_flattened((x, v, s0, seed) in case(1)) {
        // The rows of `x`, three long (the last one shorter), and of `v` and `s0` alike.
        let rows = |x: &[f64]| x.chunks(3).map(<[f64]>::to_vec).collect::<Vec<_>>();
        let (m, dm, s0m) = (rows(&x), rows(&v[..x.len()]), rows(&s0));
        let mut shadow = s0m.clone();
        let value = flattened_rows_rev(&m, &mut shadow, seed);
        let (want, want_grad) = oracle_grad(flattened_rows_o, &x);
        check("rows_flattened value", value, want);
        check("rows_flattened primal", flattened_rows(&m), want);
        let grad: Vec<f64> = shadow.concat().iter().zip(&s0).map(|(a, b)| (a - b) / seed).collect();
        check_all("rows_flattened gradient", &grad, &want_grad);
        let (fv, ft) = flattened_rows_fwd(&m, &dm);
        let (_, want_t) = oracle_jvp(|d| vec![flattened_rows_o(d)], &x, &v[..x.len()]);
        check("rows_flattened forward value", fv, want);
        check("rows_flattened tangent", ft, want_t[0]);
        // Σ v²: the gradient 2 m, the tangent Σ 2 v dv.
        let mut shadow = s0m.clone();
        let value = squared_rows_rev(&m, &mut shadow, seed);
        check("squared_rows value", value, x.iter().map(|v| v * v).sum());
        // The items are added one by one, as the flattened iterator adds them: the
        // values are the function's to the bit.
        prop_assert_eq!(value.to_bits(), squared_rows(&m).to_bits());
        prop_assert_eq!(flattened_rows_fwd(&m, &dm).0.to_bits(), flattened_rows(&m).to_bits());
        for (g, (s0, v)) in shadow.concat().iter().zip(s0.iter().zip(&x)) {
            check("squared_rows gradient", *g - s0, 2.0 * v * seed);
        }
        let (_, t) = squared_rows_fwd(&m, &dm);
        check("squared_rows tangent", t, x.iter().zip(&v).map(|(a, b)| 2.0 * a * b).sum());
    }

    #[test]
    fn argmax_and_argmin((x, v, s0, seed) in case(2)) {
        check_slice("arg_extremes", (&x, &v, &s0, seed), arg_extremes, arg_extremes_fwd, arg_extremes_rev, arg_extremes_o);
        check_hvp_of::<arg_extremes_rev>(&x, &v, arg_extremes_o);
    }

    #[test]
    fn array_literal_sources((x, v, s0, seed) in case(2)) {
        check_slice("literal_sources", (&x, &v, &s0, seed), literal_sources, literal_sources_fwd, literal_sources_rev, literal_sources_o);
        check_hvp_of::<literal_sources_rev>(&x, &v, literal_sources_o);
    }

    #[test]
    fn elements_by_position((x, v, s0, seed) in case(1)) {
        check_slice("positions", (&x, &v, &s0, seed), positions, positions_fwd, positions_rev, positions_o);
        check_slice(
            "optional_positions",
            (&x, &v, &s0, seed),
            optional_positions,
            optional_positions_fwd,
            optional_positions_rev,
            optional_positions_o,
        );
        check_hvp_of::<optional_positions_rev>(&x, &v, optional_positions_o);
    }

    #[test]
    fn a_local_buffer_of_buffers((x, v, s0, seed) in case(1)) {
        check_slice("matrix", (&x, &v, &s0, seed), matrix, matrix_fwd, matrix_rev, matrix_o);
    }

    #[test]
    fn hessian_vector_products_through_the_adapters((x, v, _s0, _seed) in case(2)) {
        // Against the oracles where there are: differences of the gradient jump where
        // values lie within their step of a `max`, a filter's threshold or each other.
        check_hvp_of::<moved_rev>(&x, &v, moved_o);
        let hv = autodiff_core::hvp::<wide_windows_rev>(&x, &v);
        assert_all_close("wide_windows H·v", &hv, &fd_hvp(grad_of(wide_windows_rev), &x, &v), 1e-6);
        let hv = autodiff_core::hvp::<rosen_windows_rev>(&x, &v);
        assert_all_close(
            "rosen_windows H·v",
            &hv,
            &fd_hvp(grad_of(rosen_windows_rev), &x, &v),
            1e-6,
        );
        check_hvp_of::<extremes_rev>(&x, &v, extremes_o);
        check_hvp_of::<filtered_rev>(&x, &v, filtered_o);
        check_hvp_of::<matrix_rev>(&x, &v, matrix_o);
    }
}

// ---------------------------------------------------------------- rows of a buffer parameter

/// `Σ_r r[0] r[1]` over the rows of a slice of vectors, by `map` and `sum`.
#[autodiff_reverse(d_row_products, Duplicated, Active)]
#[autodiff_forward(row_products_jvp, Dual, Dual)]
fn row_products(m: &[Vec<f64>]) -> f64 {
    m.iter().map(|r| r[0] * r[1]).sum::<f64>()
}

/// The same by `fold`, over a `&Vec<Vec<f64>>`.
#[allow(clippy::ptr_arg)]
#[autodiff_reverse(d_row_products_fold, Duplicated, Active)]
#[autodiff_forward(row_products_fold_jvp, Dual, Dual)]
fn row_products_fold(m: &Vec<Vec<f64>>) -> f64 {
    m.iter().fold(0.0, |acc, r| acc + r[0] * r[1])
}

/// The same over a slice of arrays, with a row's own iterator inside.
#[autodiff_reverse(d_array_rows, Duplicated, Active)]
#[autodiff_forward(array_rows_jvp, Dual, Dual)]
fn array_rows(m: &[[f64; 2]]) -> f64 {
    m.iter().map(|r| r.iter().product::<f64>()).sum::<f64>()
}

#[test]
fn reductions_over_the_rows_of_a_buffer_parameter() {
    let rows = vec![vec![0.5, -1.5], vec![2.0, 0.25], vec![-0.75, 3.0]];
    let arrays: Vec<[f64; 2]> = rows.iter().map(|r| [r[0], r[1]]).collect();
    let want: f64 = rows.iter().map(|r| r[0] * r[1]).sum();
    let dir = vec![vec![1.0, 0.5], vec![-2.0, 0.0], vec![0.25, 1.0]];
    let dir_arrays: Vec<[f64; 2]> = dir.iter().map(|r| [r[0], r[1]]).collect();
    let want_t: f64 = rows
        .iter()
        .zip(&dir)
        .map(|(r, d)| d[0] * r[1] + r[0] * d[1])
        .sum();
    let check_grad = |g: &[Vec<f64>]| {
        for (r, gr) in rows.iter().zip(g) {
            assert!(
                (gr[0] - r[1]).abs() < 1e-15 && (gr[1] - r[0]).abs() < 1e-15,
                "{g:?}"
            );
        }
    };
    let mut g = vec![vec![0.0; 2]; 3];
    assert!((d_row_products(&rows, &mut g, 1.0) - want).abs() < 1e-15);
    check_grad(&g);
    let mut g = vec![vec![0.0; 2]; 3];
    assert!((d_row_products_fold(&rows, &mut g, 1.0) - want).abs() < 1e-15);
    check_grad(&g);
    let mut ga = vec![[0.0; 2]; 3];
    assert!((d_array_rows(&arrays, &mut ga, 1.0) - want).abs() < 1e-15);
    check_grad(&ga.iter().map(|r| r.to_vec()).collect::<Vec<_>>());
    for (v, t) in [
        row_products_jvp(&rows, &dir),
        row_products_fold_jvp(&rows, &dir),
        array_rows_jvp(&arrays, &dir_arrays),
    ] {
        assert!(
            (v - want).abs() < 1e-15 && (t - want_t).abs() < 1e-14,
            "{v} {t}"
        );
    }
}

// ---------------------------------------------------------------- constants iterated, nested

/// A loop over an array literal of weights, differentiated twice (H·v).
#[autodiff_reverse(d_weighted_squares, Duplicated, Active)]
fn weighted_squares(y: &[f64]) -> f64 {
    let mut total = 0.0;
    for t in [0.5, 2.0] {
        total += t * y[0] * y[0] * y[1];
    }
    for &t in [1.5, -0.25].iter() {
        total += t * y[1] * y[1];
    }
    total
}

#[autodiff_forward(weighted_squares_hvp, Dual, Dual)]
fn weighted_squares_grad(y: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    d_weighted_squares(y, g, 1.0);
}

#[test]
fn loops_over_constant_arrays_under_forward_over_reverse() {
    // f = 2.5 y0² y1 + 1.25 y1²: ∇f = (5 y0 y1, 2.5 y0² + 2.5 y1),
    // H = [[5 y1, 5 y0], [5 y0, 2.5]].
    let (y, v) = ([0.7, -1.3], [2.0, 0.5]);
    let (mut g, mut hv) = ([0.0; 2], [0.0; 2]);
    weighted_squares_hvp(&y, &v, &mut g, &mut hv);
    let want_g = [5.0 * y[0] * y[1], 2.5 * y[0] * y[0] + 2.5 * y[1]];
    let want_hv = [
        5.0 * y[1] * v[0] + 5.0 * y[0] * v[1],
        5.0 * y[0] * v[0] + 2.5 * v[1],
    ];
    for i in 0..2 {
        assert!((g[i] - want_g[i]).abs() < 1e-14, "{g:?}");
        assert!((hv[i] - want_hv[i]).abs() < 1e-14, "{hv:?}");
    }
}

/// A body of a system, marked so that a constant one has a zero shadow.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Body {
    pub v: [f64; 3],
    pub m: f64,
}

impl Body {
    #[differentiable]
    pub fn kinetic(&self) -> f64 {
        0.5 * self.m * self.v.iter().map(|c| c * c).sum::<f64>()
    }
}

/// A slice of structs consumed by iterator chains: `map` to a method and to a member,
/// `zip` with a float slice, `fold`, `enumerate` in a `for`, and `filter`.
#[autodiff_reverse(system_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(system_fwd, Dual, Dual, Dual)]
fn system(bs: &[Body], w: &[f64]) -> f64 {
    let kinetic: f64 = bs.iter().map(|b| b.kinetic()).sum();
    let weighted = bs.iter().zip(w).map(|(b, w)| b.m * w).sum::<f64>();
    let momentum = bs.iter().fold(0.0, |acc, b| acc + b.v[0] * b.m);
    let mut ranked = 0.0;
    for (i, b) in bs.iter().enumerate() {
        ranked += (i as f64 + 1.0) * b.v[2];
    }
    let heavy: f64 = bs.iter().filter(|b| b.m > 1.0).map(|b| b.m.ln()).sum();
    kinetic + weighted + momentum + ranked + heavy
}

/// The gradient of [`system`], by hand: `(∂/∂bodies, ∂/∂w)`.
fn system_grad(bs: &[Body], w: &[f64]) -> (Vec<Body>, Vec<f64>) {
    let mut db = Vec::new();
    for (i, b) in bs.iter().enumerate() {
        let heavy = if b.m > 1.0 { 1.0 / b.m } else { 0.0 };
        let m = 0.5 * b.v.iter().map(|c| c * c).sum::<f64>() + w[i] + b.v[0] + heavy;
        let v = [
            b.m * b.v[0] + b.m,
            b.m * b.v[1],
            b.m * b.v[2] + (i as f64 + 1.0),
        ];
        db.push(Body { v, m });
    }
    (db, bs.iter().map(|b| b.m).collect())
}

fn bodies() -> impl Strategy<Value = (Vec<Body>, Vec<f64>, Vec<Body>, Vec<f64>)> {
    let body =
        || (prop::array::uniform3(-2.0..2.0f64), 0.2..3.0f64).prop_map(|(v, m)| Body { v, m });
    (1usize..5).prop_flat_map(move |n| {
        (
            prop::collection::vec(body(), n),
            prop::collection::vec(-2.0..2.0f64, n),
            prop::collection::vec(body(), n),
            prop::collection::vec(-1.0..1.0f64, n),
        )
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn slices_of_structs_consumed_by_chains((bs, w, tb, tw) in bodies()) {
        let n = bs.len();
        let (want_b, want_w) = system_grad(&bs, &w);
        let mut db = vec![Body { v: [0.0; 3], m: 0.0 }; n];
        let mut dw = vec![0.0; n];
        let y = system_rev(&bs, &mut db, &w, &mut dw, 1.5);
        check("value", y, system(&bs, &w));
        for i in 0..n {
            check(&format!("dm[{i}]"), db[i].m, 1.5 * want_b[i].m);
            for k in 0..3 {
                check(&format!("dv[{i}][{k}]"), db[i].v[k], 1.5 * want_b[i].v[k]);
            }
            check(&format!("dw[{i}]"), dw[i], 1.5 * want_w[i]);
        }
        // The tangent along (tb, tw) is the gradient's inner product with it.
        let (y, t) = system_fwd(&bs, &tb, &w, &tw);
        check("forward value", y, system(&bs, &w));
        let mut want = 0.0;
        for i in 0..n {
            want += want_b[i].m * tb[i].m + want_w[i] * tw[i];
            for k in 0..3 {
                want += want_b[i].v[k] * tb[i].v[k];
            }
        }
        check("tangent", t, want);
    }
}

/// Horner's rule with an untyped `0.0` start and a float method on the accumulator: the
/// function's return type fixes the literal's type, as it does for rustc.
#[autodiff_forward(horner_mul_add_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(horner_mul_add_rev, Active, Duplicated, Active)]
fn horner_mul_add(x: f64, c: &[f64]) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ck| acc.mul_add(x, ck))
}

/// The largest coefficient (at least 0), by a fold whose `let` names its type.
#[autodiff_reverse(largest_rev, Duplicated, Active)]
fn largest(c: &[f64]) -> f64 {
    let m: f64 = c.iter().fold(0.0, |acc, &ck| acc.max(ck));
    m * m
}

#[test]
fn folds_from_an_untyped_literal_with_float_methods() {
    let (x, c) = (0.7, [1.5, -2.0, 3.0, 0.5]);
    let value: f64 = (0..4).map(|k| c[k] * x.powi(k as i32)).sum();
    let dx: f64 = (1..4).map(|k| k as f64 * c[k] * x.powi(k as i32 - 1)).sum();
    let mut dc = [0.0; 4];
    let (v, gx) = horner_mul_add_rev(x, &c, &mut dc, 1.0);
    check("value", v, value);
    check("d/dx", gx, dx);
    let want_dc: Vec<f64> = (0..4).map(|k| x.powi(k)).collect();
    check_all("d/dc", &dc, &want_dc);
    let (_, tx) = horner_mul_add_fwd(x, 1.0, &c, &[0.0; 4]);
    check("tangent in x", tx, dx);
    let mut dc = [0.0; 4];
    let v = largest_rev(&c, &mut dc, 1.0);
    check("largest", v, 9.0);
    check_all("d largest / dc", &dc, &[0.0, 0.0, 6.0, 0.0]);
}

/// `Σ (a_i - a_0)²` over the elements of an array parameter taken by value (`for z in
/// *a`), and the rows of a copy of a local matrix (`for row in m.clone()`).
#[autodiff_reverse(spread_rev, Duplicated, Active)]
#[autodiff_forward(spread_fwd, Dual, Dual)]
fn spread(a: &[f64; 3]) -> f64 {
    let mut s = 0.0;
    for z in *a {
        s += sq_from(z, a[0]);
    }
    let m = vec![[a[1], a[2]]];
    for row in m.clone() {
        s += row[0] * row[1] - m[0][0] * m[0][1];
    }
    s
}

#[test]
fn arrays_by_value_through_a_reference_and_copies() {
    let a = [0.5, -1.25, 2.0];
    let want = [
        -2.0 * ((a[1] - a[0]) + (a[2] - a[0])),
        2.0 * (a[1] - a[0]),
        2.0 * (a[2] - a[0]),
    ];
    let mut g = [0.0; 3];
    let y = spread_rev(&a, &mut g, 1.0);
    assert!((y - spread(&a)).abs() <= 1e-14);
    for i in 0..3 {
        assert!((g[i] - want[i]).abs() <= 1e-12, "{g:?}");
        let mut v = [0.0; 3];
        v[i] = 1.0;
        assert!((spread_fwd(&a, &v).1 - want[i]).abs() <= 1e-12);
    }
}
