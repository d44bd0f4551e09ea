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
    fn slices_reassigned_with_every_kind_of_range(
        (x, v, s0) in slice_case(-1.5, 1.5, 1..7, 0),
        s in seed(),
    ) {
        check_slice("ranges", (&x, &v, &s0, s), ranges, ranges_fwd, ranges_rev, ranges_o::<Dual64>);
    }
}
