//! Buffers reused across loop iterations, the shape of ADBench's GMM: a buffer overwritten
//! from index 0 at the top of each iteration, then updated with `+=` at indices of an
//! inner loop, integer counters stepped inside the loops, and loads at a counter's index.
//! The reverse sweep records only what it cannot restore otherwise (the overwrite's old
//! values); these functions check, in both modes and against num-dual, the cases next to
//! that rule where a record is still needed: an overwrite that does not reach every
//! updated element, a read between the overwrite and the update, a counter stepped by
//! more than one, and a value at a counter's index used after the counter moves. Also
//! running extremes (`m = m.max(..)`), whose steps the reverse reads back from the
//! variable they were assigned to instead of recording them.

// Index loops are the construct under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

const D: usize = 4;
/// Entries of the strictly lower triangle of a `D × D` matrix.
const TRI: usize = D * (D - 1) / 2;

/// `x = [μ (D), L (TRI), points (n·D)]`: `Σ_r g(Q (p_r − μ))` with `Q` the triangle plus
/// a nonlinear diagonal, formed in reused buffers as ADBench's GMM does.
#[autodiff_forward(reused_fwd, Dual, Dual)]
#[autodiff_reverse(reused_rev, Duplicated, Active)]
fn reused(x: &[f64]) -> f64 {
    let d = D;
    let pts = &x[d + TRI..];
    let n = pts.len() / d;
    let mut xc = vec![0.0; d];
    let mut q = vec![0.0; d];
    let mut total = 0.0;
    for r in 0..n {
        for j in 0..d {
            xc[j] = pts[r * d + j] - x[j];
        }
        for j in 0..d {
            q[j] = xc[j] * (1.0 + 0.1 * xc[j]);
        }
        let mut li = d;
        for i in 0..d {
            for j in i + 1..d {
                q[j] += x[li] * xc[i];
                li += 1;
            }
        }
        let mut s = 0.0;
        for j in 0..d {
            s += q[j] * q[j];
        }
        total += (-0.5 * s).exp() + q[0] * s.sqrt();
    }
    total
}

fn reused_o<N: Num>(x: &[N]) -> N {
    let d = D;
    let pts = &x[d + TRI..];
    let n = pts.len() / d;
    let mut total = c::<N>(0.0);
    for r in 0..n {
        let xc: Vec<N> = (0..d).map(|j| pts[r * d + j] - x[j]).collect();
        let mut q: Vec<N> = xc.iter().map(|&v| v * (v * 0.1 + 1.0)).collect();
        let mut li = d;
        for i in 0..d {
            for j in i + 1..d {
                q[j] += x[li] * xc[i];
                li += 1;
            }
        }
        let s = q.iter().fold(c::<N>(0.0), |a, &v| a + v * v);
        total += (s * -0.5).exp() + q[0] * s.sqrt();
    }
    total
}

/// The overwrite stops one short of the updates (`0..d - 1` against `i + 1..d`), a read
/// of the buffer sits between the overwrite and the updates, and the counter runs
/// downwards by two.
#[autodiff_forward(partial_fwd, Dual, Dual)]
#[autodiff_reverse(partial_rev, Duplicated, Active)]
fn partial(x: &[f64]) -> f64 {
    let d = D;
    let pts = &x[d + TRI..];
    let n = pts.len() / d;
    let mut q = vec![0.0; d];
    let mut total = 0.0;
    for r in 0..n {
        for j in 0..d - 1 {
            q[j] = pts[r * d + j] * x[j];
        }
        let mid = q[1];
        let mut li = d + TRI;
        for i in 0..d {
            for j in i + 1..d {
                li -= 2;
                q[j] += x[li] * pts[r * d + i] * mid;
            }
            li += d - i - 1;
        }
        for j in 0..d {
            total += q[j].sin() * mid;
        }
    }
    total
}

fn partial_o<N: Num>(x: &[N]) -> N {
    let d = D;
    let pts = &x[d + TRI..];
    let n = pts.len() / d;
    let mut q = vec![c::<N>(0.0); d];
    let mut total = c::<N>(0.0);
    for r in 0..n {
        for j in 0..d - 1 {
            q[j] = pts[r * d + j] * x[j];
        }
        let mid = q[1];
        let mut li = d + TRI;
        for i in 0..d {
            for j in i + 1..d {
                li -= 2;
                q[j] += x[li] * pts[r * d + i] * mid;
            }
            li += d - i - 1;
        }
        for j in 0..d {
            total += q[j].sin() * mid;
        }
    }
    total
}

/// A value loaded at a counter's index and used again after the counter moves.
#[autodiff_forward(counter_fwd, Dual, Dual)]
#[autodiff_reverse(counter_rev, Duplicated, Active)]
fn counter(x: &[f64]) -> f64 {
    let n = x.len();
    let mut k = 0;
    let mut s = 0.0;
    for _ in 0..3 {
        for i in 0..n {
            let a = x[k];
            let b = a * x[i];
            k += 1;
            if k == n {
                k = 0;
            }
            s += b.sin() * a;
        }
        k += 1;
        if k >= n {
            k -= n;
        }
    }
    s
}

fn counter_o<N: Num>(x: &[N]) -> N {
    let n = x.len();
    let mut k = 0;
    let mut s = c::<N>(0.0);
    for _ in 0..3 {
        for i in 0..n {
            let a = x[k];
            let b = a * x[i];
            k += 1;
            if k == n {
                k = 0;
            }
            s += b.sin() * a;
        }
        k += 1;
        if k >= n {
            k -= n;
        }
    }
    s
}

/// A running maximum (`m = m.max(..)`, whose step the reverse reads back from `m`), one
/// inside a branch, a running `tanh` (whose derivative uses the step's value), and steps
/// followed by another write (`q *= 0.9`, read back from the record).
#[autodiff_forward(running_fwd, Dual, Dual)]
#[autodiff_reverse(running_rev, Duplicated, Active)]
fn running(x: &[f64]) -> f64 {
    let mut m = x[0];
    let mut p = x[0];
    let mut q = x[0];
    let mut r = 0.25;
    let mut y = 0.5;
    for i in 1..x.len() {
        m = m.max(x[i] * 1.5);
        if x[i] > 0.0 {
            p = p.min(x[i].sin());
        }
        q = q.max(x[i]);
        q *= 0.9;
        r += x[i];
        r = r.tanh();
        q = q.tanh();
        q *= 1.1;
        y = (y * x[i]).sin() + m * p + r;
    }
    m * y + p * q
}

fn running_o<N: Num>(x: &[N]) -> N {
    let pick = |a: N, b: N, max: bool| if (a.re() >= b.re()) == max { a } else { b };
    let (mut m, mut p, mut q) = (x[0], x[0], x[0]);
    let mut r = c::<N>(0.25);
    let mut y = c::<N>(0.5);
    for i in 1..x.len() {
        m = pick(m, x[i] * 1.5, true);
        if x[i].re() > 0.0 {
            p = pick(p, x[i].sin(), false);
        }
        q = pick(q, x[i], true) * 0.9;
        r = (r + x[i]).tanh();
        q = q.tanh() * 1.1;
        y = (y * x[i]).sin() + m * p + r;
    }
    m * y + p * q
}

fn case(
    points: std::ops::Range<usize>,
) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>, f64)> {
    (points, seed()).prop_flat_map(|(n, seed)| {
        let len = D + TRI + n * D;
        (vecf(-1.0, 1.0, len), dirs(len), dirs(len), Just(seed))
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn buffer_overwritten_then_updated((x, v, s0, seed) in case(1..5)) {
        check_slice("reused", (&x, &v, &s0, seed), reused, reused_fwd, reused_rev, reused_o);
    }

    #[test]
    fn partial_overwrite_read_between_and_counter_by_two((x, v, s0, seed) in case(1..5)) {
        check_slice("partial", (&x, &v, &s0, seed), partial, partial_fwd, partial_rev, partial_o);
    }

    #[test]
    fn running_extremes_read_back_from_their_variable(((x, v, s0), seed) in (slice_case(-1.0, 1.0, 1..9, 0), seed())) {
        check_slice("running", (&x, &v, &s0, seed), running, running_fwd, running_rev, running_o);
    }

    #[test]
    fn value_at_a_counter_used_after_it_moves(((x, v, s0), seed) in (slice_case(-1.0, 1.0, 1..9, 0), seed())) {
        check_slice("counter", (&x, &v, &s0, seed), counter, counter_fwd, counter_rev, counter_o);
    }
}
