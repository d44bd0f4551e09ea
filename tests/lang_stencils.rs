//! Loops that read a slice at fixed offsets from the index (`x[i - 1]`, `x[i]`,
//! `x[i + 2]`, `x[1..][k]`): the reverse sweep keeps those adjoints in locals across
//! iterations. Both modes against num-dual at random points, bit-for-bit agreement with
//! the same gradient written so that the window cannot be kept (a read at a computed
//! index), and H·v through forward over reverse against finite differences of the
//! gradient.

// Index loops are the construct under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;
mod nested_common;

use autodiff_core::prelude::*;
use lang_common::*;
use nested_common::{assert_all_close, fd_hvp, grad_of};
use proptest::prelude::*;

/// A discrete Dirichlet energy with a three-point stencil (offsets -1, 0, +1).
#[autodiff_forward(laplace_fwd, Dual, Dual)]
#[autodiff_reverse(laplace_rev, Duplicated, Active)]
fn laplace(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 1..x.len() - 1 {
        let l = x[i - 1] - 2.0 * x[i] + x[i + 1];
        s += l * l * x[i].cos();
    }
    s
}

fn laplace_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 1..x.len() - 1 {
        let l = x[i - 1] - x[i] * 2.0 + x[i + 1];
        s += l * l * x[i].cos();
    }
    s
}

/// Offsets 0 and +2 (a gap in the window), the index through a local, a read inside a
/// branch.
#[autodiff_forward(gap_fwd, Dual, Dual)]
#[autodiff_reverse(gap_rev, Duplicated, Active)]
fn gap(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 2 {
        let j = i + 2;
        let a = x[i] * x[j];
        if a > 0.0 {
            s += a.sqrt() * x[i + 2];
        } else {
            s -= a.sin();
        }
    }
    s
}

fn gap_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() - 2 {
        let a = x[i] * x[i + 2];
        if a.re() > 0.0 {
            s += a.sqrt() * x[i + 2];
        } else {
            s -= a.sin();
        }
    }
    s
}

/// Iterators over `x` and `x[1..]`.
#[autodiff_forward(pairs_fwd, Dual, Dual)]
#[autodiff_reverse(pairs_rev, Duplicated, Active)]
fn pairs(x: &[f64]) -> f64 {
    x.iter()
        .zip(&x[1..])
        .map(|(&a, &b)| (a - b).powi(2) * (a + 0.5 * b).exp())
        .sum()
}

fn pairs_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() - 1 {
        let (a, b) = (x[i], x[i + 1]);
        s += (a - b).powi(2) * (a + b * 0.5).exp();
    }
    s
}

/// Two stencil buffers in one loop, one of them also read at a computed index (so only
/// the other is kept in locals), inside an outer loop.
#[autodiff_reverse(two_rev, Duplicated, Duplicated, Active)]
fn two(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for r in 0..3 {
        for i in 0..n - 1 {
            s += x[i] * x[i + 1] * y[i] + y[(i * 7 + r) % n] * x[i + 1];
        }
    }
    s
}

/// [`laplace`] with its reads at computed indices: the reverse sweep stores each adjoint
/// in memory as it goes. Its gradient must equal [`laplace_rev`]'s bit for bit.
#[autodiff_reverse(laplace_plain_rev, Duplicated, Active)]
fn laplace_plain(x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 1..n - 1 {
        let (p, q) = ((i + n - 1) % n, (i + 1) % n);
        let l = x[p] - 2.0 * x[i] + x[q];
        s += l * l * x[i].cos();
    }
    s
}

/// The gradient of [`laplace`], differentiated again (forward over reverse).
#[autodiff_forward(laplace_hvp, Dual, Dual)]
fn laplace_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    laplace_rev(x, g, 1.0);
}

/// A reverse companion `fn(x, shadow, seed) -> value`.
type Rev = fn(&[f64], &mut [f64], f64) -> f64;

/// Panics unless `kept` and `stored`, run from the same shadow, return the same value and
/// leave the same shadow, bit for bit.
fn assert_same_bits(kept: Rev, stored: Rev, (x, s0, seed): (&[f64], &[f64], f64)) {
    let (mut a, mut b) = (s0.to_vec(), s0.to_vec());
    assert_eq!(
        kept(x, &mut a, seed).to_bits(),
        stored(x, &mut b, seed).to_bits()
    );
    for (p, q) in a.iter().zip(&b) {
        assert_eq!(p.to_bits(), q.to_bits());
    }
}

fn stencil_case(min: usize) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>, f64)> {
    slice_seed_case(-1.5, 1.5, min..12)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn three_point_stencil((x, v, s0, seed) in stencil_case(3)) {
        check_slice("laplace", (&x, &v, &s0, seed), laplace, laplace_fwd, laplace_rev, laplace_o);
    }

    #[test]
    fn stencil_with_a_gap_and_a_branch((x, v, s0, seed) in stencil_case(3)) {
        check_slice("gap", (&x, &v, &s0, seed), gap, gap_fwd, gap_rev, gap_o);
    }

    #[test]
    fn stencil_over_zipped_iterators((x, v, s0, seed) in stencil_case(2)) {
        check_slice("pairs", (&x, &v, &s0, seed), pairs, pairs_fwd, pairs_rev, pairs_o);
    }

    #[test]
    fn two_buffers_one_kept((x, y, seed) in (2usize..10).prop_flat_map(|n| (vecf(-1.0, 1.0, n), vecf(-1.0, 1.0, n), seed()))) {
        let n = x.len();
        let (mut bx, mut by) = (vec![0.0; n], vec![0.0; n]);
        two_rev(&x, &mut bx, &y, &mut by, seed);
        let g = |d: &[Dual64]| {
            let (x, y) = d.split_at(n);
            let mut s = c::<Dual64>(0.0);
            for r in 0..3 {
                for i in 0..n - 1 {
                    s += x[i] * x[i + 1] * y[i] + y[(i * 7 + r) % n] * x[i + 1];
                }
            }
            s
        };
        let z: Vec<f64> = x.iter().chain(&y).copied().collect();
        let (_, want) = oracle_grad(g, &z);
        let got: Vec<f64> = bx.iter().chain(&by).map(|b| b / seed).collect();
        check_all("two", &got, &want);
    }

    #[test]
    fn kept_adjoints_are_bit_for_bit_the_stored_ones((x, _v, s0, seed) in stencil_case(3)) {
        assert_same_bits(laplace_rev, laplace_plain_rev, (&x, &s0, seed));
    }

    #[test]
    fn stencil_hvp_by_forward_over_reverse((x, v, _s0, _seed) in stencil_case(3)) {
        let n = x.len();
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        laplace_hvp(&x, &v, &mut g, &mut hv);
        assert_all_close("laplace H·v", &hv, &fd_hvp(grad_of(laplace_rev), &x, &v), 1e-6);
    }
}

/// A read at offset +1 made only inside a branch that guards its bounds: the last
/// iteration does not read `x[i + 1]`, which would be out of bounds.
#[autodiff_forward(guarded_fwd, Dual, Dual)]
#[autodiff_reverse(guarded_rev, Duplicated, Active)]
fn guarded(x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        let a = x[i];
        if i + 1 < n {
            s += a * x[i + 1].sin();
        } else {
            s += a * a;
        }
    }
    s
}

fn guarded_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        let a = x[i];
        if i + 1 < n {
            s += a * x[i + 1].sin();
        } else {
            s += a * a;
        }
    }
    s
}

/// A triangular product, GMM's shape: the inner loop reads `x[i]` at an index it does not
/// change (kept in a local across the loop), a copy of `x` at a counter it steps, and the
/// outer loop's last inner range is empty.
#[autodiff_forward(tri_fwd, Dual, Dual)]
#[autodiff_reverse(tri_rev, Duplicated, Active)]
fn tri(x: &[f64]) -> f64 {
    let n = x.len();
    let z = x.to_vec();
    let mut y = vec![0.0; n];
    let mut li = 0;
    for i in 0..n {
        for j in i + 1..n {
            y[j] += z[li % n] * x[i] + x[i].sin();
            li += 1;
        }
    }
    let mut s = 0.0;
    for j in 0..n {
        s += y[j] * y[j];
    }
    s
}

fn tri_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut y = vec![c::<D>(0.0); n];
    let mut li = 0;
    for i in 0..n {
        for j in i + 1..n {
            y[j] += x[li % n] * x[i] + x[i].sin();
            li += 1;
        }
    }
    let mut s = c::<D>(0.0);
    for j in 0..n {
        s += y[j] * y[j];
    }
    s
}

/// [`tri`] with `x[i]` read at a computed index that the analysis cannot see is
/// invariant: its gradient must equal [`tri_rev`]'s bit for bit.
#[autodiff_reverse(tri_plain_rev, Duplicated, Active)]
fn tri_plain(x: &[f64]) -> f64 {
    let n = x.len();
    let z = x.to_vec();
    let mut y = vec![0.0; n];
    let mut li = 0;
    for i in 0..n {
        for j in i + 1..n {
            let k = (i + j * n) % n;
            y[j] += z[li % n] * x[k] + x[k].sin();
            li += 1;
        }
    }
    let mut s = 0.0;
    for j in 0..n {
        s += y[j] * y[j];
    }
    s
}

/// Reads at an index fixed in the loop but only inside a branch (not kept), and at the
/// loop's end index, out of bounds when the loop is empty.
#[autodiff_reverse(fixed_rev, Duplicated, Const, Active)]
fn fixed(x: &[f64], k: usize) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for j in k..n {
        s += x[j] * x[k];
        if j % 2 == 1 {
            s += x[n - 1] * x[j];
        }
    }
    s
}

/// An outer loop and its inner loop both read `z[0]`: one local holds its adjoint, the
/// outer loop's, across both.
#[autodiff_reverse(nested_fixed_rev, Duplicated, Active)]
fn nested_fixed(x: &[f64]) -> f64 {
    let z = x.to_vec();
    let mut acc = 0.5;
    for i in 0..3 {
        acc = acc * 0.5 + z[0] * (i as f64 + 1.0);
        for j in 0..z.len() {
            acc += z[0] * (j as f64) * acc.sin();
        }
    }
    acc + x[x.len() - 1]
}

fn nested_fixed_o<D: Num>(x: &[D]) -> D {
    let mut acc = c::<D>(0.5);
    for i in 0..3 {
        acc = acc * 0.5 + x[0] * (i as f64 + 1.0);
        for j in 0..x.len() {
            acc += x[0] * (j as f64) * acc.sin();
        }
    }
    acc + x[x.len() - 1]
}

/// A stencil in the outer loop (`x[i]`, `x[i + 1]`) whose inner loop reads `x[i]`, fixed
/// there: the inner loop uses the outer loop's local.
#[autodiff_reverse(stencil_outer_rev, Duplicated, Active)]
fn stencil_outer(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let d = x[i + 1] - x[i];
        for k in 0..3 {
            s += d * x[i] * (k as f64 + 0.5) + s.cos();
        }
    }
    s
}

fn stencil_outer_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() - 1 {
        let d = x[i + 1] - x[i];
        for k in 0..3 {
            s = s + d * x[i] * (k as f64 + 0.5) + s.cos();
        }
    }
    s
}

/// A buffer bound in the loop body, read at one constant index: a new adjoint buffer
/// every iteration, nothing to keep across the loop.
#[allow(clippy::useless_vec)] // A `Vec` bound in the body is the construct under test.
#[autodiff_reverse(local_buf_rev, Duplicated, Active)]
fn local_buf(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let b = vec![x[i] * s, x[i].sin()];
        s += b[1] * 2.0;
    }
    s
}

fn local_buf_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        s += x[i].sin() * 2.0;
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn nested_loops_reading_one_fixed_element((x, _v, _s0, seed) in stencil_case(2)) {
        for (name, rev, oracle) in [
            ("nested_fixed", nested_fixed_rev as Rev, nested_fixed_o::<Dual64> as fn(&[Dual64]) -> Dual64),
            ("stencil_outer", stencil_outer_rev, stencil_outer_o::<Dual64>),
            ("local_buf", local_buf_rev, local_buf_o::<Dual64>),
        ] {
            let mut g = vec![0.0; x.len()];
            rev(&x, &mut g, seed);
            let (_, want) = oracle_grad(oracle, &x);
            let got: Vec<f64> = g.iter().map(|b| b / seed).collect();
            check_all(name, &got, &want);
        }
    }

    #[test]
    fn stencil_read_guarded_by_a_branch((x, v, s0, seed) in stencil_case(1)) {
        check_slice("guarded", (&x, &v, &s0, seed), guarded, guarded_fwd, guarded_rev, guarded_o);
    }

    #[test]
    fn invariant_index_in_an_inner_loop((x, v, s0, seed) in stencil_case(1)) {
        check_slice("tri", (&x, &v, &s0, seed), tri, tri_fwd, tri_rev, tri_o);
    }

    #[test]
    fn kept_invariant_adjoint_is_bit_for_bit_the_stored_one((x, _v, s0, seed) in stencil_case(1)) {
        assert_same_bits(tri_rev, tri_plain_rev, (&x, &s0, seed));
    }

    #[test]
    fn fixed_index_in_a_branch_and_an_empty_loop((x, seed) in (1usize..8).prop_flat_map(|n| (vecf(-1.0, 1.0, n), seed()))) {
        let n = x.len();
        for k in [0, n / 2, n] {
            let mut g = vec![0.0; n];
            let f = fixed_rev(&x, &mut g, k, seed);
            let oracle = |d: &[Dual64]| {
                let mut s = c::<Dual64>(0.0);
                for j in k..n {
                    s += d[j] * d[k];
                    if j % 2 == 1 {
                        s += d[n - 1] * d[j];
                    }
                }
                s
            };
            let (want_f, want) = oracle_grad(oracle, &x);
            prop_assert!((f - want_f).abs() <= 1e-12 * (1.0 + want_f.abs()));
            let got: Vec<f64> = g.iter().map(|b| b / seed).collect();
            check_all("fixed", &got, &want);
        }
    }
}
