//! A slice reference held in a `let mut` and pointed at another part of its buffer as a
//! loop runs (`let mut input = &seq[0..b]; .. input = next;`), as recurrences over a
//! sequence are written (ADBench's LSTM). Read by index and by iterator, passed to a
//! differentiated callee, with every kind of range. Checked against num-dual in both
//! modes and under forward over reverse, with the sequence active and constant.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// Width of one step of the sequence.
const B: usize = 2;

/// One step of the recurrence: a new state from the weights, an input and the state.
#[differentiable]
fn cell(w: &[f64], input: &[f64], h: f64) -> f64 {
    let mut s = w[0] * h;
    for i in 0..input.len() {
        s += w[i + 1] * input[i];
    }
    s.tanh()
}

fn cell_o<D: Num>(w: &[D], input: &[D], h: D) -> D {
    let mut s = w[0] * h;
    for i in 0..input.len() {
        s += w[i + 1] * input[i];
    }
    s.tanh()
}

/// The state steps through the sequence, `B` values at a time; each step's prediction is
/// compared with the next input, which then becomes the input.
#[autodiff_forward(recurrence_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(recurrence_rev, Duplicated, Duplicated, Active)]
#[autodiff_reverse(recurrence_const_rev, Duplicated, Const, Active)]
fn recurrence(w: &[f64], seq: &[f64]) -> f64 {
    let steps = seq.len() / B;
    let mut input = &seq[0..B];
    let mut h = 0.0;
    let mut loss = 0.0;
    for t in 0..steps - 1 {
        h = cell(w, input, h);
        let next = &seq[(t + 1) * B..(t + 2) * B];
        let mut err = 0.0;
        for (i, y) in next.iter().enumerate() {
            err += (h * input[i] - y) * (h * input[i] - y);
        }
        loss += err;
        input = next;
    }
    loss + input[B - 1] * h
}

fn recurrence_o<D: Num>(w: &[D], seq: &[D]) -> D {
    let steps = seq.len() / B;
    let mut h = c::<D>(0.0);
    let mut loss = c::<D>(0.0);
    for t in 0..steps - 1 {
        let input = &seq[t * B..(t + 1) * B];
        h = cell_o(w, input, h);
        for i in 0..B {
            let e = h * input[i] - seq[(t + 1) * B + i];
            loss += e * e;
        }
    }
    loss + seq[(steps - 1) * B + B - 1] * h
}

/// Weights and sequence in one slice, for H·v.
#[autodiff_reverse(recurrence_all_rev, Duplicated, Active)]
fn recurrence_all(x: &[f64]) -> f64 {
    recurrence(&x[..B + 1], &x[B + 1..])
}

/// The whole slice to start with, then open and closed ranges, then the whole slice.
#[autodiff_forward(ranges_fwd, Dual, Dual)]
#[autodiff_reverse(ranges_rev, Duplicated, Active)]
fn ranges(x: &[f64]) -> f64 {
    let mut cur = x;
    let mut s = 0.0;
    for t in 0..x.len() {
        s += cur[0] * cur[cur.len() - 1] + cur.iter().sum::<f64>() * 0.25;
        cur = if t % 2 == 0 { &x[t..] } else { &x[t / 2..=t] };
    }
    cur = x;
    s + cur[0]
}

fn ranges_o<D: Num>(x: &[D]) -> D {
    let mut cur = x;
    let mut s = c::<D>(0.0);
    for t in 0..x.len() {
        let sum = cur.iter().fold(c::<D>(0.0), |a, b| a + *b);
        s += cur[0] * cur[cur.len() - 1] + sum * 0.25;
        cur = if t % 2 == 0 { &x[t..] } else { &x[t / 2..=t] };
    }
    s + x[0]
}

/// A `move` closure keeps the slice it captured, wherever the name points later.
#[autodiff_forward(captured_fwd, Dual, Dual)]
#[autodiff_reverse(captured_rev, Duplicated, Active)]
fn captured(x: &[f64]) -> f64 {
    let mut cur = &x[1..];
    let scaled = move |i: usize| cur[i] * cur[0];
    cur = &x[..1];
    scaled(0) + cur[0] * scaled(x.len() - 2)
}

fn captured_o<D: Num>(x: &[D]) -> D {
    x[1] * x[1] + x[0] * x[x.len() - 1] * x[1]
}

/// Flat weights peeled off a `let mut` slice, as layers are: names taken from the slice
/// before it moves (a part, a `split_at` half, the whole) keep what they named, and the
/// slice moves to a slice of itself and to a `split_at` half.
#[autodiff_forward(peeled_fwd, Dual, Dual)]
#[autodiff_reverse(peeled_rev, Duplicated, Active)]
fn peeled(w: &[f64]) -> f64 {
    let mut rest = w;
    let mut s = 0.0;
    for _ in 0..2 {
        let a = &rest[..2];
        let (pair, r) = rest.split_at(2);
        let whole = rest;
        rest = &rest[1..];
        s += a[0] * pair[1] + whole[2].sin() * rest[0];
        rest = &r[1..];
        s += a[1] * r[0] * rest[0];
    }
    s + rest[0]
}

fn peeled_o<D: Num>(w: &[D]) -> D {
    let mut s = c::<D>(0.0);
    let mut o = 0;
    for _ in 0..2 {
        s += w[o] * w[o + 1] + w[o + 2].sin() * w[o + 1];
        s += w[o + 1] * w[o + 2] * w[o + 3];
        o += 3;
    }
    s + w[o]
}

/// Places whose indices read a `let mut` counter, bound before it changes: a slice, an
/// element, and a `for` loop's source, which the body moves on.
#[autodiff_forward(counted_fwd, Dual, Dual)]
#[autodiff_reverse(counted_rev, Duplicated, Active)]
fn counted(w: &[f64]) -> f64 {
    let mut k = 0;
    let a = &w[k..k + 2];
    let e = &w[k + 2];
    k = 3;
    let mut s = a[0] * a[1] + *e * w[k];
    for v in w[k - 2..k + 1].iter() {
        k += 1;
        s += v * w[k];
    }
    s
}

fn counted_o<D: Num>(w: &[D]) -> D {
    let mut s = w[0] * w[1] + w[2] * w[3];
    for (i, k) in (1..4).zip(4..7) {
        s += w[i] * w[k];
    }
    s
}

/// A slice chosen by `if` and by `match` where it is bound, and two slices that trade
/// places (`(a, b) = (b, a)`) as a loop runs.
#[autodiff_forward(chosen_fwd, Dual, Dual)]
#[autodiff_reverse(chosen_rev, Duplicated, Active)]
fn chosen(w: &[f64]) -> f64 {
    let s = if w[0] > 0.0 { &w[..3] } else { &w[1..] };
    let u: &[f64] = match w.len() {
        4 => &w[1..],
        _ => w,
    };
    let mut a = &w[0..2];
    let mut b = &w[2..4];
    let mut t = s[0] * s[2].exp() + u[0] * u[1];
    for k in 0..3 {
        t += a[0] * b[1] * (k as f64 + 1.0) + a[1];
        (a, b) = (b, a);
    }
    t + a[0] - 2.0 * b[0]
}

fn chosen_o<D: Num>(w: &[D]) -> D {
    let s = if w[0].re() > 0.0 { &w[..3] } else { &w[1..] };
    let u = if w.len() == 4 { &w[1..] } else { w };
    let mut a = &w[0..2];
    let mut b = &w[2..4];
    let mut t = s[0] * s[2].exp() + u[0] * u[1];
    for k in 0..3 {
        t += a[0] * b[1] * c::<D>(k as f64 + 1.0) + a[1];
        std::mem::swap(&mut a, &mut b);
    }
    t + a[0] - b[0] * c::<D>(2.0)
}

/// A `let mut` name for a `&mut` slice, written through.
#[autodiff_forward(written_through_fwd, Dual, Dual)]
#[autodiff_reverse(written_through_rev, Duplicated, Duplicated)]
fn written_through(x: &[f64], out: &mut [f64]) {
    #[allow(unused_mut)]
    let mut cur = &mut out[1..];
    cur[0] = cur[0] * x[0] + cur[1].sin();
}

/// `(w, seq)`: 3 weights and 2 to 5 steps of `B` values.
fn recurrence_case() -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
    (2..6usize).prop_flat_map(|steps| (vecf(-1.0, 1.0, B + 1), vecf(-1.0, 1.0, steps * B)))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn recurrences_step_a_slice_through_a_sequence(
        (w, seq) in recurrence_case(),
        s in seed(),
        dir in dirs(B + 1 + 5 * B),
    ) {
        let mut x = w.clone();
        x.extend_from_slice(&seq);
        let v = &dir[..x.len()];
        let split = |d: &[f64]| (d[..B + 1].to_vec(), d[B + 1..].to_vec());
        let (vw, vs) = split(v);
        check_slice(
            "recurrence",
            (&x, v, &vec![0.0; x.len()], s),
            |x| recurrence(&x[..B + 1], &x[B + 1..]),
            |_, _| recurrence_fwd(&w, &vw, &seq, &vs),
            |_, dx, s| {
                let (mut dw, mut ds) = split(dx);
                let y = recurrence_rev(&w, &mut dw, &seq, &mut ds, s);
                dx[..B + 1].copy_from_slice(&dw);
                dx[B + 1..].copy_from_slice(&ds);
                y
            },
            |d| recurrence_o(&d[..B + 1], &d[B + 1..]),
        );
        check_hvp_of::<recurrence_all_rev>(&x, v, |d| recurrence_o(&d[..B + 1], &d[B + 1..]));

        // The sequence constant: the weights' gradient alone.
        let mut dw = vec![0.0; B + 1];
        let y = recurrence_const_rev(&w, &mut dw, &seq, s);
        let (value, grad) = oracle_grad(|d| recurrence_o(&d[..B + 1], &d[B + 1..]), &x);
        check("recurrence (seq constant)", y, value);
        for i in 0..B + 1 {
            check(&format!("d w[{i}]"), dw[i], s * grad[i]);
        }
    }

    #[test]
    fn move_closures_keep_the_slice_they_captured(
        (x, v, s0) in slice_case(-1.5, 1.5, 2..6, 0),
        s in seed(),
    ) {
        check_slice("captured", (&x, &v, &s0, s), captured, captured_fwd, captured_rev, captured_o::<Dual64>);
    }

    #[test]
    fn names_taken_from_a_slice_keep_what_they_named(
        (x, v, s0) in slice_case(-1.5, 1.5, 7..9, 0),
        s in seed(),
    ) {
        check_slice("peeled", (&x, &v, &s0, s), peeled, peeled_fwd, peeled_rev, peeled_o::<Dual64>);
        check_hvp_of::<peeled_rev>(&x, &v, peeled_o);
        check_slice("counted", (&x, &v, &s0, s), counted, counted_fwd, counted_rev, counted_o::<Dual64>);
    }

    #[test]
    fn slices_chosen_by_branches_and_traded(
        (x, v, s0) in slice_case(-1.5, 1.5, 4..6, 0),
        s in seed(),
    ) {
        check_slice("chosen", (&x, &v, &s0, s), chosen, chosen_fwd, chosen_rev, chosen_o::<Dual64>);
    }

    #[test]
    fn a_mutable_name_for_a_mut_slice(
        x in vecf(-1.5, 1.5, 1), out in vecf(-1.5, 1.5, 3), v in dirs(4), w in dirs(3),
    ) {
        // Forward: the tangent of out[1] = out[1] x0 + sin(out[2]).
        let (mut o, mut d) = (out.clone(), v[1..].to_vec());
        written_through_fwd(&x, &v[..1], &mut o, &mut d);
        let want = out[1] * x[0] + out[2].sin();
        check("out[1]", o[1], want);
        check("d out[1]", d[1], v[2] * x[0] + out[1] * v[0] + out[2].cos() * v[3]);
        check("d out[2]", d[2], v[3]);
        // Reverse: the seed w on out, pulled back to x and to out's entry values.
        let (mut o, mut dx, mut dout) = (out.clone(), vec![0.0], w.clone());
        written_through_rev(&x, &mut dx, &mut o, &mut dout);
        check("dx", dx[0], w[1] * out[1]);
        check("dout[1]", dout[1], w[1] * x[0]);
        check("dout[2]", dout[2], w[2] + w[1] * out[2].cos());
        check("dout[0]", dout[0], w[0]);
    }

    #[test]
    fn slices_reassigned_with_every_kind_of_range(
        (x, v, s0) in slice_case(-1.5, 1.5, 1..7, 0),
        s in seed(),
    ) {
        check_slice("ranges", (&x, &v, &s0, s), ranges, ranges_fwd, ranges_rev, ranges_o::<Dual64>);
    }
}
