//! Buffers reused across loop iterations, the shape of ADBench's GMM: a buffer overwritten
//! from index 0 at the top of each iteration, then updated with `+=` at indices of an
//! inner loop, integer counters stepped inside the loops, and loads at a counter's index.
//! The reverse sweep records only what it cannot restore otherwise (the overwrite's old
//! values); these functions check, in both modes and against num-dual, the cases next to
//! that rule where a record is still needed: an overwrite that does not reach every
//! updated element, a read between the overwrite and the update, a counter stepped by
//! more than one, and a value at a counter's index used after the counter moves. Also
//! running extremes (`m = m.max(..)`), whose steps the reverse reads back from the
//! variable they were assigned to instead of recording them; floats that no adjoint
//! reads, which the reverse leaves unrecorded; and scratch buffers that the reverse fills
//! again instead of recording, beside ones it must record.

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

/// Floats whose values no adjoint reads, beside floats read only through others. Dead:
/// a norm scaled by a constant and subtracted (`sq`), the term it gives (only stored),
/// a term only added into the sum (`lin`). Read: a product's factors, a copy of a value
/// that a later product reads (`q = p`, so `p` too), an accumulator under a square root
/// (through the sum it feeds), a divisor, a value compared by a branch (`c`). The reverse
/// sweep leaves the dead ones unrecorded; a wrong call either way shows in the gradient
/// and the H·v.
#[autodiff_forward(dead_terms_fwd, Dual, Dual)]
#[autodiff_reverse(dead_terms_rev, Duplicated, Active)]
fn dead_terms(x: &[f64]) -> f64 {
    let n = x.len();
    let mut main = vec![0.0; n];
    let mut total = 0.0;
    for r in 0..n {
        let mut sq = 0.0;
        for j in 0..n {
            let t = x[j] - x[r];
            sq += t * t;
        }
        let term = 1.5 - 0.5 * sq;
        main[r] = term;
        let p = x[r] * 2.0;
        let q = p;
        total += q * x[r];
        let lin = x[r] * 3.0 - 1.0;
        total += lin;
        let d = x[r] + 2.0;
        total += 1.0 / (d * d + 1.0);
        let mut acc = 0.0;
        for j in 0..=r {
            acc += x[j] * x[j];
        }
        total += (acc + 1.0).sqrt();
        let c = x[r] - 0.25;
        if c > 0.0 {
            total += c * c;
        } else {
            total -= c;
        }
    }
    let mut m = main[0];
    for r in 1..n {
        m = m.max(main[r]);
    }
    let mut e = 0.0;
    for r in 0..n {
        e += (main[r] - m).exp();
    }
    total + e.ln() + m
}

fn dead_terms_o<N: Num>(x: &[N]) -> N {
    let n = x.len();
    let mut main = Vec::with_capacity(n);
    let mut total = c::<N>(0.0);
    for r in 0..n {
        let sq = (0..n).fold(c::<N>(0.0), |a, j| a + (x[j] - x[r]) * (x[j] - x[r]));
        main.push(-sq * 0.5 + 1.5);
        total += x[r] * 2.0 * x[r] + x[r] * 3.0 - 1.0;
        let d = x[r] + 2.0;
        total += (d * d + 1.0).recip();
        let acc = (0..=r).fold(c::<N>(0.0), |a, j| a + x[j] * x[j]);
        total += (acc + 1.0).sqrt();
        let cr = x[r] - 0.25;
        total += if cr.re() > 0.0 { cr * cr } else { -cr };
    }
    let m = main[1..]
        .iter()
        .fold(main[0], |m, &v| if v.re() > m.re() { v } else { m });
    let e = main.iter().fold(c::<N>(0.0), |a, &v| a + (v - m).exp());
    total + e.ln() + m
}

/// Scratch buffers filled at the top of each iteration. `a` is filled from the inputs
/// alone and read only after: the reverse sweep fills it again instead of recording it.
/// Each of the others is filled in the same place but needs its records for one reason:
/// `b` is filled from a running sum, `g` is read before its filling loop (the previous
/// iteration's values), `e` is also read before the loop over rows (its initial values),
/// and `f` has two filling loops with a read between them.
#[allow(clippy::useless_vec)] // local `Vec`s are the buffers under test
#[autodiff_forward(refilled_fwd, Dual, Dual)]
#[autodiff_reverse(refilled_rev, Duplicated, Active)]
fn refilled(x: &[f64]) -> f64 {
    let n = x.len();
    let mut a = vec![0.0; 2];
    let mut b = vec![0.0; 2];
    let mut g = vec![0.5; 2];
    let mut e = vec![0.3; 2];
    let mut f = vec![0.0; 2];
    let mut run = 0.1;
    let mut total = e[1] * x[0];
    for r in 0..n {
        let s = r + 1;
        let w = x[r] * 0.5;
        let g01 = g[0] * g[1];
        for j in 0..2 {
            a[j] = (x[(r + j) % n] - x[(s + j) % n]).sin() * w;
        }
        for j in 0..2 {
            b[j] = run * x[(r + j) % n];
        }
        for j in 0..2 {
            e[j] = x[(s + j) % n] * 1.5;
        }
        for j in 0..2 {
            f[j] = x[r] + 0.25;
        }
        let f01 = f[0] * f[1];
        for j in 0..2 {
            f[j] = x[(s + j) % n] * 2.0;
        }
        for j in 0..2 {
            g[j] = x[(r + j) % n].cos();
        }
        total += g01 + a[0] * a[1] * b[0] + b[1].tanh() + g[0] * e[1] + f01 * f[0] * f[1];
        run += x[r] * x[r];
    }
    total + e[0] * e[1]
}

fn refilled_o<N: Num>(x: &[N]) -> N {
    let n = x.len();
    let mut g = [c::<N>(0.5); 2];
    let mut e = [c::<N>(0.3); 2];
    let mut run = c::<N>(0.1);
    let mut total = e[1] * x[0];
    for r in 0..n {
        let s = r + 1;
        let w = x[r] * 0.5;
        let g01 = g[0] * g[1];
        let a: Vec<N> = (0..2)
            .map(|j| (x[(r + j) % n] - x[(s + j) % n]).sin() * w)
            .collect();
        let b: Vec<N> = (0..2).map(|j| run * x[(r + j) % n]).collect();
        for j in 0..2 {
            e[j] = x[(s + j) % n] * 1.5;
        }
        let f01 = (x[r] + 0.25) * (x[r] + 0.25);
        let f: Vec<N> = (0..2).map(|j| x[(s + j) % n] * 2.0).collect();
        for j in 0..2 {
            g[j] = x[(r + j) % n].cos();
        }
        total += g01 + a[0] * a[1] * b[0] + b[1].tanh() + g[0] * e[1] + f01 * f[0] * f[1];
        run += x[r] * x[r];
    }
    total + e[0] * e[1]
}

/// A scratch buffer whose filling loop covers more of it in each iteration: the entries
/// not yet filled keep their initial values, which the reverse sweep must see too.
#[allow(clippy::useless_vec)] // a local `Vec` is the buffer under test
#[autodiff_forward(growing_fill_fwd, Dual, Dual)]
#[autodiff_reverse(growing_fill_rev, Duplicated, Active)]
fn growing_fill(x: &[f64]) -> f64 {
    let n = x.len();
    let mut buf = vec![0.25; n];
    let mut total = 0.0;
    for r in 0..n {
        for j in 0..r {
            buf[j] = x[j] * x[j];
        }
        for j in 0..n {
            total += buf[j] * x[r];
        }
    }
    total
}

fn growing_fill_o<N: Num>(x: &[N]) -> N {
    let n = x.len();
    let mut total = c::<N>(0.0);
    for r in 0..n {
        for j in 0..n {
            let b = if j < r { x[j] * x[j] } else { c::<N>(0.25) };
            total += b * x[r];
        }
    }
    total
}

/// A scratch buffer filled in an inner loop, filled again by the reverse sweep, from a
/// float of the outer loop's body that is only added and is computed from a running sum:
/// the fill computed again must see the value of its own iteration.
#[allow(clippy::useless_vec)] // a local `Vec` is the buffer under test
#[autodiff_forward(outer_fill_fwd, Dual, Dual)]
#[autodiff_reverse(outer_fill_rev, Duplicated, Active)]
fn outer_fill(x: &[f64]) -> f64 {
    let n = x.len();
    let mut buf = vec![0.0; 2];
    let mut total = 0.0;
    let mut run = 0.5;
    for r in 0..n {
        let w = x[r] + run;
        for q in 0..2 {
            for j in 0..2 {
                buf[j] = x[(q + j) % n] + w;
            }
            total += buf[0] * buf[1];
        }
        run += x[r] * x[r];
    }
    total
}

fn outer_fill_o<N: Num>(x: &[N]) -> N {
    let n = x.len();
    let mut total = c::<N>(0.0);
    let mut run = c::<N>(0.5);
    for r in 0..n {
        let w = x[r] + run;
        for q in 0..2 {
            total += (x[q % n] + w) * (x[(q + 1) % n] + w);
        }
        run += x[r] * x[r];
    }
    total
}

/// Two buffers overwritten in one loop, both read in later iterations' reverse: the
/// first, which the loop does not read, has its old contents saved whole before the loop;
/// the second, read in the loop, element by element.
#[autodiff_forward(two_overwrites_fwd, Dual, Dual)]
#[autodiff_reverse(two_overwrites_rev, Duplicated, Active)]
fn two_overwrites(x: &[f64]) -> f64 {
    let d = D;
    let pts = &x[d + TRI..];
    let n = pts.len() / d;
    let mut a = vec![0.0; d];
    let mut b = vec![1.0; d];
    let mut total = 0.0;
    for r in 0..n {
        for j in 0..d {
            let t = pts[r * d + j] * x[j] + b[j];
            a[j] = t * t.cos();
            b[j] = t.sin();
        }
        for j in 0..d {
            total += a[j] * b[(j + 1) % d];
        }
    }
    total + a[0] * b[d - 1]
}

fn two_overwrites_o<N: Num>(x: &[N]) -> N {
    let d = D;
    let pts = &x[d + TRI..];
    let n = pts.len() / d;
    let mut a = vec![c::<N>(0.0); d];
    let mut b = vec![c::<N>(1.0); d];
    let mut total = c::<N>(0.0);
    for r in 0..n {
        for j in 0..d {
            let t = pts[r * d + j] * x[j] + b[j];
            a[j] = t * t.cos();
            b[j] = t.sin();
        }
        for j in 0..d {
            total += a[j] * b[(j + 1) % d];
        }
    }
    total + a[0] * b[d - 1]
}

/// A local updated by itself (`t *= t`, `y /= y`), in a loop and after it.
#[autodiff_forward(self_updated_fwd, Dual, Dual)]
#[autodiff_reverse(self_updated_rev, Duplicated, Active)]
fn self_updated(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let mut t = x[i];
        t *= t;
        s += t;
    }
    let mut y = s + 1.0;
    y /= y;
    let mut z = x[0];
    z += z;
    z -= 0.5;
    z *= z;
    s * y + z
}

fn self_updated_o<N: Num>(x: &[N]) -> N {
    let s = x.iter().fold(N::zero(), |s, v| s + *v * *v);
    let z = x[0] + x[0] - c::<N>(0.5);
    // `y / y` is one, and so is its derivative zero.
    s + z * z
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
    fn a_local_updated_by_itself(((x, v, s0), seed) in (slice_case(-1.0, 1.0, 1..6, 0), seed())) {
        check_slice("self_updated", (&x, &v, &s0, seed), self_updated, self_updated_fwd, self_updated_rev, self_updated_o);
        check_hvp_of::<self_updated_rev>(&x, &v, self_updated_o);
    }

    #[test]
    fn buffer_overwritten_then_updated((x, v, s0, seed) in case(1..5)) {
        check_slice("reused", (&x, &v, &s0, seed), reused, reused_fwd, reused_rev, reused_o);
        check_hvp_of::<reused_rev>(&x, &v, reused_o);
    }

    #[test]
    fn two_buffers_overwritten_in_one_loop((x, v, s0, seed) in case(1..5)) {
        check_slice("two_overwrites", (&x, &v, &s0, seed), two_overwrites, two_overwrites_fwd, two_overwrites_rev, two_overwrites_o);
        check_hvp_of::<two_overwrites_rev>(&x, &v, two_overwrites_o);
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

    #[test]
    fn floats_no_adjoint_reads_beside_floats_read_through_others(((x, v, s0), seed) in (slice_case(-1.0, 1.0, 1..7, 0), seed())) {
        check_slice("dead_terms", (&x, &v, &s0, seed), dead_terms, dead_terms_fwd, dead_terms_rev, dead_terms_o);
        check_hvp_of::<dead_terms_rev>(&x, &v, dead_terms_o);
    }

    #[test]
    fn scratch_buffers_filled_again_and_recorded(((x, v, s0), seed) in (slice_case(-1.0, 1.0, 1..7, 0), seed())) {
        check_slice("refilled", (&x, &v, &s0, seed), refilled, refilled_fwd, refilled_rev, refilled_o);
        check_hvp_of::<refilled_rev>(&x, &v, refilled_o);
    }

    #[test]
    fn scratch_buffer_filled_further_each_iteration(((x, v, s0), seed) in (slice_case(-1.0, 1.0, 1..7, 0), seed())) {
        check_slice("growing_fill", (&x, &v, &s0, seed), growing_fill, growing_fill_fwd, growing_fill_rev, growing_fill_o);
        check_hvp_of::<growing_fill_rev>(&x, &v, growing_fill_o);
    }

    #[test]
    fn scratch_buffer_filled_from_the_outer_loop(((x, v, s0), seed) in (slice_case(-1.0, 1.0, 1..7, 0), seed())) {
        check_slice("outer_fill", (&x, &v, &s0, seed), outer_fill, outer_fill_fwd, outer_fill_rev, outer_fill_o);
        check_hvp_of::<outer_fill_rev>(&x, &v, outer_fill_o);
    }
}
