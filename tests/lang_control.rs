//! Control flow of the supported language, in both modes, at random points, against a
//! num-dual oracle: counted `for` loops over ranges (inclusive, reversed, stepped),
//! `while`, `loop` with `break` and `continue`, labelled loops left from inner loops
//! (`break 'outer`, `continue 'outer`), early `return` from anywhere, nesting, values of
//! loops and labelled blocks (`break` with a value), branches that diverge, `match`,
//! `if let` and `let .. else` binding the values inside a constant enum or `Option`
//! parameter (with guards), and a Newton iteration.

// `return` as the last statement, index loops over ranges, `if let`, a `match` of one
// pattern and loops left by their first `break` are constructs under test.
#![allow(
    clippy::needless_return,
    clippy::needless_range_loop,
    clippy::manual_unwrap_or,
    clippy::never_loop,
    clippy::single_match
)]

mod lang_common;
mod nested_common;

use autodiff_core::prelude::*;
use lang_common::*;
use nested_common::{assert_all_close, fd_hvp, grad_of};
use proptest::prelude::*;

// ---------------------------------------------------------------- ranges

#[autodiff_forward(ranges_fwd, Dual, Dual)]
#[autodiff_reverse(ranges_rev, Duplicated, Active)]
fn ranges(x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        s += x[i] * x[i];
    }
    for i in 1..=n - 1 {
        s += x[i] * x[i - 1];
    }
    for i in (0..n).rev() {
        s = s * 0.5 + x[i]; // the order of the iterations matters
    }
    for i in (0..n).step_by(2) {
        s += x[i].sin() * s;
    }
    for i in (1..n).rev().step_by(2) {
        s = s * x[i] + 1.0;
    }
    for i in (0..=n - 1).rev() {
        s -= x[i] * 0.25 * i as f64;
    }
    for i in (0..n).rev().step_by(3) {
        s += x[i].cos();
    }
    s
}

fn ranges_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        s += x[i] * x[i];
    }
    for i in 1..n {
        s += x[i] * x[i - 1];
    }
    for i in (0..n).rev() {
        s = s * 0.5 + x[i];
    }
    for i in (0..n).step_by(2) {
        s += x[i].sin() * s;
    }
    for i in (1..n).rev().step_by(2) {
        s = s * x[i] + 1.0;
    }
    for i in (0..n).rev() {
        s -= x[i] * 0.25 * i as f64;
    }
    for i in (0..n).rev().step_by(3) {
        s += x[i].cos();
    }
    s
}

/// Range bounds from `Const` parameters, an unused loop variable, the loop variable as a
/// float.
#[autodiff_forward(counted_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(counted_rev, Active, Const, Const, Active)]
fn counted(x: f64, a: usize, b: usize) -> f64 {
    let mut p = 1.0;
    for _ in 0..b {
        p *= x;
    }
    let mut q = 0.0;
    for i in a..b {
        let fi = i as f64;
        q = q * x + fi;
    }
    for k in a..=b {
        q += (k as f64 * x).sin();
    }
    p + q
}

fn counted_o<D: Num>(x: D, a: usize, b: usize) -> D {
    let mut p = c::<D>(1.0);
    for _ in 0..b {
        p *= x;
    }
    let mut q = c::<D>(0.0);
    for i in a..b {
        q = q * x + i as f64;
    }
    for k in a..=b {
        q += (x * k as f64).sin();
    }
    p + q
}

// ---------------------------------------------------------------- while and loop

#[autodiff_forward(whiles_fwd, Dual, Dual)]
#[autodiff_reverse(whiles_rev, Duplicated, Active)]
fn whiles(x: &[f64]) -> f64 {
    let mut i = 0;
    let mut s = 0.0;
    while i < x.len() {
        s = s * x[i] + 1.0;
        i += 1;
    }
    // The number of iterations depends on the active value.
    while s.abs() > 0.5 {
        s *= 0.75;
    }
    let mut j = x.len();
    while j > 0 {
        j -= 1;
        s += x[j] * s;
    }
    s
}

fn whiles_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for xi in x {
        s = s * *xi + 1.0;
    }
    while s.re().abs() > 0.5 {
        s *= 0.75;
    }
    for xi in x.iter().rev() {
        s += *xi * s;
    }
    s
}

#[autodiff_forward(loops_fwd, Dual, Dual)]
#[autodiff_reverse(loops_rev, Duplicated, Active)]
fn loops(x: &[f64]) -> f64 {
    let mut i = 0;
    let mut s = 0.0;
    loop {
        if i >= x.len() {
            break;
        }
        let v = x[i];
        i += 1;
        if v < -0.5 {
            continue;
        }
        s += v * v * s + v;
        if s > 3.0 {
            break;
        }
    }
    for k in 0..x.len() {
        if x[k] > 0.5 {
            continue;
        }
        if s < -2.0 {
            break;
        }
        s -= x[k].exp() * 0.5;
    }
    let mut j = 0;
    while j < x.len() {
        j += 1;
        if j % 2 == 0 {
            continue;
        }
        s *= 1.0 + x[j - 1] * 0.1;
        if s.abs() > 10.0 {
            break;
        }
    }
    s
}

fn loops_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for v in x.iter().copied() {
        if v < -0.5 {
            continue;
        }
        s += v * v * s + v;
        if s > 3.0 {
            break;
        }
    }
    for xk in x {
        if *xk > 0.5 {
            continue;
        }
        if s < -2.0 {
            break;
        }
        s -= xk.exp() * 0.5;
    }
    for j in (1..=x.len()).step_by(2) {
        s *= x[j - 1] * 0.1 + 1.0;
        if s.re().abs() > 10.0 {
            break;
        }
    }
    s
}

// ---------------------------------------------------------------- early return

#[autodiff_forward(early_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(early_rev, Duplicated, Active, Active)]
fn early(x: &[f64], t: f64) -> f64 {
    let mut s = t;
    for i in 0..x.len() {
        if t > 1.5 {
            return t * t; // in the first iteration
        }
        s += x[i] * s;
        if s > 4.0 {
            return s.sqrt();
        }
        if s < -4.0 {
            return -s * t;
        }
    }
    let mut k = 0;
    while k < 3 {
        s = s.sin() + t;
        if s > 1.9 {
            return s * 2.0;
        }
        k += 1;
    }
    loop {
        s *= 0.5;
        if s.abs() < 0.1 {
            return s + x[0];
        }
    }
}

fn early_o<D: Num>(x: &[D], t: D) -> D {
    if t > 1.5 {
        return t * t;
    }
    let mut s = t;
    for xi in x {
        s += *xi * s;
        if s > 4.0 {
            return s.sqrt();
        }
        if s < -4.0 {
            return -s * t;
        }
    }
    for _ in 0..3 {
        s = s.sin() + t;
        if s > 1.9 {
            return s * 2.0;
        }
    }
    loop {
        s *= 0.5;
        if s.re().abs() < 0.1 {
            return s + x[0];
        }
    }
}

/// `match` arms that bind the scrutinee whole (`v if v > 0.0 => ..`, `w => ..`): the name
/// carries the scrutinee's derivative, in the guard and in the body; the scrutinee is a
/// computed value, then an element.
#[autodiff_forward(bound_fwd, Dual, Dual)]
#[autodiff_reverse(bound_rev, Active, Active)]
fn bound(x: f64) -> f64 {
    let y = match x * 2.0 {
        v if v > 1.0 => v * v,
        v if v < -1.0 => -v.sin(),
        w => w * 0.5 + x,
    };
    let xs = [x, y];
    let z = match xs[1] {
        0.0 => 1.0,
        u => u.exp() * x,
    };
    y + z
}

fn bound_o<D: Num>(x: D) -> D {
    let v = x * 2.0;
    let y = if v.re() > 1.0 {
        v * v
    } else if v.re() < -1.0 {
        -v.sin()
    } else {
        v * 0.5 + x
    };
    let z = if y.re() == 0.0 {
        c::<D>(1.0)
    } else {
        y.exp() * x
    };
    y + z
}

/// `return` in a `match` arm, in an `else` branch, and as the last statement.
#[autodiff_forward(returns_fwd, Dual, Const, Dual)]
#[autodiff_reverse(returns_rev, Active, Const, Active)]
fn returns(x: f64, k: usize) -> f64 {
    let a = x * x;
    match k {
        0 => return a,
        1 => {
            let b = a * x;
            if x > 0.0 {
                return b;
            }
        }
        _ => {}
    }
    let mut b = a;
    if x > 0.5 {
        b += 1.0;
    } else {
        b -= x;
        if k == 2 {
            return -a;
        }
    }
    let c = b * x.exp();
    if c > 2.0 {
        return c - b;
    } else if c < -1.0 {
        return c * 3.0;
    }
    return c + b;
}

fn returns_o<D: Num>(x: D, k: usize) -> D {
    let a = x * x;
    if k == 0 || (k == 1 && x > 0.0) {
        return if k == 0 { a } else { a * x };
    }
    if x.re() <= 0.5 && k == 2 {
        return -a;
    }
    let b = if x > 0.5 { a + 1.0 } else { a - x };
    let c = b * x.exp();
    if c > 2.0 {
        c - b
    } else if c < -1.0 {
        c * 3.0
    } else {
        c + b
    }
}

/// `return` inside the function's last expression: an `if` whose branch returns, a
/// `match` arm that returns, a final block with a `return` statement, a loop in a branch.
#[differentiable]
#[autodiff_forward(tail_returns_fwd, Dual, Const, Dual)]
#[autodiff_reverse(tail_returns_rev, Active, Const, Active)]
fn tail_returns(x: f64, k: usize) -> f64 {
    let y = x * 1.5;
    match k {
        0 => {
            if y > 0.5 {
                return y.sqrt();
            } else {
                y.exp()
            }
        }
        1 => return x * x * x,
        2 => {
            if y > 0.0 {
                return y.sin();
            }
            y.cos() * x
        }
        _ => {
            let mut s = x;
            for i in 0..4 {
                s = s * 0.5 + x;
                if s > 1.0 {
                    return s * i as f64;
                }
            }
            s * s
        }
    }
}

fn tail_returns_o<D: Num>(x: D, k: usize) -> D {
    let y = x * 1.5;
    match k {
        0 => {
            if y > 0.5 {
                y.sqrt()
            } else {
                y.exp()
            }
        }
        1 => x * x * x,
        2 => {
            if y > 0.0 {
                y.sin()
            } else {
                y.cos() * x
            }
        }
        _ => {
            let mut s = x;
            for i in 0..4 {
                s = s * 0.5 + x;
                if s > 1.0 {
                    return s * i as f64;
                }
            }
            s * s
        }
    }
}

/// [`tail_returns`] through a call, whose value goes on into arithmetic.
#[autodiff_forward(tail_caller_fwd, Dual, Const, Dual)]
#[autodiff_reverse(tail_caller_rev, Active, Const, Active)]
fn tail_caller(x: f64, k: usize) -> f64 {
    tail_returns(x, k) * 2.0 + x
}

// ---------------------------------------------------------------- nesting

#[autodiff_forward(nested_fwd, Dual, Const, Dual)]
#[autodiff_reverse(nested_rev, Duplicated, Const, Active)]
fn nested(x: &[f64], m: usize) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        let mut j = 0;
        while j < m {
            if j > i {
                break;
            }
            let mut acc = 0.0;
            let mut k = n;
            while k > j {
                k -= 1;
                if (n - 1 - k) % 2 == 1 || k == i {
                    continue;
                }
                acc += x[k] * x[i];
            }
            s += acc * 0.1;
            j += 1;
        }
        if i % 3 == 2 {
            continue;
        }
        let mut c = 0;
        loop {
            c += 1;
            s = s * 0.9 + x[i] * 0.1;
            if c >= 3 || s > 1.0 {
                break;
            }
        }
    }
    s
}

fn nested_o<D: Num>(x: &[D], m: usize) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        for j in 0..m.min(i + 1) {
            let mut acc = c::<D>(0.0);
            for k in (j..n).rev().step_by(2) {
                if k != i {
                    acc += x[k] * x[i];
                }
            }
            s += acc * 0.1;
        }
        if i % 3 == 2 {
            continue;
        }
        for _ in 0..3 {
            s = s * 0.9 + x[i] * 0.1;
            if s > 1.0 {
                break;
            }
        }
    }
    s
}

/// `return` from inside nested loops, with a value built across both.
#[autodiff_forward(nested_return_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(nested_return_rev, Duplicated, Active, Active)]
fn nested_return(x: &[f64], t: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let mut j = i;
        while j < x.len() {
            s += x[i] * x[j] * t;
            if s > 2.0 {
                return s * t + x[j];
            }
            j += 2;
        }
        s -= t * 0.25;
    }
    s.exp()
}

fn nested_return_o<D: Num>(x: &[D], t: D) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        for j in (i..x.len()).step_by(2) {
            s += x[i] * x[j] * t;
            if s > 2.0 {
                return s * t + x[j];
            }
        }
        s -= t * 0.25;
    }
    s.exp()
}

/// `for` loops nested in `for`, `while` and `if`, with `break`, `continue` and `return`.
#[autodiff_forward(nested_for_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(nested_for_rev, Duplicated, Active, Active)]
fn nested_for(x: &[f64], t: f64) -> f64 {
    if t > 1.4 {
        return t * t; // every loop below follows a possible return
    }
    let n = x.len();
    let mut s = t;
    for i in 0..n {
        for j in 0..n {
            s += x[i] * x[j] * 0.1;
        }
        let mut j = 0;
        while j < 2 {
            for k in (j..n).rev().step_by(2) {
                if k == i {
                    continue;
                }
                s -= x[k] * t * 0.05;
                if s < -3.0 {
                    break;
                }
            }
            j += 1;
        }
        if s > 0.0 {
            for k in 0..=i {
                s *= 1.0 + x[k] * 0.1;
                if s > 3.0 {
                    return s.ln();
                }
            }
        }
    }
    s
}

fn nested_for_o<D: Num>(x: &[D], t: D) -> D {
    if t > 1.4 {
        return t * t;
    }
    let n = x.len();
    let mut s = t;
    for i in 0..n {
        for j in 0..n {
            s += x[i] * x[j] * 0.1;
        }
        for j in 0..2 {
            for k in (j..n).rev().step_by(2) {
                if k == i {
                    continue;
                }
                s -= x[k] * t * 0.05;
                if s < -3.0 {
                    break;
                }
            }
        }
        if s > 0.0 {
            for k in 0..=i {
                s *= x[k] * 0.1 + 1.0;
                if s > 3.0 {
                    return s.ln();
                }
            }
        }
    }
    s
}

// ---------------------------------------------------------------- labelled loops

/// `continue 'outer` and `break 'outer` from an inner `for`, `continue 'mid` of a labelled
/// `while`, a labelled `loop` left by its own label, and a `return` inside all of them.
#[autodiff_forward(labelled_fwd, Dual, Dual)]
#[autodiff_reverse(labelled_rev, Duplicated, Active)]
fn labelled(x: &[f64]) -> f64 {
    let mut s = 0.0;
    'outer: for i in 0..x.len() {
        let mut k = 0;
        'mid: while k < 3 {
            k += 1;
            for j in 0..x.len() {
                if j > i {
                    continue 'outer;
                }
                if x[j] > 0.8 {
                    continue 'mid;
                }
                if s > 3.0 {
                    break 'outer;
                }
                if s < -4.0 {
                    return s * x[j];
                }
                s += x[i] * x[j].sin();
            }
            s *= 0.9;
        }
        s += x[i];
    }
    'l: loop {
        s += 0.25;
        if s > 0.0 {
            break 'l;
        }
    }
    s
}

fn labelled_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    // The same loops, with the labels spelled out as flags.
    let mut stop = false;
    for i in 0..x.len() {
        let mut k = 0;
        let mut next_i = false;
        while k < 3 && !next_i && !stop {
            k += 1;
            let mut next_k = false;
            for j in 0..x.len() {
                if j > i {
                    next_i = true;
                    break;
                }
                if x[j].re() > 0.8 {
                    next_k = true;
                    break;
                }
                if s.re() > 3.0 {
                    stop = true;
                    break;
                }
                if s.re() < -4.0 {
                    return s * x[j];
                }
                s += x[i] * x[j].sin();
            }
            if !next_i && !next_k && !stop {
                s *= 0.9;
            }
        }
        if stop {
            break;
        }
        if !next_i {
            s += x[i];
        }
    }
    loop {
        s += 0.25;
        if s.re() > 0.0 {
            break;
        }
    }
    s
}

// ---------------------------------------------------------------- values of loops and blocks

/// `break` with a value out of a `loop` (a scalar, and a tuple out of a labelled loop left
/// from an inner `for`), a labelled block's value from a `break` in an inner loop or from
/// its tail, a labelled block as a statement, a block whose value follows a possible
/// `return`, and an `if` and a `match` used as values with branches that diverge.
#[autodiff_forward(values_fwd, Dual, Dual)]
#[autodiff_reverse(values_rev, Duplicated, Active)]
fn values(x: &[f64]) -> f64 {
    let n = x.len();
    let mut k = 0;
    let first_big = loop {
        if k == n {
            break 0.5;
        }
        if x[k] > 0.3 {
            break x[k] * x[k];
        }
        k += 1;
    };
    let (lo, hi) = 'scan: loop {
        for i in 0..n {
            if x[i] < -0.5 {
                break 'scan (x[i], x[i].exp());
            }
        }
        break (first_big, 1.0);
    };
    let found = 'found: {
        for i in 0..n {
            if x[i] * lo > 0.2 {
                break 'found x[i].sin() * hi;
            }
        }
        if n > 3 {
            break 'found x[3] * first_big;
        }
        lo + hi * hi
    };
    let mut s = found;
    'once: {
        if s > 1.0 {
            break 'once;
        }
        s += lo * 0.5;
    }
    let w = {
        if s < -0.7 {
            return s * hi;
        }
        s * hi + 1.0
    };
    let z = if w > 1.8 { return w * lo } else { w * lo };
    let y = match k {
        0 => z * 2.0,
        1000.. => unreachable!("no slice is this long"),
        _ => z - s,
    };
    let t: f64 = loop {
        break y * y;
    };
    t + halvings(y)
}

fn values_o<D: Num>(x: &[D]) -> D {
    // The same computation, each value assigned where the original breaks.
    let n = x.len();
    let mut k = 0;
    let first_big;
    loop {
        if k == n {
            first_big = c::<D>(0.5);
            break;
        }
        if x[k].re() > 0.3 {
            first_big = x[k] * x[k];
            break;
        }
        k += 1;
    }
    let (mut lo, mut hi) = (first_big, c::<D>(1.0));
    for i in 0..n {
        if x[i].re() < -0.5 {
            (lo, hi) = (x[i], x[i].exp());
            break;
        }
    }
    let mut found = lo + hi * hi;
    let mut from_loop = false;
    for i in 0..n {
        if (x[i] * lo).re() > 0.2 {
            found = x[i].sin() * hi;
            from_loop = true;
            break;
        }
    }
    if !from_loop && n > 3 {
        found = x[3] * first_big;
    }
    let mut s = found;
    if s.re() <= 1.0 {
        s += lo * 0.5;
    }
    if s.re() < -0.7 {
        return s * hi;
    }
    let w = s * hi + 1.0;
    if w.re() > 1.8 {
        return w * lo;
    }
    let z = w * lo;
    let y = if k == 0 { z * 2.0 } else { z - s };
    y * y + halvings_o(y)
}

/// A loop's value as the function's value, from the `break` of a `loop` inside a `while`.
#[autodiff_forward(halvings_fwd, Dual, Dual)]
#[autodiff_reverse(halvings_rev, Active, Active)]
#[differentiable]
fn halvings(a: f64) -> f64 {
    let mut x = a.abs() + 3.0;
    let mut steps = 0;
    loop {
        while x > 2.0 {
            x *= 0.5;
            steps += 1;
        }
        if steps > 0 {
            break x * x + a;
        }
        x = x * 1.5 + a.sin();
    }
}

fn halvings_o<D: Num>(a: D) -> D {
    let mut x = a.abs() + 3.0;
    let mut steps = 0;
    loop {
        while x.re() > 2.0 {
            x *= 0.5;
            steps += 1;
        }
        if steps > 0 {
            return x * x + a;
        }
        x = x * 1.5 + a.sin();
    }
}

// ---------------------------------------------------------------- patterns that bind

/// An activation chosen by a constant parameter, some variants carrying constants.
#[derive(Clone, Copy, Debug)]
pub enum Activation {
    Relu,
    Tanh,
    Leaky(f64),
    Softplus { beta: f64, shift: f64 },
}

/// `match` binding the values inside a constant enum (tuple and struct variants, an `@`
/// binding with a range, a field left out with `..`), `if let` binding the value of a
/// constant `Option`, and a `match` binding a constant integer.
#[autodiff_forward(activations_fwd, Dual, Const, Const, Const, Dual)]
#[autodiff_reverse(activations_rev, Duplicated, Const, Const, Const, Active)]
fn activations(x: &[f64], act: Activation, tol: Option<f64>, k: usize) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += match act {
            Activation::Relu => v.max(0.0),
            Activation::Tanh => v.tanh(),
            Activation::Leaky(a) if a > 0.5 => a * v.sin(),
            Activation::Leaky(a) => {
                if *v > 0.0 {
                    *v
                } else {
                    a * v
                }
            }
            Activation::Softplus {
                beta,
                shift: c @ 0.0..=1.0,
            } => (beta * v).exp().ln_1p() / beta + c * v,
            Activation::Softplus { beta, .. } => (beta * v).exp().ln_1p() / beta,
        };
    }
    let eps = if let Some(t) = tol { t } else { 1e-3 };
    if let Some(t) = tol {
        s += t * x[0];
    }
    let p = match k {
        0 => 1.0,
        n if n > 2 && x[0] > 0.0 => 0.5 * x[0].powi(n as i32),
        n => x[0].powi(n as i32),
    };
    let q = match tol {
        Some(t) if t > x[0].abs() => x[0] / t,
        Some(t) => t * x[0].cos(),
        None => 0.0,
    };
    let Some(t) = tol else {
        return (s * s + eps).sqrt() + p;
    };
    (s * s + eps).sqrt() + p + q * t.sqrt()
}

const KNOTS: [f64; 3] = [0.0, 1.0, 2.0];

/// The knot interval holding `t`, if any.
fn bracket(t: f64) -> Option<usize> {
    if (0.0..2.0).contains(&t) {
        Some(t as usize)
    } else {
        None
    }
}

/// `if let` and `match` binding the value of `no_grad(..)`, a constant.
#[autodiff_forward(bracketed_fwd, Dual, Dual)]
#[autodiff_reverse(bracketed_rev, Active, Active)]
fn bracketed(t: f64) -> f64 {
    let a = if let Some(i) = no_grad(bracket(t)) {
        (t - KNOTS[i]) * t
    } else {
        t.sin()
    };
    let b = match no_grad(bracket(2.0 * t)) {
        Some(i) => (2.0 * t - KNOTS[i]).exp(),
        None => t,
    };
    a + b
}

fn bracketed_o<D: Num>(t: D) -> D {
    let a = match bracket(t.re()) {
        Some(i) => (t - KNOTS[i]) * t,
        None => t.sin(),
    };
    let b = match bracket(2.0 * t.re()) {
        Some(i) => (t * 2.0 - KNOTS[i]).exp(),
        None => t,
    };
    a + b
}

/// A `mut` binding of a value inside a constant by-value enum, changed in the arm.
#[autodiff_forward(shifted_fwd, Dual, Const, Dual)]
#[autodiff_reverse(shifted_rev, Active, Const, Active)]
fn shifted(x: f64, act: Activation) -> f64 {
    match act {
        Activation::Leaky(mut a) => {
            a += 1.0;
            a * x.sin()
        }
        _ => x,
    }
}

fn shifted_o<D: Num>(x: D, act: Activation) -> D {
    match act {
        Activation::Leaky(a) => x.sin() * (a + 1.0),
        _ => x,
    }
}

/// A layer's settings, passed by reference: an activation and an optional scale.
pub struct Settings {
    pub act: Activation,
    pub scale: Option<f64>,
    pub weight: f64,
}

/// Patterns binding the values inside struct parameters that are constant in the
/// companions: a `match` on a reference to an enum (`match act`, whose bindings are
/// references, read in a guard), on a field of a struct (`match cfg.act`), `if let` with
/// a `mut` binding on a field, and `let .. else` on a field behind `&`.
#[autodiff_forward(settings_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(settings_rev, Duplicated, Const, Const, Active)]
fn settings(x: &[f64], act: &Activation, cfg: &Settings) -> f64 {
    let mut s = 0.0;
    for v in x {
        // Bound through a reference: `a` and `beta` are `&f64`, as in plain Rust.
        s += match act {
            Activation::Leaky(a) if *a > 0.5 => a * v,
            Activation::Leaky(a) => v * *a * 2.0,
            Activation::Softplus { beta, .. } => (beta * v).exp().ln_1p() / beta,
            _ => v.tanh(),
        };
        s += match cfg.act {
            Activation::Leaky(a) if a > 0.5 => a * v.sin() * cfg.weight,
            Activation::Softplus { shift, .. } => shift * v * v,
            _ => *v,
        };
    }
    if let Some(mut k) = cfg.scale {
        k += 0.5;
        s *= k;
    }
    let Activation::Leaky(a) = &cfg.act else {
        return s;
    };
    s * a
}

impl Settings {
    /// A method matching fields of a constant `self`.
    #[autodiff_forward(apply_fwd, Const, Dual, Dual)]
    #[autodiff_reverse(apply_rev, Const, Active, Active)]
    fn apply(&self, x: f64) -> f64 {
        let y = match self.scale {
            Some(k) => (k * x).sin(),
            None => x * x,
        };
        match self.act {
            Activation::Leaky(a) => a * y,
            _ => y * self.weight,
        }
    }
}

fn settings_o<D: Num>(x: &[D], act: Activation, cfg: &Settings) -> D {
    let mut s = c::<D>(0.0);
    for v in x {
        s += match act {
            Activation::Leaky(a) if a > 0.5 => *v * a,
            Activation::Leaky(a) => *v * a * 2.0,
            Activation::Softplus { beta, .. } => (*v * beta).exp().ln_1p() / beta,
            _ => v.tanh(),
        };
        s += match cfg.act {
            Activation::Leaky(a) if a > 0.5 => v.sin() * a * cfg.weight,
            Activation::Softplus { shift, .. } => *v * *v * shift,
            _ => *v,
        };
    }
    if let Some(k) = cfg.scale {
        s *= k + 0.5;
    }
    match cfg.act {
        Activation::Leaky(a) => s * a,
        _ => s,
    }
}

fn apply_o<D: Num>(cfg: &Settings, x: D) -> D {
    let y = match cfg.scale {
        Some(k) => (x * k).sin(),
        None => x * x,
    };
    match cfg.act {
        Activation::Leaky(a) => y * a,
        _ => y * cfg.weight,
    }
}

/// A `match` on the fields of a `Duplicated` struct: an arm naming the whole float field
/// carries its derivative into the shadow, literal arms on an integer field bind nothing.
pub struct Gains {
    pub w: f64,
    pub n: usize,
}

#[autodiff_reverse(gains_rev, Active, Duplicated, Active)]
fn gains(x: f64, g: &Gains) -> f64 {
    let a = match g.w {
        v if v > 0.0 => v * x,
        v => -v * x * x,
    };
    let b = match g.n {
        0 => 1.0,
        1 => x,
        _ => x * x,
    };
    a + b
}

fn gains_o<D: Num>(x: D, w: D, n: usize) -> D {
    let a = if w.re() > 0.0 { w * x } else { -w * x * x };
    let b = match n {
        0 => c(1.0),
        1 => x,
        _ => x * x,
    };
    a + b
}

/// The gradient of `activations`, differentiated again: H·v through the bindings, guards
/// and `let .. else` of the companion, read back.
#[autodiff_forward(activations_hvp, Dual, Const, Const, Const, Dual)]
fn activations_gradient(x: &[f64], act: Activation, tol: Option<f64>, k: usize, g: &mut [f64]) {
    g.fill(0.0);
    activations_rev(x, g, act, tol, k, 1.0);
}

fn activations_o<D: Num>(x: &[D], act: Activation, tol: Option<f64>, k: usize) -> D {
    let mut s = c::<D>(0.0);
    for v in x {
        s += match act {
            Activation::Relu => {
                if v.re() > 0.0 {
                    *v
                } else {
                    c(0.0)
                }
            }
            Activation::Tanh => v.tanh(),
            Activation::Leaky(a) if a > 0.5 => v.sin() * a,
            Activation::Leaky(a) => {
                if v.re() > 0.0 {
                    *v
                } else {
                    *v * a
                }
            }
            Activation::Softplus { beta, shift } => {
                let c = if (0.0..=1.0).contains(&shift) {
                    shift
                } else {
                    0.0
                };
                (*v * beta).exp().ln_1p() / beta + *v * c
            }
        };
    }
    let eps = tol.unwrap_or(1e-3);
    if let Some(t) = tol {
        s += x[0] * t;
    }
    let p = if k == 0 {
        c(1.0)
    } else if k > 2 && x[0].re() > 0.0 {
        x[0].powi(k as i32) * 0.5
    } else {
        x[0].powi(k as i32)
    };
    let q = match tol {
        Some(t) if t > x[0].re().abs() => x[0] / t,
        Some(t) => x[0].cos() * t,
        None => c(0.0),
    };
    match tol {
        None => (s * s + eps).sqrt() + p,
        Some(t) => (s * s + eps).sqrt() + p + q * t.sqrt(),
    }
}

fn activation(i: usize) -> Activation {
    [
        Activation::Relu,
        Activation::Tanh,
        Activation::Leaky(0.1),
        Activation::Leaky(0.75),
        Activation::Softplus {
            beta: 2.0,
            shift: 0.5,
        },
        Activation::Softplus {
            beta: 1.5,
            shift: 3.0,
        },
    ][i]
}

// ---------------------------------------------------------------- Newton iteration

#[autodiff_forward(newton_sqrt_fwd, Dual, Dual)]
#[autodiff_reverse(newton_sqrt_rev, Active, Active)]
fn newton_sqrt(a: f64) -> f64 {
    let mut x = if a > 1.0 { a } else { 1.0 };
    let mut it = 0;
    while (x * x - a).abs() > 1e-14 * a && it < 60 {
        x = 0.5 * (x + a / x);
        it += 1;
    }
    x
}

fn newton_sqrt_o<D: Num>(a: D) -> D {
    let mut x = if a > 1.0 { a } else { c(1.0) };
    let mut it = 0;
    while (x.re() * x.re() - a.re()).abs() > 1e-14 * a.re() && it < 60 {
        x = (x + a / x) * 0.5;
        it += 1;
    }
    x
}

// ---------------------------------------------------------------- conditions that change values

/// One Newton step for `sqrt(a)` in place; its size.
#[differentiable]
fn newton_step(y: &mut f64, a: f64) -> f64 {
    let old = *y;
    *y = 0.5 * (*y + a / *y);
    (old - *y).abs()
}

/// Steps made in conditions: `while`, `if`, a `match` scrutinee, a `bool` bound by
/// `let`, a negated test and the do-while idiom `while { ..; test } {}`. Each changes `y`
/// or `s`, whose derivatives the conditions must carry on.
// Tests with effects, negated and in blocks, are the constructs under test.
#[allow(
    clippy::neg_cmp_op_on_partial_ord,
    clippy::blocks_in_conditions,
    clippy::assign_op_pattern
)]
#[autodiff_forward(stepped_in_conditions_fwd, Dual, Dual)]
#[autodiff_reverse(stepped_in_conditions_rev, Active, Active)]
fn stepped_in_conditions(a: f64) -> f64 {
    let mut y = 1.0;
    let mut k = 0;
    while newton_step(&mut y, a) > 1e-3 && k < 3 {
        k += 1;
    }
    if newton_step(&mut y, a) < 0.0 {
        y = 0.0;
    }
    let r = match newton_step(&mut y, a) > 1e9 {
        true => 1.0,
        false => 0.0,
    };
    let big = newton_step(&mut y, a) > 1e9;
    if !(newton_step(&mut y, a) >= 0.0) || big {
        y = 0.0;
    }
    let mut s = y;
    let mut m = 0;
    while {
        s = s * y;
        m += 1;
        m < 2
    } {}
    if {
        s = s * a;
        s > 1e9
    } {
        s = 0.0;
    }
    y + s + r
}

fn stepped_in_conditions_o<D: Num>(a: D) -> D {
    let step = |y: &mut D| {
        let old = *y;
        *y = (*y + a / *y) * 0.5;
        (old - *y).abs()
    };
    let mut y = c::<D>(1.0);
    let mut k = 0;
    while step(&mut y).re() > 1e-3 && k < 3 {
        k += 1;
    }
    for _ in 0..4 {
        step(&mut y);
    }
    let s = y * y * y * a;
    y + s
}

/// A Jacobi sweep of `(4 I + offsets) u = b` in place, returning the largest change.
#[differentiable]
fn jacobi_sweep(b: &[f64], u: &mut [f64]) -> f64 {
    let old = [u[0], u[1]];
    u[0] = (b[0] - old[1]) / 4.0;
    u[1] = (b[1] - old[0]) / 4.0;
    (u[0] - old[0]).abs().max((u[1] - old[1]).abs())
}

#[autodiff_forward(jacobi_fwd, Dual, Dual)]
#[autodiff_reverse(jacobi_rev, Duplicated, Active)]
fn jacobi(b: &[f64]) -> f64 {
    let mut u = vec![0.0; 2];
    let mut k = 0;
    while jacobi_sweep(b, &mut u) > 1e-14 && k < 200 {
        k += 1;
    }
    u[0] + 2.0 * u[1]
}

/// A state whose `&mut self` step returns the time reached.
#[derive(Clone, Debug)]
#[differentiable]
pub struct Clock {
    pub pos: f64,
    pub vel: f64,
    pub t: f64,
}

#[differentiable]
impl Clock {
    fn advance(&mut self, dt: f64) -> f64 {
        self.vel -= dt * self.pos * (1.0 + self.pos * self.pos);
        self.pos += dt * self.vel;
        self.t += dt;
        self.t
    }
}

/// Changes made by a `&mut self` method called in conditions and comparisons (also on
/// the right of `&&`, which runs only while the left holds), by a function given a `&mut`
/// parameter in a comparison, and by a call inside an integer cast (`(grow(..) * 10.0)
/// as i64`, evaluated once).
#[autodiff_forward(changed_by_methods_fwd, Dual, Dual)]
#[autodiff_reverse(changed_by_methods_rev, Duplicated, Active)]
fn changed_by_methods(x: &[f64]) -> f64 {
    let mut c = Clock {
        pos: x[0],
        vel: x[1],
        t: 0.0,
    };
    while c.advance(0.1) < 0.25 {}
    let _late = c.advance(0.05) > 1.0;
    // The right operand runs once: the second time the left fails.
    let mut k = 0;
    while k < 1 && c.advance(0.05) > 0.0 {
        k += 1;
    }
    let mut y = x[0];
    let k = (newton_step(&mut y, 2.0) * 10.0) as i64;
    c.pos * c.vel + nudged(&mut c, x[1]) + y * (k as f64)
}

#[differentiable]
fn nudged(c: &mut Clock, a: f64) -> f64 {
    let _ = nudge(c, a) > 0.0;
    c.pos
}

#[differentiable]
fn nudge(c: &mut Clock, a: f64) -> f64 {
    c.pos += a * c.vel;
    c.pos
}

fn changed_by_methods_o<D: Num>(x: &[D]) -> D {
    let (mut pos, mut vel, mut t) = (x[0], x[1], 0.0);
    let mut advance = |dt: f64| {
        vel -= pos * (pos * pos + 1.0) * dt;
        pos += vel * dt;
        t += dt;
        t
    };
    while advance(0.1) < 0.25 {}
    advance(0.05);
    advance(0.05);
    let mut y = x[0];
    let old = y;
    y = (y + c::<D>(2.0) / y) * 0.5;
    let k = ((old - y).abs().re() * 10.0) as i64;
    let before = pos * vel;
    pos += x[1] * vel;
    before + pos + y * c::<D>(k as f64)
}

// ---------------------------------------------------------------- destructuring assignment

/// `let y;` assigned later, in each branch or in a loop's body.
// Late initialisation is the construct under test.
#[allow(clippy::needless_late_init)]
#[autodiff_forward(deferred_fwd, Dual, Dual)]
#[autodiff_reverse(deferred_rev, Duplicated, Active)]
fn deferred(x: &[f64]) -> f64 {
    let y;
    if x[0] > 0.0 {
        y = x[0] * x[x.len() - 1];
    } else {
        y = x[0].sin();
    }
    let z: f64;
    z = y * x[0];
    let mut s = 0.0;
    for v in x {
        let t;
        t = v * z;
        s += t;
    }
    s + y
}

fn deferred_o<D: Num>(x: &[D]) -> D {
    let y = if x[0].re() > 0.0 {
        x[0] * x[x.len() - 1]
    } else {
        x[0].sin()
    };
    let z = y * x[0];
    let mut s = c::<D>(0.0);
    for v in x {
        s += *v * z;
    }
    s + y
}

#[differentiable]
fn rotated(a: f64, b: f64, t: f64) -> (f64, f64) {
    (a * t.cos() - b * t.sin(), a * t.sin() + b * t.cos())
}

/// `(a, b) = (b, f(a, b))`: every value on the right is read before any place on the left
/// is written, with scalars, elements of a local buffer, `_`, a nested tuple and a call
/// returning a pair, a `#[differentiable]` helper returning a pair, an array written in
/// place (`[a, b] = [b, a]`); and `std::mem::replace` of a scalar and of an element.
#[autodiff_forward(recurrence_fwd, Dual, Dual)]
#[autodiff_reverse(recurrence_rev, Duplicated, Active)]
fn recurrence(x: &[f64]) -> f64 {
    let (mut a, mut b) = (1.0, 0.5);
    let mut w = vec![0.0; x.len() + 1];
    for i in 0..x.len() {
        (a, b) = (b, a * 0.5 + b * x[i]);
        (w[i], w[i + 1]) = (w[i + 1] + b, x[i] * a);
        (a, (b, _)) = (a.sin() + w[i], (b * w[i + 1], a));
        if i % 2 == 1 {
            (a, b) = (b, a);
            (w[i - 1], w[i + 1]) = (w[i + 1], w[i - 1]);
        }
    }
    let (mut s, mut c) = (0.0, 0.0);
    (s, c) = (a * b + s * c).sin_cos();
    (c, s) = (s, c * w[0]);
    let old = std::mem::replace(&mut a, s * 2.0);
    let w0 = std::mem::replace(&mut w[0], old);
    (a, b) = rotated(a, b, x.first().copied().unwrap_or(0.5));
    [a, b] = [b * 0.5, a];
    s + c + a * w0 + w[0] + b
}

fn recurrence_o<D: Num>(x: &[D]) -> D {
    let (mut a, mut b) = (c::<D>(1.0), c::<D>(0.5));
    let mut w = vec![c::<D>(0.0); x.len() + 1];
    for i in 0..x.len() {
        let (a1, b1) = (b, a * 0.5 + b * x[i]);
        let w1 = (w[i + 1] + b1, x[i] * a1);
        (w[i], w[i + 1]) = w1;
        (a, b) = ((a1).sin() + w[i], b1 * w[i + 1]);
        if i % 2 == 1 {
            std::mem::swap(&mut a, &mut b);
            w.swap(i - 1, i + 1);
        }
    }
    let (s, c) = (a * b).sin_cos();
    let (c, s) = (s, c * w[0]);
    let (a2, w0) = (s * 2.0, w[0]);
    let t = x.first().copied().unwrap_or(lang_common::c::<D>(0.5));
    let (ra, rb) = (a2 * t.cos() - b * t.sin(), a2 * t.sin() + b * t.cos());
    s + c + rb * 0.5 * w0 + a + ra
}

/// `std::mem::take` of a local vector (which is left empty and filled again) and of a
/// float (left zero).
#[autodiff_forward(taken_fwd, Dual, Dual)]
#[autodiff_reverse(taken_rev, Duplicated, Active)]
fn taken(x: &[f64]) -> f64 {
    let mut v = vec![x[0] * x[1], x[1].sin()];
    let t = std::mem::take(&mut v);
    v.push(t[0] * 2.0);
    let mut s = 3.0 * x[0];
    let old = std::mem::take(&mut s);
    t[1] * v[0] + old * x[1] + s + v.len() as f64
}

fn taken_o<D: Num>(x: &[D]) -> D {
    x[1].sin() * x[0] * x[1] * 2.0 + x[0] * x[1] * 3.0 + c::<D>(1.0)
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(config())]

    #[test]
    fn for_over_ranges_inclusive_reversed_stepped((x, v, s0) in slice_case(-1.0, 1.0, 1..9, 0), s in seed()) {
        check_slice("ranges", (&x, &v, &s0, s), ranges, ranges_fwd, ranges_rev, ranges_o::<Dual64>);
    }

    #[test]
    fn for_with_const_bounds(x in float(-1.5, 1.5), v in dir(), s in seed(), a in 0usize..4, b in 0usize..6) {
        check1(
            "counted",
            (x, v, s),
            |x| counted(x, a, b),
            |x, dx| counted_fwd(x, dx, a, b),
            |x, s| counted_rev(x, a, b, s),
            |x| counted_o(x, a, b),
        );
    }

    #[test]
    fn labelled_loops_left_from_inner_loops((x, v, s0) in slice_case(-2.0, 2.0, 0..9, 0), s in seed()) {
        check_slice("labelled", (&x, &v, &s0, s), labelled, labelled_fwd, labelled_rev, labelled_o::<Dual64>);
    }

    #[test]
    fn values_of_loops_blocks_and_diverging_branches((x, v, s0) in slice_case(-1.0, 1.0, 0..7, 0), s in seed()) {
        check_slice("values", (&x, &v, &s0, s), values, values_fwd, values_rev, values_o::<Dual64>);
    }

    #[test]
    fn a_loop_value_as_the_function_value(a in float(-3.0, 3.0), v in dir(), s in seed()) {
        check1("halvings", (a, v, s), halvings, halvings_fwd, halvings_rev, halvings_o);
    }

    #[test]
    fn deferred_initialisation((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice("deferred", (&x, &v, &s0, s), deferred, deferred_fwd, deferred_rev, deferred_o::<Dual64>);
        check_hvp_of::<deferred_rev>(&x, &v, deferred_o);
    }

    #[test]
    fn destructuring_assignments((x, v, s0) in slice_case(-1.0, 1.0, 0..7, 0), s in seed()) {
        check_slice("recurrence", (&x, &v, &s0, s), recurrence, recurrence_fwd, recurrence_rev, recurrence_o::<Dual64>);
        check_hvp_of::<recurrence_rev>(&x, &v, recurrence_o);
        if x.len() >= 2 {
            check_slice("taken", (&x, &v, &s0, s), taken, taken_fwd, taken_rev, taken_o::<Dual64>);
        }
    }

    #[test]
    fn hessian_vector_products_through_loop_and_block_values((x, v, _s0) in slice_case(-1.0, 1.0, 1..7, 0)) {
        let hv = autodiff_core::hvp::<values_rev>(&x, &v);
        assert_all_close("values H·v", &hv, &fd_hvp(grad_of(values_rev), &x, &v), 1e-6);
    }

    #[test]
    fn patterns_binding_constant_parameters(
        (x, v, s0) in slice_case(-1.5, 1.5, 1..8, 0),
        s in seed(),
        which in 0usize..6,
        tol in prop::option::of(0.01..1.0f64),
        k in 0usize..5,
    ) {
        let act = activation(which);
        check_slice(
            "activations",
            (&x, &v, &s0, s),
            |x| activations(x, act, tol, k),
            |x, d| activations_fwd(x, d, act, tol, k),
            |x, b, s| activations_rev(x, b, act, tol, k, s),
            |d| activations_o::<Dual64>(d, act, tol, k),
        );
    }

    #[test]
    fn patterns_binding_constant_struct_parameters(
        (x, v, s0) in slice_case(-1.5, 1.5, 1..8, 0),
        s in seed(),
        (which, other) in (0usize..6, 0usize..6),
        scale in prop::option::of(0.1..2.0f64),
        weight in -2.0..2.0f64,
    ) {
        let act = activation(which);
        let cfg = Settings { act: activation(other), scale, weight };
        check_slice(
            "settings",
            (&x, &v, &s0, s),
            |x| settings(x, &act, &cfg),
            |x, d| settings_fwd(x, d, &act, &cfg),
            |x, b, s| settings_rev(x, b, &act, &cfg, s),
            |d| settings_o::<Dual64>(d, act, &cfg),
        );
        let t = x[0];
        let want = apply_o(&cfg, Dual64::new(t, 1.0));
        check("apply", cfg.apply(t), want.re);
        let (p, d) = cfg.apply_fwd(t, 1.0);
        check("apply forward", p, want.re);
        check("apply tangent", d, want.eps);
        let (p, g) = cfg.apply_rev(t, s);
        check("apply reverse", p, want.re);
        check("apply gradient", g, want.eps * s);
    }

    #[test]
    fn hessian_vector_products_through_bindings_and_guards(
        (x, v, _s0) in slice_case(-1.5, 1.5, 1..8, 0),
        which in 0usize..6,
        tol in prop::option::of(0.01..1.0f64),
        k in 0usize..5,
    ) {
        let act = activation(which);
        let (mut g, mut hv) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        activations_hvp(&x, &v, act, tol, k, &mut g, &mut hv);
        let grad = |z: &[f64]| {
            let mut g = vec![0.0; z.len()];
            activations_gradient(z, act, tol, k, &mut g);
            g
        };
        assert_all_close("activations H·v", &hv, &fd_hvp(grad, &x, &v), 1e-5);
    }

    #[test]
    fn while_loops((x, v, s0) in slice_case(-1.5, 1.5, 0..9, 0), s in seed()) {
        check_slice("whiles", (&x, &v, &s0, s), whiles, whiles_fwd, whiles_rev, whiles_o::<Dual64>);
    }

    #[test]
    fn loop_break_and_continue((x, v, s0) in slice_case(-1.0, 1.0, 0..9, 0), s in seed()) {
        check_slice("loops", (&x, &v, &s0, s), loops, loops_fwd, loops_rev, loops_o::<Dual64>);
    }

    #[test]
    fn loop_break_and_continue_large_values((x, v, s0) in slice_case(0.5, 2.5, 1..9, 0), s in seed()) {
        check_slice("loops", (&x, &v, &s0, s), loops, loops_fwd, loops_rev, loops_o::<Dual64>);
    }

    #[test]
    fn early_return_from_loops(
        (x, v, s0) in slice_case(-1.0, 1.5, 1..7, 1), t in float(-2.0, 2.0), s in seed(),
    ) {
        check_slice_scalar("early", (&x, t, &v, &s0, s), early, early_fwd, early_rev, early_o::<Dual64>);
    }

    #[test]
    fn patterns_binding_a_value_without_derivative(x in float(-1.0, 2.5), v in dir(), s in seed()) {
        check1("bracketed", (x, v, s), bracketed, bracketed_fwd, bracketed_rev, bracketed_o);
    }

    #[test]
    fn match_arms_binding_the_scrutinee(x in float(-1.5, 1.5), v in dir(), s in seed()) {
        check1("bound", (x, v, s), bound, bound_fwd, bound_rev, bound_o);
    }

    #[test]
    fn mut_bindings_of_constant_values(x in float(-1.5, 1.5), v in dir(), s in seed(), which in 0usize..6) {
        let act = activation(which);
        check1(
            "shifted",
            (x, v, s),
            |x| shifted(x, act),
            |x, dx| shifted_fwd(x, dx, act),
            |x, s| shifted_rev(x, act, s),
            |x| shifted_o(x, act),
        );
    }

    #[test]
    fn match_arms_on_fields_of_a_duplicated_struct(x in float(-1.5, 1.5), w in float(-2.0, 2.0), n in 0usize..3, s in seed()) {
        let mut dg = Gains { w: 0.25, n: 0 };
        let (f, dx) = gains_rev(x, &Gains { w, n }, &mut dg, s);
        let (want, grad) = oracle_grad(|d| gains_o(d[0], d[1], n), &[x, w]);
        check("gains", f, want);
        check("gains ∂x", dx, grad[0] * s);
        check("gains ∂w", dg.w - 0.25, grad[1] * s);
    }

    #[test]
    fn return_in_match_arms_and_else_branches(x in float(-2.0, 2.0), v in dir(), s in seed(), k in 0usize..4) {
        check1(
            "returns",
            (x, v, s),
            |x| returns(x, k),
            |x, dx| returns_fwd(x, dx, k),
            |x, s| returns_rev(x, k, s),
            |x| returns_o(x, k),
        );
    }

    #[test]
    fn return_inside_the_last_expression(x in float(-2.0, 2.0), v in dir(), s in seed(), k in 0usize..4) {
        check1(
            "tail_returns",
            (x, v, s),
            |x| tail_returns(x, k),
            |x, dx| tail_returns_fwd(x, dx, k),
            |x, s| tail_returns_rev(x, k, s),
            |x| tail_returns_o(x, k),
        );
        check1(
            "tail_caller",
            (x, v, s),
            |x| tail_caller(x, k),
            |x, dx| tail_caller_fwd(x, dx, k),
            |x, s| tail_caller_rev(x, k, s),
            |x| tail_returns_o(x, k) * 2.0 + x,
        );
    }

    #[test]
    fn nested_loops((x, v, s0) in slice_case(-1.0, 1.5, 0..8, 0), s in seed(), m in 0usize..4) {
        check_slice(
            "nested",
            (&x, &v, &s0, s),
            |x| nested(x, m),
            |x, dx| nested_fwd(x, dx, m),
            |x, dx, s| nested_rev(x, dx, m, s),
            |x| nested_o(x, m),
        );
    }

    #[test]
    fn return_from_nested_loops(
        (x, v, s0) in slice_case(-1.0, 1.5, 0..7, 1), t in float(-1.5, 1.5), s in seed(),
    ) {
        check_slice_scalar(
            "nested_return",
            (&x, t, &v, &s0, s),
            nested_return,
            nested_return_fwd,
            nested_return_rev,
            nested_return_o::<Dual64>,
        );
    }

    #[test]
    fn for_loops_nested_in_loops_and_branches(
        (x, v, s0) in slice_case(-1.5, 1.5, 0..7, 1), t in float(-1.5, 1.5), s in seed(),
    ) {
        check_slice_scalar(
            "nested_for",
            (&x, t, &v, &s0, s),
            nested_for,
            nested_for_fwd,
            nested_for_rev,
            nested_for_o::<Dual64>,
        );
    }

    #[test]
    fn conditions_that_change_values(a in float(0.5, 4.0), v in dir(), s in seed()) {
        check1(
            "stepped_in_conditions",
            (a, v, s),
            stepped_in_conditions,
            stepped_in_conditions_fwd,
            stepped_in_conditions_rev,
            stepped_in_conditions_o::<Dual64>,
        );
    }

    #[test]
    fn changes_by_methods_in_conditions_and_casts(x in vecf(0.5, 1.5, 2), v in dirs(2), s in seed()) {
        check_slice(
            "changed_by_methods",
            (&x, &v, &[0.0, 0.0], s),
            changed_by_methods,
            changed_by_methods_fwd,
            changed_by_methods_rev,
            changed_by_methods_o::<Dual64>,
        );
    }

    #[test]
    fn a_solver_iterated_in_a_while_condition(b in vecf(-2.0, 2.0, 2), v in dirs(2), s in seed()) {
        // (4 I + J) u = b, J the exchange: u = (4 b - J b) / 15.
        let oracle = |b: &[Dual64]| (b[0] * 4.0 - b[1] + (b[1] * 4.0 - b[0]) * 2.0) / 15.0;
        check_slice("jacobi", (&b, &v, &[0.0, 0.0], s), jacobi, jacobi_fwd, jacobi_rev, oracle);
    }

    #[test]
    fn newton_iteration_for_sqrt(a in float(0.01, 100.0), v in dir(), s in seed()) {
        check1("newton_sqrt", (a, v, s), newton_sqrt, newton_sqrt_fwd, newton_sqrt_rev, newton_sqrt_o::<Dual64>);
        // The derivative of the converged iteration is that of sqrt.
        let (_, g) = newton_sqrt_rev(a, 1.0);
        check("d sqrt(a) / da", g, 0.5 / a.sqrt());
    }
}

/// Let chains: `if let .. && ..` and `if .. && let .. && ..`, with and without `else`.
#[autodiff_forward(chained_fwd, Dual, Dual)]
#[autodiff_reverse(chained_rev, Duplicated, Active)]
fn chained(x: &[f64]) -> f64 {
    let mut s = x[1] * x[1];
    if let Some(v) = x.first()
        && *v > 0.0
    {
        s += v * v * x[1];
    } else {
        s -= x[1];
    }
    if x[1] > 0.0
        && let Some(w) = x.get(2)
        && *w < 1.0
    {
        s += w.sin();
    }
    s
}

fn chained_o<D: Num>(x: &[D]) -> D {
    let mut s = x[1] * x[1];
    if x[0].re() > 0.0 {
        s += x[0] * x[0] * x[1];
    } else {
        s -= x[1];
    }
    if x[1].re() > 0.0 && x.len() > 2 && x[2].re() < 1.0 {
        s += x[2].sin();
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn let_chains(case in slice_seed_case(-1.5, 1.5, 2..5)) {
        let (x, v, s0, s) = case;
        check_slice("chained", (&x, &v, &s0, s), chained, chained_fwd, chained_rev, chained_o::<Dual64>);
        check_hvp_of::<chained_rev>(&x, &v, chained_o);
    }
}

/// A gate whose method is differentiable: called on unit variants written in place
/// (`Gate::Tanh.apply(x)`) and bound with `let`, and a unit variant passed by value.
#[derive(Clone, Copy, Debug, PartialEq)]
#[differentiable]
pub enum Gate {
    Open,
    Tanh,
    Scaled(f64),
}

impl Gate {
    #[differentiable]
    fn apply(&self, z: f64) -> f64 {
        if matches!(self, Gate::Tanh) {
            z.tanh()
        } else {
            z * z
        }
    }
}

#[differentiable]
fn gate(g: Gate, z: f64) -> f64 {
    match g {
        Gate::Tanh => z.sin(),
        Gate::Scaled(s) => s * z,
        Gate::Open => z,
    }
}

#[autodiff_forward(gated_fwd, Dual, Dual)]
#[autodiff_reverse(gated_rev, Active, Active)]
fn gated(x: f64) -> f64 {
    let open = Gate::Open;
    let passed = Gate::Open;
    open.apply(x) + Gate::Tanh.apply(x) + gate(passed, x) + gate(Gate::Tanh, x)
}

fn gated_o<D: Num>(x: D) -> D {
    x * x + x.tanh() + x + x.sin()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn methods_of_unit_variants(x in float(-1.5, 1.5), v in dir(), s in seed()) {
        check1("gated", (x, v, s), gated, gated_fwd, gated_rev, gated_o::<Dual64>);
    }
}

// ---------------------------------------------------------------- slice patterns

/// Slice patterns on a slice's windows, chunks and itself: `if let [a, b, c]`, a `match`
/// over chunks of every length (`[a]`, `[a, b]`, `[first, .., last]`, `[]`), `let ..
/// else` with `rest @ ..` and with `&[.., y, z]` (elements by value), and a `match` on
/// `*x` binding `mut p` with a `_` arm.
#[autodiff_forward(slice_patterns_fwd, Dual, Dual)]
#[autodiff_reverse(slice_patterns_rev, Duplicated, Active)]
fn slice_patterns(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for w in x.windows(3) {
        if let [a, b, c] = w {
            s += a * b * c;
        }
    }
    for w in x.chunks(4) {
        s += match w {
            [a] => a * 2.0,
            [a, b] => a * b,
            [first, .., last] => first.sin() * last,
            [] => 0.0,
        };
    }
    let [h, rest @ ..] = x else {
        return 0.0;
    };
    let &[.., y, z] = x else {
        return s * 0.5;
    };
    let t: f64 = rest.iter().map(|v| v * h).sum();
    match *x {
        [mut p, q, ..] => {
            p += 1.0;
            s += p * q;
        }
        _ => {}
    }
    s + t + y * z
}

fn slice_patterns_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for w in x.windows(3) {
        s += w[0] * w[1] * w[2];
    }
    for w in x.chunks(4) {
        s += match w.len() {
            1 => w[0] * 2.0,
            2 => w[0] * w[1],
            n => w[0].sin() * w[n - 1],
        };
    }
    let n = x.len();
    if n < 2 {
        return s * 0.5;
    }
    let t = x[1..].iter().fold(c::<D>(0.0), |t, v| t + *v * x[0]);
    s + (x[0] + 1.0) * x[1] + t + x[n - 2] * x[n - 1]
}

// ---------------------------------------------------------------- Option locals

/// `let mut` locals of an `Option` of a number: the previous element (`if let Some(p)`,
/// its type written), the best so far (`is_none_or`, `unwrap_or`, `map_or`, its type
/// inferred), an index found once (`is_none`, `match`, an integer inferred), a product
/// started as `Some(1.0)` (`unwrap`, `let .. else`).
#[autodiff_forward(option_locals_fwd, Dual, Dual)]
#[autodiff_reverse(option_locals_rev, Duplicated, Active)]
fn option_locals(x: &[f64]) -> f64 {
    let mut prev: Option<f64> = None;
    let mut best = None;
    let mut s = 0.0;
    for &v in x {
        if let Some(p) = prev {
            s += (v - p).powi(2);
        }
        prev = Some(v);
        if best.is_none_or(|b| v * v > b) {
            best = Some(v * v);
        }
    }
    let mut found = None;
    for i in 0..x.len() {
        if x[i] > 0.0 && found.is_none() {
            found = Some(i);
        }
    }
    let first_positive = match found {
        Some(i) => x[i].sin(),
        None => 0.5,
    };
    let mut product = Some(1.0);
    for &v in x {
        if v < 0.0 {
            product = Some(product.unwrap() * (1.0 + v * v));
        }
    }
    let Some(p) = product else {
        return 0.0;
    };
    s + best.unwrap_or(0.0) * 2.0 + best.map_or(1.0, |b| (b + 1.0).sqrt()) + first_positive + p
        - prev.unwrap()
}

fn option_locals_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for w in x.windows(2) {
        s += (w[1] - w[0]) * (w[1] - w[0]);
    }
    // The first of the largest squares, as `v * v > b` keeps it.
    let mut best = x[0] * x[0];
    for &v in x {
        if (v * v).re() > best.re() {
            best = v * v;
        }
    }
    let first_positive = match x.iter().find(|v| v.re() > 0.0) {
        Some(v) => v.sin(),
        None => c(0.5),
    };
    let p = x
        .iter()
        .filter(|v| v.re() < 0.0)
        .fold(c::<D>(1.0), |p, v| p * (*v * *v + 1.0));
    s + best * 2.0 + (best + 1.0).sqrt() + first_positive + p - x[x.len() - 1]
}

/// `Option` locals of a tuple: the largest element and its index (untyped, through
/// `map_or` with a tuple closure, then `unwrap` taken apart), the smallest (typed, a
/// `match` with a guard and `_`), a pair started as `Some(..)` (`let .. else`), and the
/// previous pair read by `if let Some((j, p))`.
#[autodiff_forward(option_tuples_fwd, Dual, Dual)]
#[autodiff_reverse(option_tuples_rev, Duplicated, Active)]
#[allow(clippy::unnecessary_map_or)] // (the form under test)
fn option_tuples(x: &[f64]) -> f64 {
    let mut best = None;
    for (i, &v) in x.iter().enumerate() {
        if best.map_or(true, |(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    let (i, top) = best.unwrap();
    let mut low: Option<(usize, f64)> = None;
    let mut s = 0.0;
    for (i, &v) in x.iter().enumerate() {
        match low {
            Some((_, l)) if l <= v => {}
            _ => low = Some((i, v)),
        }
    }
    let mut prev: Option<(usize, f64)> = None;
    for (k, &v) in x.iter().enumerate() {
        if let Some((j, p)) = prev {
            s += (v - p).sin() * (k - j) as f64;
        }
        prev = Some((k, v));
    }
    let first = Some((0, x[0].cos()));
    let Some((k, q)) = first else {
        return 0.0;
    };
    let z = low.map_or(0.0, |(j, p)| p * x[j]);
    2.0 * top * x[i] + z + q * x[k] + s
}

fn option_tuples_o<D: Num>(x: &[D]) -> D {
    let mut i = 0;
    let mut j = 0;
    for (k, v) in x.iter().enumerate() {
        if v.re() > x[i].re() {
            i = k;
        }
        if v.re() < x[j].re() {
            j = k;
        }
    }
    let mut s = c::<D>(0.0);
    for w in x.windows(2) {
        s += (w[1] - w[0]).sin();
    }
    x[i] * 2.0 * x[i] + x[j] * x[j] + x[0].cos() * x[0] + s
}

// ---------------------------------------------------------------- names bound in conditions

/// Names bound inside a condition that shadow the function's locals: a block's `let b`
/// (also as `is_none_or`'s closure parameter, which the `Option` local's form writes as
/// such a block), a `match` arm's `b`, an `if let`'s `b`, a `for` loop's `b`. Each
/// condition reads its own `b`; the sum reads the function's.
#[autodiff_forward(condition_bindings_fwd, Dual, Dual)]
#[autodiff_reverse(condition_bindings_rev, Duplicated, Active)]
#[allow(clippy::blocks_in_conditions, clippy::match_single_binding)] // (the forms under test)
fn condition_bindings(x: &[f64]) -> f64 {
    let b = x[0] * 0.5 + 2.0;
    let mut s = 0.0;
    let mut best: Option<f64> = None;
    for (i, &v) in x.iter().enumerate() {
        s += v * b;
        if {
            let b = v * 2.0;
            b > 0.5
        } {
            s += v.sin();
        }
        if match i % 2 {
            0 => v > 0.0,
            b => (b as f64) < v,
        } {
            s += 0.5 * v * v;
        }
        if {
            let mut t = 0.0;
            for b in x.iter().take(i) {
                t += b;
            }
            t
        } > 1.0
        {
            s += 0.25 * v;
        }
        if best.is_none_or(|b| v > b) {
            best = Some(v);
        }
        s += 0.1 * b;
    }
    s + best.unwrap_or(0.0) * b
}

fn condition_bindings_o<D: Num>(x: &[D]) -> D {
    let b = x[0] * 0.5 + 2.0;
    let mut s = c::<D>(0.0);
    let mut best = x[0];
    let mut prefix = 0.0;
    for (i, &v) in x.iter().enumerate() {
        s += v * b;
        if v.re() * 2.0 > 0.5 {
            s += v.sin();
        }
        if (i % 2 == 0 && v.re() > 0.0) || (i % 2 == 1 && 1.0 < v.re()) {
            s += v * v * 0.5;
        }
        if prefix > 1.0 {
            s += v * 0.25;
        }
        prefix += v.re();
        if v.re() > best.re() {
            best = v;
        }
        s += b * 0.1;
    }
    s + best * b
}

// ---------------------------------------------------------------- while let

/// `while let`: over `x.get(i)` with a counter and a `continue`, and over a slice
/// pattern that steps through the slice (`[a, b, rest @ ..]`, the rest bound again),
/// leaving by a labelled `break`.
#[autodiff_forward(while_lets_fwd, Dual, Dual)]
#[autodiff_reverse(while_lets_rev, Duplicated, Active)]
fn while_lets(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while let Some(&v) = x.get(i) {
        i += 1;
        if v < -0.8 {
            continue;
        }
        s = s * 0.5 + v * v;
    }
    let mut w = x;
    'pairs: while let [a, b, rest @ ..] = w {
        w = rest;
        if a * b > 0.9 {
            break 'pairs;
        }
        s += a.sin() * b;
    }
    s
}

fn while_lets_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for &v in x {
        if v.re() >= -0.8 {
            s = s * 0.5 + v * v;
        }
    }
    for w in x.chunks_exact(2) {
        if (w[0] * w[1]).re() > 0.9 {
            break;
        }
        s += w[0].sin() * w[1];
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn option_locals_split_into_flag_and_value(case in slice_seed_case(-1.5, 1.5, 1..10)) {
        let (x, v, s0, s) = case;
        check_slice("option_locals", (&x, &v, &s0, s), option_locals, option_locals_fwd, option_locals_rev, option_locals_o::<Dual64>);
        check_hvp_of::<option_locals_rev>(&x, &v, option_locals_o);
    }

    #[test]
    fn option_locals_of_tuples(case in slice_seed_case(-1.5, 1.5, 1..10)) {
        let (x, v, s0, s) = case;
        check_slice("option_tuples", (&x, &v, &s0, s), option_tuples, option_tuples_fwd, option_tuples_rev, option_tuples_o::<Dual64>);
        check_hvp_of::<option_tuples_rev>(&x, &v, option_tuples_o);
    }

    #[test]
    fn names_bound_in_conditions_are_their_own(case in slice_seed_case(-1.5, 1.5, 1..10)) {
        let (x, v, s0, s) = case;
        check_slice("condition_bindings", (&x, &v, &s0, s), condition_bindings, condition_bindings_fwd, condition_bindings_rev, condition_bindings_o::<Dual64>);
        check_hvp_of::<condition_bindings_rev>(&x, &v, condition_bindings_o);
    }

    #[test]
    fn while_lets_step_through_slices(case in slice_seed_case(-1.5, 1.5, 0..10)) {
        let (x, v, s0, s) = case;
        check_slice("while_lets", (&x, &v, &s0, s), while_lets, while_lets_fwd, while_lets_rev, while_lets_o::<Dual64>);
        check_hvp_of::<while_lets_rev>(&x, &v, while_lets_o);
    }

    #[test]
    fn slice_patterns_tested_and_bound(case in slice_seed_case(-1.5, 1.5, 1..10)) {
        let (x, v, s0, s) = case;
        check_slice("slice_patterns", (&x, &v, &s0, s), slice_patterns, slice_patterns_fwd, slice_patterns_rev, slice_patterns_o::<Dual64>);
        check_hvp_of::<slice_patterns_rev>(&x, &v, slice_patterns_o);
    }
}
