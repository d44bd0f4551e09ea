//! Functions that return arrays of floats by value (`-> [f64; 3]`, `-> (f64, [f64; 2])`,
//! an array chosen by `if`), and arrays chosen by `if` and `match` in the function:
//! as callees of differentiated code (the result indexed, destructured with `let [a, b]`,
//! indexed straight after the call) and with companions of their own, in both modes and
//! under forward over reverse, at random points against a num-dual oracle.

// Index loops in the oracles mirror the constructs under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// The right-hand side of a pendulum with a spring, as an array literal.
#[differentiable]
fn rhs(y: &[f64], k: f64) -> [f64; 2] {
    [y[1], -k * y[0].sin() - 0.1 * y[1] * y[0]]
}

fn rhs_o<D: Num>(y: &[D], k: D) -> [D; 2] {
    [y[1], -k * y[0].sin() - y[1] * y[0] * 0.1]
}

/// A rotation about the z axis written into a local array, with an early return.
#[autodiff_forward(rotate_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(rotate_rev, Duplicated, Active, Active)]
fn rotate(v: &[f64], a: f64) -> [f64; 3] {
    if a > 10.0 {
        return [v[0], v[1], v[2]];
    }
    let (s, c) = a.sin_cos();
    let mut out = [0.0; 3];
    out[0] = c * v[0] - s * v[1];
    out[1] = s * v[0] + c * v[1];
    out[2] = v[2] * v[2];
    out
}

fn rotate_o<D: Num>(v: &[D], a: D) -> [D; 3] {
    let (s, c) = (a.sin(), a.cos());
    [c * v[0] - s * v[1], s * v[0] + c * v[1], v[2] * v[2]]
}

/// A scalar and an array in one result.
#[differentiable]
fn split(v: &[f64]) -> (f64, [f64; 2]) {
    (v[0] * v[1], [v[1].exp(), v[0] - v[2]])
}

fn split_o<D: Num>(v: &[D]) -> (D, [D; 2]) {
    (v[0] * v[1], [v[1].exp(), v[0] - v[2]])
}

/// Ten explicit Euler steps of [`rhs`] from `x[0..2]` with stiffness `x[2]`, then the
/// results of the other helpers: indexed, destructured, indexed at the call, and passed by
/// reference to another call.
#[autodiff_forward(integrate_fwd, Dual, Dual)]
#[autodiff_reverse(integrate_rev, Duplicated, Active)]
fn integrate(x: &[f64]) -> f64 {
    let mut y = [x[0], x[1]];
    let k = x[2];
    let h = 0.1;
    for _ in 0..10 {
        let d = rhs(&y, k);
        y[0] += h * d[0];
        y[1] += h * d[1];
    }
    let [p, q] = rhs(&y, k);
    let r = rotate(x, y[0]);
    let (m, w) = split(x);
    // Copies of a returned array and of a returned tuple.
    let e = r;
    let t = split(&[r[0], r[1], r[2]]);
    let u = t;
    p * q + r[0] * r[1] + rotate(&[r[0], r[1], r[2]], 0.5)[2] + m * w[0] - w[1] * y[1]
        + e[2] * u.0
        + u.1[1]
        // A returned array passed by reference to another call.
        + rotate(&r, 0.25)[1] * norm2(&rhs(&y, k))
}

fn integrate_o<D: Num>(x: &[D]) -> D {
    let mut y = [x[0], x[1]];
    let k = x[2];
    for _ in 0..10 {
        let d = rhs_o(&y, k);
        y[0] += d[0] * 0.1;
        y[1] += d[1] * 0.1;
    }
    let [p, q] = rhs_o(&y, k);
    let r = rotate_o(x, y[0]);
    let (m, w) = split_o(x);
    let u = split_o(&r);
    let d = rhs_o(&y, k);
    p * q + r[0] * r[1] + rotate_o(&r, c(0.5))[2] + m * w[0] - w[1] * y[1]
        + r[2] * u.0
        + u.1[1]
        + rotate_o(&r, c(0.25))[1] * (d[0] * d[0] + d[1] * d[1])
}

#[differentiable]
fn norm2(v: &[f64; 2]) -> f64 {
    v[0] * v[0] + v[1] * v[1]
}

/// The derivative of `integrate` along a line, differentiated again: forward over forward
/// through callees that return arrays and tuples holding arrays.
#[autodiff_forward(along_fwd, Dual, Dual)]
fn along(t: f64) -> f64 {
    integrate_fwd(&[t, 0.5 * t, 0.3 - t * t], &[1.0, 0.5, -2.0 * t]).1
}

fn line_o<D: Num>(t: D) -> D {
    integrate_o(&[t, t * 0.5, -t * t + 0.3])
}

/// Arrays made from slices (`try_into`, `try_from`) and by `std::array::from_fn`.
#[autodiff_forward(converted_fwd, Dual, Dual)]
#[autodiff_reverse(converted_rev, Duplicated, Active)]
fn converted(x: &[f64]) -> f64 {
    let [a, b]: [f64; 2] = x[..2].try_into().unwrap();
    let c: [f64; 3] = x[1..4].try_into().expect("three values");
    let d = <[f64; 2]>::try_from(&x[2..4]).unwrap();
    let e: [f64; 3] = std::array::from_fn(|i| x[i] * 2.0);
    let g = core::array::from_fn::<f64, 2, _>(|i| x[i + 1].sin());
    a * b + c[2] * c[0] + d[1] * d[0].cos() + e.iter().map(|v| v.sin()).sum::<f64>() + g[1] * g[0]
}

fn converted_o<D: Num>(x: &[D]) -> D {
    let e: Vec<D> = (0..3).map(|i| x[i] * 2.0).collect();
    x[0] * x[1]
        + x[3] * x[1]
        + x[3] * x[2].cos()
        + e.iter().fold(D::zero(), |s, v| s + v.sin())
        + x[2].sin() * x[1].sin()
}

/// The right-hand side of a model chosen by a flag: an array chosen by `if`.
#[differentiable]
fn chosen_rhs(y: &[f64], stiff: bool) -> [f64; 2] {
    if stiff {
        [y[1], -10.0 * y[0]]
    } else {
        let k = y[0].sin();
        [y[1] * k, -k]
    }
}

fn chosen_rhs_o<D: Num>(y: &[D], stiff: bool) -> [D; 2] {
    if stiff {
        [y[1], -y[0] * 10.0]
    } else {
        let k = y[0].sin();
        [y[1] * k, -k]
    }
}

/// Arrays chosen by `if`, `else if` and `match`, bound and indexed, and returned by a
/// callee that chooses one; local arrays chosen (the `let` names the type), and a call's
/// array chosen against a literal.
#[autodiff_forward(chosen_fwd, Dual, Dual)]
#[autodiff_reverse(chosen_rev, Duplicated, Active)]
fn chosen(x: &[f64]) -> f64 {
    let r = if x[0] > 0.3 {
        [x[1], 2.0 * x[2]]
    } else if x[0] > -0.3 {
        let t = x[1] * x[2];
        [t, t.exp()]
    } else {
        [x[2].cos(), x[1]]
    };
    let q = match (x[2] * 2.0) as i64 {
        0 => [x[0] * x[0], x[1], x[2]],
        _ => [x[1], x[0].sin(), 1.0],
    };
    let f = chosen_rhs(x, x[1] > 0.0);
    let g = chosen_rhs(&x[1..], true);
    // Locals chosen, typed by the `let`; a call's array against a literal.
    let (p, w) = ([x[0], x[2]], [x[2], x[1] * 2.0]);
    let h: [f64; 2] = if x[1] > 0.2 { p } else { w };
    let k = if x[2] > 0.0 {
        chosen_rhs(x, false)
    } else {
        [x[1], 1.0]
    };
    r[0] * r[1] + q[0] * q[1] - q[2] * r[1]
        + f[0] * f[1]
        + g[0] * g[1] * x[0]
        + h[0] * h[1]
        + k[0] * k[1]
}

fn chosen_o<D: Num>(x: &[D]) -> D {
    let r = if x[0].re() > 0.3 {
        [x[1], x[2] * 2.0]
    } else if x[0].re() > -0.3 {
        let t = x[1] * x[2];
        [t, t.exp()]
    } else {
        [x[2].cos(), x[1]]
    };
    let q = match (x[2].re() * 2.0) as i64 {
        0 => [x[0] * x[0], x[1], x[2]],
        _ => [x[1], x[0].sin(), D::one()],
    };
    let f = chosen_rhs_o(x, x[1].re() > 0.0);
    let g = chosen_rhs_o(&x[1..], true);
    let h = if x[1].re() > 0.2 {
        [x[0], x[2]]
    } else {
        [x[2], x[1] * 2.0]
    };
    let k = if x[2].re() > 0.0 {
        chosen_rhs_o(x, false)
    } else {
        [x[1], D::one()]
    };
    r[0] * r[1] + q[0] * q[1] - q[2] * r[1]
        + f[0] * f[1]
        + g[0] * g[1] * x[0]
        + h[0] * h[1]
        + k[0] * k[1]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arrays_chosen_by_if_and_match(x in vecf(-1.0, 1.0, 3), v in dirs(3), s0 in dirs(3), s in seed()) {
        check_slice("chosen", (&x, &v, &s0, s), chosen, chosen_fwd, chosen_rev, chosen_o::<Dual64>);
        check_hvp_of::<chosen_rev>(&x, &v, chosen_o);
    }

    #[test]
    fn arrays_returned_by_callees(x in vecf(-1.0, 1.0, 3), v in dirs(3), s0 in dirs(3), s in seed()) {
        check_slice("integrate", (&x, &v, &s0, s), integrate, integrate_fwd, integrate_rev, integrate_o::<Dual64>);
        check_hvp_of::<integrate_rev>(&x, &v, integrate_o);
    }

    #[test]
    fn second_derivatives_through_array_results(t in -0.8..0.8f64) {
        let (d1, d2) = {
            let (_, d1, d2) = num_dual::second_derivative(line_o, t);
            (d1, d2)
        };
        let (v, dv) = along_fwd(t, 1.0);
        check("first derivative", v, d1);
        check("second derivative", dv, d2);
    }

    #[test]
    fn arrays_converted_from_slices_and_made_by_from_fn(x in vecf(-1.0, 1.0, 4), v in dirs(4), s0 in dirs(4), s in seed()) {
        check_slice("converted", (&x, &v, &s0, s), converted, converted_fwd, converted_rev, converted_o::<Dual64>);
        check_hvp_of::<converted_rev>(&x, &v, converted_o);
    }

    #[test]
    fn companions_of_a_function_returning_an_array(
        x in vecf(-1.0, 1.0, 3),
        a in -2.0..2.0f64,
        v in dirs(4),
        w in dirs(3),
        s0 in dirs(3),
    ) {
        // Forward: the value and the tangent along (v[..3], v[3]).
        let (value, tangent) = rotate_fwd(&x, &v[..3], a, v[3]);
        let mut z = x.clone();
        z.push(a);
        let (want, want_t) = oracle_jvp(|d| rotate_o(&d[..3], d[3]).to_vec(), &z, &v);
        check_all("rotate", &value, &want);
        check_all("rotate tangent", &tangent, &want_t);
        // Reverse: wᵀJ added into the shadow, and returned for the angle.
        let mut shadow = s0.clone();
        let (value, ga) = rotate_rev(&x, &mut shadow, a, [w[0], w[1], w[2]]);
        check_all("rotate (reverse)", &value, &want);
        let vjp = oracle_vjp(|d| rotate_o(&d[..3], d[3]).to_vec(), &z, &w);
        let added: Vec<f64> = shadow.iter().zip(&s0).map(|(a, b)| a - b).collect();
        check_all("rotate wᵀJ", &added, &vjp[..3]);
        check("rotate wᵀJ (angle)", ga, vjp[3]);
    }
}

/// One explicit Euler step of a rotation, taking and returning a state array.
#[differentiable]
fn euler_step(y: &[f64; 2], h: f64) -> [f64; 2] {
    [y[0] + h * y[1], y[1] - h * y[0].sin()]
}

/// A copy of an array parameter (`*y0`) assigned again from a callee that takes the
/// array's own type, in a loop.
#[autodiff_forward(stepped_state_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(stepped_state_rev, Duplicated, Active, Active)]
fn stepped_state(y0: &[f64; 2], h: f64) -> f64 {
    let mut y = *y0;
    for _ in 0..3 {
        y = euler_step(&y, h);
    }
    y[0] * y[0] + y[1]
}

fn stepped_state_o<D: Num>(y0: &[D; 2], h: D) -> D {
    let mut y = *y0;
    for _ in 0..3 {
        y = [y[0] + h * y[1], y[1] - h * y[0].sin()];
    }
    y[0] * y[0] + y[1]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_copied_array_parameter_passed_as_an_array(
        y in vecf(-1.5, 1.5, 2), v in dirs(3), h in 0.01f64..0.5, s in seed(),
    ) {
        let y0 = [y[0], y[1]];
        let dual = |k: usize| {
            let d = |i: usize, x: f64| if i == k { Dual64::from_re(x).derivative() } else { Dual64::from_re(x) };
            stepped_state_o(&[d(0, y0[0]), d(1, y0[1])], d(2, h))
        };
        let (value, tangent) = stepped_state_fwd(&y0, &[v[0], v[1]], h, v[2]);
        check("value", value, dual(9).re);
        check("tangent", tangent, (0..3).map(|k| dual(k).eps * v[k]).sum());
        let mut g = [0.0; 2];
        let (value, gh) = stepped_state_rev(&y0, &mut g, h, s);
        check("value", value, dual(9).re);
        check_all("gradient", &[g[0], g[1], gh], &[s * dual(0).eps, s * dual(1).eps, s * dual(2).eps]);
    }
}
