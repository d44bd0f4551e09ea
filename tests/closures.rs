//! Closures over active values passed to functions with rules and to differentiable
//! higher-order functions, with non-differentiable options beside them.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use autodiff_core::testing::close;
use lang_common::{Dual64, Num, c, check_slice, config, seed, slice_case};
use proptest::prelude::*;

// ------------------------------------------------------------------ a rule taking a closure

#[custom_rule(forward = call_fwd, reverse = call_rev)]
fn call<F: Fn() -> f64>(f: F, #[constant] info: f64) -> f64 {
    f() * info
}

fn call_fwd<F: DiffFn<(), f64>>(f: F, info: f64) -> (f64, f64) {
    let (y, dy) = f.jvp((), ());
    (y * info, dy * info)
}

fn call_rev<F: DiffFn<(), f64>>(f: F, info: f64) -> (f64, impl FnOnce(f64)) {
    let y = f.call(());
    (y * info, move |ybar: f64| {
        f.vjp((), ybar * info);
    })
}

#[autodiff_reverse(d_constcall, Active, Const, Active)]
#[autodiff_forward(constcall_jvp, Dual, Const, Dual)]
fn constcall(a: f64, info: f64) -> f64 {
    call(|| a * a, info)
}

#[test]
fn closure_argument_with_constant_options() {
    for &(a, info) in &[(3.0, 2.0), (-0.5, 1e-8), (1.25, -4.0)] {
        let (v, da) = d_constcall(a, info, 1.0);
        close("primal", v, a * a * info, 0.0).unwrap();
        close("reverse", da, 2.0 * a * info, 1e-12).unwrap();
        let (v2, t) = constcall_jvp(a, 1.0, info);
        close("primal", v2, v, 0.0).unwrap();
        close("forward", t, 2.0 * a * info, 1e-12).unwrap();
    }
}

// ------------------------------------------------------------------ differentiating through a higher-order function

#[differentiable]
fn apply<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
    2.0 * f(x)
}

#[autodiff_reverse(d_use_apply, Active, Active, Active)]
#[autodiff_forward(use_apply_jvp, Dual, Dual, Dual)]
fn use_apply(p: f64, x: f64) -> f64 {
    apply(|t| p * t.sin(), x)
}

#[test]
fn higher_order_function_without_a_rule() {
    for &(p, x) in &[(0.7, 1.3), (-2.0, 0.25)] {
        let (v, dp, dx) = d_use_apply(p, x, 1.0);
        close("primal", v, 2.0 * p * x.sin(), 1e-15).unwrap();
        close("d/dp", dp, 2.0 * x.sin(), 1e-12).unwrap();
        close("d/dx", dx, 2.0 * p * x.cos(), 1e-12).unwrap();
        let (_, tp) = use_apply_jvp(p, 1.0, x, 0.0);
        close("forward d/dp", tp, 2.0 * x.sin(), 1e-12).unwrap();
        let (_, tx) = use_apply_jvp(p, 0.0, x, 1.0);
        close("forward d/dx", tx, 2.0 * p * x.cos(), 1e-12).unwrap();
    }
}

/// Every argument but the closure constant: only the closure's captures carry
/// derivatives, so the callee's pullback must run although no other argument has an
/// adjoint.
#[autodiff_reverse(d_trapezoid_area, Active, Active, Active)]
#[autodiff_forward(trapezoid_area_jvp, Dual, Dual, Dual)]
fn trapezoid_area(p: f64, q: f64) -> f64 {
    trapezoid(|t| (p * t).sin() * q, 0.0, 1.0, 400)
}

#[differentiable]
fn trapezoid<F: Fn(f64) -> f64>(f: F, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = 0.5 * (f(a) + f(b));
    for i in 1..n {
        s += f(a + i as f64 * h);
    }
    s * h
}

#[test]
fn higher_order_function_with_only_the_closure_active() {
    for &(p, q) in &[(1.3, 0.7), (-0.4, 2.0)] {
        // ∫_0^1 q sin(pt) dt = q (1 - cos p) / p; the trapezoid rule's error at n = 400 is
        // below 1e-6.
        let (v, dp, dq) = d_trapezoid_area(p, q, 1.0);
        let want_dp = q * (p * p.sin() - (1.0 - p.cos())) / (p * p);
        let want_dq = (1.0 - p.cos()) / p;
        close("primal", v, q * want_dq, 1e-6).unwrap();
        close("d/dp", dp, want_dp, 1e-6).unwrap();
        close("d/dq", dq, want_dq, 1e-6).unwrap();
        let (_, tp) = trapezoid_area_jvp(p, 1.0, q, 0.0);
        close("forward d/dp", tp, dp, 1e-12).unwrap();
        let (_, tq) = trapezoid_area_jvp(p, 0.0, q, 1.0);
        close("forward d/dq", tq, dq, 1e-12).unwrap();
    }
}

// ------------------------------------------------------------------ captured buffers

/// Closures capturing a duplicated slice parameter, a local `Vec` and a local array, passed
/// to a differentiable higher-order function in a loop (each call's pullback drains its
/// own accumulators) and to a function with a rule.
#[autodiff_forward(captured_buffers_fwd, Dual, Dual)]
#[autodiff_reverse(captured_buffers_rev, Duplicated, Active)]
fn captured_buffers(x: &[f64]) -> f64 {
    let w: Vec<f64> = x.iter().map(|v| v.exp()).collect();
    let a = [x[0] * x[1], x[2]];
    let mut s = 0.0;
    for k in 0..2 {
        s += trapezoid(|t| (x[k] * t).sin() * w[k + 1] + a[k] * t * t, 0.0, 1.0, 8);
    }
    s + call(|| x.iter().map(|v| v * v).sum::<f64>() * w[0], 0.5)
}

/// A buffer local to a loop's body captured by a closure in that loop (the reverse sweep
/// builds the closure again from the buffer as restored there), with an element alias.
#[autodiff_forward(loop_local_capture_fwd, Dual, Dual)]
#[autodiff_reverse(loop_local_capture_rev, Duplicated, Active)]
#[allow(clippy::useless_vec)]
fn loop_local_capture(x: &[f64]) -> f64 {
    let mut acc = x[0];
    for _ in 0..2 {
        let b = vec![acc * 2.0, x[1]];
        for v in b.iter() {
            acc += trapezoid(|q: f64| q * (*v) + b[0], x[0], 1.0, 3);
        }
    }
    acc
}

fn loop_local_capture_o<D: Num>(x: &[D]) -> D {
    // The trapezoid rule on [x₀, 1] with three panels, its lower bound active.
    let trap = |f: &dyn Fn(D) -> D, a: D| {
        let h = (c::<D>(1.0) - a) / 3.0;
        let mut s = (f(a) + f(c(1.0))) * 0.5;
        for i in 1..3 {
            s += f(a + h * i as f64);
        }
        s * h
    };
    let mut acc = x[0];
    for _ in 0..2 {
        let b = [acc * 2.0, x[1]];
        for v in b.iter() {
            acc += trap(&|q: D| q * *v + b[0], x[0]);
        }
    }
    acc
}

fn trapezoid_o<D: Num>(f: impl Fn(D) -> D, a: f64, b: f64, n: usize) -> D {
    let h = (b - a) / n as f64;
    let mut s = (f(c(a)) + f(c(b))) * 0.5;
    for i in 1..n {
        s += f(c(a + i as f64 * h));
    }
    s * h
}

fn captured_buffers_o<D: Num>(x: &[D]) -> D {
    let w: Vec<D> = x.iter().map(|v| v.exp()).collect();
    let a = [x[0] * x[1], x[2]];
    let mut s = c::<D>(0.0);
    for k in 0..2 {
        s += trapezoid_o(
            |t: D| (x[k] * t).sin() * w[k + 1] + a[k] * t * t,
            0.0,
            1.0,
            8,
        );
    }
    s + x.iter().fold(c::<D>(0.0), |acc, v| acc + *v * *v) * w[0] * 0.5
}

/// Closures that name an element of a local `Vec`, reached through the loop's iterator,
/// in a condition: the condition is where they capture the buffer.
#[autodiff_forward(element_in_condition_fwd, Dual, Dual)]
#[autodiff_reverse(element_in_condition_rev, Duplicated, Active)]
fn element_in_condition(x: &[f64]) -> f64 {
    let b: Vec<f64> = x.iter().map(|v| v.sin()).collect();
    let mut acc = 0.0;
    for v in b.iter() {
        acc += trapezoid(
            |q: f64| if *v > 0.0 { q * x[0] } else { q * q * x[1] },
            0.0,
            1.0,
            3,
        );
        acc += trapezoid(|q: f64| if *v < 0.5 { q * *v } else { q + *v }, 0.5, 1.0, 2);
    }
    acc
}

fn element_in_condition_o<D: Num>(x: &[D]) -> D {
    let b: Vec<D> = x.iter().map(|v| v.sin()).collect();
    let mut acc = c::<D>(0.0);
    for v in b.iter() {
        let v = *v;
        acc += trapezoid_o(
            |q: D| if v.re() > 0.0 { q * x[0] } else { q * q * x[1] },
            0.0,
            1.0,
            3,
        );
        acc += trapezoid_o(|q: D| if v.re() < 0.5 { q * v } else { q + v }, 0.5, 1.0, 2);
    }
    acc
}

/// A local closure called where an expression is kept as written, in a condition and
/// inside `no_grad`: there it is the closure itself, with its captures.
#[autodiff_forward(closure_in_condition_fwd, Dual, Dual)]
#[autodiff_reverse(closure_in_condition_rev, Duplicated, Active)]
fn closure_in_condition(x: &[f64]) -> f64 {
    let k = x[1] * 0.5;
    let g = |q: f64| q * 2.0 + k;
    let mut s = 0.0;
    for v in x.iter() {
        if g(*v) > 0.5 {
            s += v * k;
        } else {
            s -= g(*v).sin();
        }
    }
    s + x[0] * no_grad(g(x[0]))
}

fn closure_in_condition_o<D: Num>(x: &[D]) -> D {
    let k = x[1] * 0.5;
    let g = |q: D| q * 2.0 + k;
    let mut s = c::<D>(0.0);
    for v in x.iter() {
        if g(*v).re() > 0.5 {
            s += *v * k;
        } else {
            s -= g(*v).sin();
        }
    }
    s + x[0] * c::<D>(g(x[0]).re())
}

/// A closure capturing the rows of a matrix (`&[Vec<f64>]`).
#[autodiff_reverse(rows_area_rev, Duplicated, Active)]
fn rows_area(m: &[Vec<f64>]) -> f64 {
    trapezoid(|t| m[0][0] * m[1][0] + m[1][1] * t * t, 0.0, 1.0, 6)
}

#[test]
fn closure_capturing_matrix_rows() {
    let m = vec![vec![0.5, -1.0], vec![2.0, 3.0]];
    let mut dm = vec![vec![0.25, 0.0], vec![0.0, -1.0]];
    let v = rows_area_rev(&m, &mut dm, 2.0);
    // Linear in the integrand: ∂/∂m[1][1] is the trapezoid rule of t² (computed by the
    // primal function itself, not by derivative code); the shadows started at 0.25 and -1.
    let int1 = trapezoid(|_| 1.0, 0.0, 1.0, 6);
    let int_t2 = trapezoid(|t| t * t, 0.0, 1.0, 6);
    close("primal", v, 0.5 * 2.0 * int1 + 3.0 * int_t2, 1e-15).unwrap();
    close("m[0][0]", dm[0][0], 0.25 + 2.0 * 2.0 * int1, 1e-14).unwrap();
    close("m[0][1]", dm[0][1], 0.0, 0.0).unwrap();
    close("m[1][0]", dm[1][0], 2.0 * 0.5 * int1, 1e-14).unwrap();
    close("m[1][1]", dm[1][1], -1.0 + 2.0 * int_t2, 1e-14).unwrap();
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn closures_capturing_float_buffers((x, v, s0) in slice_case(-1.0, 1.0, 3..6, 0), s in seed()) {
        check_slice(
            "captured_buffers",
            (&x, &v, &s0, s),
            captured_buffers,
            captured_buffers_fwd,
            captured_buffers_rev,
            captured_buffers_o::<Dual64>,
        );
        check_slice(
            "loop_local_capture",
            (&x, &v, &s0, s),
            loop_local_capture,
            loop_local_capture_fwd,
            loop_local_capture_rev,
            loop_local_capture_o::<Dual64>,
        );
        check_slice(
            "element_in_condition",
            (&x, &v, &s0, s),
            element_in_condition,
            element_in_condition_fwd,
            element_in_condition_rev,
            element_in_condition_o::<Dual64>,
        );
    }

    #[test]
    fn closures_called_in_conditions_and_no_grad((x, v, s0) in slice_case(-1.0, 1.0, 2..6, 0), s in seed()) {
        check_slice(
            "closure_in_condition",
            (&x, &v, &s0, s),
            closure_in_condition,
            closure_in_condition_fwd,
            closure_in_condition_rev,
            closure_in_condition_o::<Dual64>,
        );
    }
}

/// A higher-order function generic over its float type, called with closures whose
/// parameter types are written (`|t: f64|`, `|t: T|`): they fix the type parameter.
#[differentiable]
fn scaled_apply<T: num_traits::Float, F: Fn(T) -> T>(f: F, x: T) -> T {
    f(x) * x
}

#[autodiff_forward(generic_apply_fwd, Dual, Dual)]
#[autodiff_reverse(generic_apply_rev, Duplicated, Active)]
fn generic_apply(p: &[f64]) -> f64 {
    scaled_apply(|t: f64| p[0] * t.sin(), p[1])
}

#[autodiff_reverse(generic_apply_t_rev, Duplicated, Active)]
fn generic_apply_t<T: num_traits::Float>(p: &[T]) -> T {
    scaled_apply(|t: T| p[0] * t.sin(), p[1])
}

#[test]
fn generic_higher_order_function() {
    for &(a, b) in &[(0.7f64, 1.3f64), (-1.5, 0.4)] {
        let p = [a, b];
        // f = a·sin(b)·b: ∂/∂a = b sin b, ∂/∂b = a (sin b + b cos b).
        let want = [b * b.sin(), a * (b.sin() + b * b.cos())];
        let mut dp = [0.0; 2];
        close(
            "primal",
            generic_apply_rev(&p, &mut dp, 1.0),
            a * b.sin() * b,
            1e-15,
        )
        .unwrap();
        close("d/da", dp[0], want[0], 1e-12).unwrap();
        close("d/db", dp[1], want[1], 1e-12).unwrap();
        let (_, t) = generic_apply_fwd(&p, &[0.0, 1.0]);
        close("forward d/db", t, want[1], 1e-12).unwrap();
        let mut dq = [0.0f32; 2];
        generic_apply_t_rev(&[a as f32, b as f32], &mut dq, 1.0);
        close("f32 d/db", dq[1] as f64, want[1], 1e-5).unwrap();
    }
}

/// A local closure variable passed on, called in a loop.
#[autodiff_reverse(d_sum_apply, Duplicated, Active, Active)]
fn sum_apply(xs: &[f64], q: f64) -> f64 {
    let g = |t: f64| (q * t).exp();
    let mut s = 0.0;
    for i in 0..xs.len() {
        s += apply(g, xs[i]);
    }
    s
}

#[test]
fn closure_variable_in_a_loop() {
    let xs = [0.1, -0.4, 0.9];
    let q = 0.6;
    let mut gx = [0.0; 3];
    let (v, dq) = d_sum_apply(&xs, &mut gx, q, 1.0);
    let want: f64 = xs.iter().map(|x| 2.0 * (q * x).exp()).sum();
    close("primal", v, want, 1e-14).unwrap();
    let want_dq: f64 = xs.iter().map(|x| 2.0 * x * (q * x).exp()).sum();
    close("d/dq", dq, want_dq, 1e-12).unwrap();
    for i in 0..3 {
        close("d/dx", gx[i], 2.0 * q * (q * xs[i]).exp(), 1e-12).unwrap();
    }
}

/// `f ∘ f`.
#[differentiable]
fn twice<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
    f(f(x))
}

/// A higher-order function that wraps its closure parameter in a closure of its own and
/// passes that on (the wrapper's primal calls the parameter plainly: in reverse mode the
/// parameter has no forward derivative), and passes it on by reference.
#[allow(clippy::redundant_closure)]
#[differentiable]
fn sum_twice<F: Fn(f64) -> f64>(f: F, xs: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..xs.len() {
        s += twice(|t| f(t), xs[i]);
        s += twice(&f, xs[i]);
    }
    s
}

#[autodiff_reverse(d_sum_twice_sq, Duplicated, Active, Active)]
#[autodiff_forward(sum_twice_sq_jvp, Dual, Dual, Dual)]
fn sum_twice_sq(xs: &[f64], a: f64) -> f64 {
    sum_twice(|t| t * t * a, xs)
}

#[test]
fn closure_parameter_wrapped_and_passed_on() {
    // f(t) = a t², f(f(t)) = a³ t⁴, twice: ∂/∂a = 6 a² t⁴, ∂/∂t = 8 a³ t³.
    let (xs, a) = ([0.3, -0.5, 1.2], 0.7);
    let mut g = [0.0; 3];
    let (y, da) = d_sum_twice_sq(&xs, &mut g, a, 1.0);
    let want: f64 = xs.iter().map(|t| 2.0 * a.powi(3) * t.powi(4)).sum();
    close("primal", y, want, 1e-14).unwrap();
    let want_da: f64 = xs.iter().map(|t| 6.0 * a * a * t.powi(4)).sum();
    close("d/da", da, want_da, 1e-13).unwrap();
    for i in 0..3 {
        let want = 8.0 * a.powi(3) * xs[i].powi(3);
        close(&format!("d/dx[{i}]"), g[i], want, 1e-13).unwrap();
    }
    let v = [1.0, -0.5, 2.0];
    let (_, t) = sum_twice_sq_jvp(&xs, &v, a, 0.25);
    let want_t: f64 = (0..3)
        .map(|i| 8.0 * a.powi(3) * xs[i].powi(3) * v[i])
        .sum::<f64>()
        + 0.25 * want_da;
    close("tangent", t, want_t, 1e-13).unwrap();
}

// ------------------------------------------------------------------ rules and lent buffers inside closures

static BARRIER_FORWARD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static BARRIER_PULLBACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// An all-constant synchronisation with only a reverse rule (a no-op on this backend).
#[custom_rule(reverse = barrier_rev)]
fn barrier() {}

fn barrier_rev() -> ((), impl FnOnce()) {
    ((), || {
        BARRIER_PULLBACKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    })
}

/// The same with a forward rule too, which reverse mode must not run.
#[custom_rule(forward = fence_fwd, reverse = fence_rev)]
fn fence() {}

fn fence_fwd() {
    BARRIER_FORWARD.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

fn fence_rev() -> ((), impl FnOnce()) {
    ((), || {})
}

#[autodiff_reverse(d_synchronised, Active, Active, Active)]
fn synchronised(p: f64, x: f64) -> f64 {
    apply(
        |t| {
            barrier();
            fence();
            p * t.sin()
        },
        x,
    )
}

#[test]
fn all_constant_rules_inside_a_closure_passed_to_a_higher_order_function() {
    use std::sync::atomic::Ordering::SeqCst;
    let (p, x): (f64, f64) = (0.7, 1.3);
    let pullbacks = BARRIER_PULLBACKS.load(SeqCst);
    let forward = BARRIER_FORWARD.load(SeqCst);
    let (v, dp, dx) = d_synchronised(p, x, 1.0);
    close("primal", v, 2.0 * p * x.sin(), 1e-15).unwrap();
    close("d/dp", dp, 2.0 * x.sin(), 1e-12).unwrap();
    close("d/dx", dx, 2.0 * p * x.cos(), 1e-12).unwrap();
    // One call of the closure in the primal: one pullback of the reverse rule, and the
    // forward rule never runs in reverse mode.
    assert_eq!(BARRIER_PULLBACKS.load(SeqCst) - pullbacks, 1);
    assert_eq!(BARRIER_FORWARD.load(SeqCst) - forward, 0);
}

#[differentiable]
fn weighted(w: &[f64]) -> f64 {
    w[0] * w[1] + w[2]
}

#[custom_rule(forward = first_two_fwd, reverse = first_two_rev)]
fn first_two(w: &[f64]) -> (f64, f64) {
    (w[0], w[1])
}

fn first_two_fwd(w: &[f64], dw: &[f64]) -> ((f64, f64), (f64, f64)) {
    ((w[0], w[1]), (dw[0], dw[1]))
}

#[allow(clippy::type_complexity)]
fn first_two_rev(w: &[f64]) -> ((f64, f64), impl FnOnce(&mut [f64], (f64, f64)) + use<>) {
    ((w[0], w[1]), |dw: &mut [f64], (a, b): (f64, f64)| {
        dw[0] += a;
        dw[1] += b;
    })
}

/// A closure that lends a captured local `Vec` and a captured local array to calls, one
/// to a generated function and one to a rule.
#[autodiff_reverse(d_lends_captures, Active, Active, Active, Active)]
#[autodiff_forward(lends_captures_jvp, Dual, Dual, Dual, Dual)]
fn lends_captures(p: f64, q: f64, x: f64) -> f64 {
    let w = vec![p, q, p * q];
    let a = [q, 2.0 * p];
    apply(
        |t| {
            let (u, v) = first_two(&a);
            t * weighted(&w) + u * v * t
        },
        x,
    )
}

#[test]
fn a_closure_lends_captured_buffers_to_calls() {
    // 2 x (2 p q + 2 p q) = 8 p q x.
    for &(p, q, x) in &[(0.7, -1.1, 1.3), (2.0, 0.5, -0.25)] {
        let (v, dp, dq, dx) = d_lends_captures(p, q, x, 1.0);
        close("primal", v, 8.0 * p * q * x, 1e-14).unwrap();
        close("d/dp", dp, 8.0 * q * x, 1e-13).unwrap();
        close("d/dq", dq, 8.0 * p * x, 1e-13).unwrap();
        close("d/dx", dx, 8.0 * p * q, 1e-13).unwrap();
        let (_, t) = lends_captures_jvp(p, 1.0, q, -0.5, x, 2.0);
        let want = 8.0 * q * x - 0.5 * 8.0 * p * x + 2.0 * 8.0 * p * q;
        close("tangent", t, want, 1e-13).unwrap();
    }
}

// ------------------------------------------------------------------ closures taken by reference

/// The trapezoid rule over a closure taken as `&dyn Fn`.
#[differentiable]
fn trapezoid_dyn(f: &dyn Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    let h = (b - a) / 8.0;
    let mut s = 0.5 * (f(a) + f(b));
    for i in 1..8 {
        s += f(a + i as f64 * h);
    }
    s * h
}

/// The same over `&impl Fn`.
#[differentiable]
fn trapezoid_ref(f: &impl Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    let h = (b - a) / 8.0;
    let mut s = 0.5 * (f(a) + f(b));
    for i in 1..8 {
        s += f(a + i as f64 * h);
    }
    s * h
}

/// A rule for `∫_0^1 f`, by the midpoint rule, whose primal takes `&dyn Fn`: its rule
/// functions take the closure by value.
#[custom_rule(forward = midpoint_fwd, reverse = midpoint_rev)]
fn midpoint(f: &dyn Fn(f64) -> f64) -> f64 {
    (0..4).map(|i| f((i as f64 + 0.5) / 4.0)).sum::<f64>() / 4.0
}

fn midpoint_fwd(f: impl DiffFn<f64, f64>) -> (f64, f64) {
    let (mut s, mut ds) = (0.0, 0.0);
    for i in 0..4 {
        let (v, dv) = f.jvp((i as f64 + 0.5) / 4.0, 0.0);
        s += v / 4.0;
        ds += dv / 4.0;
    }
    (s, ds)
}

fn midpoint_rev(f: impl DiffFn<f64, f64> + Copy) -> (f64, impl FnOnce(f64)) {
    let s = (0..4).map(|i| f.call((i as f64 + 0.5) / 4.0)).sum::<f64>() / 4.0;
    (s, move |ybar: f64| {
        for i in 0..4 {
            f.vjp((i as f64 + 0.5) / 4.0, ybar / 4.0);
        }
    })
}

/// Each closure passed as `&|t| ..`, and a local closure passed as `&g`.
#[autodiff_reverse(by_reference_rev, Active, Active)]
#[autodiff_forward(by_reference_fwd, Dual, Dual)]
fn by_reference(p: f64) -> f64 {
    let g = |t: f64| p * t * t;
    trapezoid_dyn(&|t| (p * t).exp(), 0.0, 1.0)
        + trapezoid_ref(&g, 0.0, 2.0)
        + midpoint(&|t| (p * t).sin())
}

fn by_reference_o<D: Num>(p: D) -> D {
    let trap = |f: &dyn Fn(f64) -> D, a: f64, b: f64| {
        let h = (b - a) / 8.0;
        let mut s = (f(a) + f(b)) * 0.5;
        for i in 1..8 {
            s += f(a + i as f64 * h);
        }
        s * h
    };
    let mid = (0..4).fold(D::zero(), |s, i| s + (p * ((i as f64 + 0.5) / 4.0)).sin()) / 4.0;
    trap(&|t| (p * t).exp(), 0.0, 1.0) + trap(&|t| p * t * t, 0.0, 2.0) + mid
}

#[test]
fn closures_taken_by_reference() {
    for p in [-0.8, 0.3, 1.7] {
        let want = by_reference_o(Dual64::from(p).derivative()).eps;
        close("value", by_reference(p), by_reference_o(p), 1e-14).unwrap();
        let (_, dp) = by_reference_rev(p, 1.0);
        close("reverse", dp, want, 1e-12).unwrap();
        let (_, tp) = by_reference_fwd(p, 1.0);
        close("forward", tp, want, 1e-12).unwrap();
    }
}

/// Higher-order functions that compare the closure's values (`if f(a) < f(b)`, a `while`
/// condition): a search, whose result follows the branches taken.
#[differentiable]
fn smaller_of<F: Fn(f64) -> f64>(f: F, a: f64, b: f64) -> f64 {
    if f(a) < f(b) { f(a) } else { 2.0 * f(b) }
}

#[differentiable]
fn bisected<F: Fn(f64) -> f64>(f: F, lo: f64, hi: f64) -> f64 {
    let (mut a, mut b) = (lo, hi);
    let mut k = 0;
    while k < 20 && f(a) * f(b) < 0.0 {
        let m = 0.5 * (a + b);
        if f(m) > 0.0 {
            b = m;
        } else {
            a = m;
        }
        k += 1;
    }
    f(a) * a
}

#[autodiff_forward(compared_fwd, Dual, Dual)]
#[autodiff_reverse(compared_rev, Duplicated, Active)]
fn compared(p: &[f64]) -> f64 {
    let c = p[0];
    smaller_of(|t| (t - c) * (t - c), p[1], p[2]) + bisected(|t| t - c * c, -1.0, 2.0)
}

fn compared_o<D: Num>(p: &[D]) -> D {
    let k0 = p[0];
    let f = |t: D| (t - k0) * (t - k0);
    let picked = if f(p[1]).re() < f(p[2]).re() {
        f(p[1])
    } else {
        f(p[2]) * 2.0
    };
    // The bisection's points do not move with `c` (they are fixed by the branches).
    let g = |t: f64| t - k0.re() * k0.re();
    let (mut a, mut b) = (-1.0, 2.0);
    let mut k = 0;
    while k < 20 && g(a) * g(b) < 0.0 {
        let m = 0.5 * (a + b);
        if g(m) > 0.0 {
            b = m;
        } else {
            a = m;
        }
        k += 1;
    }
    picked + (c::<D>(a) - k0 * k0) * c::<D>(a)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn closures_compared_in_conditions((x, v, s0) in slice_case(-0.9, 0.9, 3..4, 0), s in seed()) {
        check_slice("compared", (&x, &v, &s0, s), compared, compared_fwd, compared_rev, compared_o::<Dual64>);
    }
}

/// `g(x) · x` of a closure `g`, with named companions: they take a `DiffFn` where the
/// function takes the closure.
#[autodiff_forward(scaled_by_fwd, Const, Dual, Dual)]
#[autodiff_reverse(scaled_by_rev, Const, Active, Active)]
fn scaled_by(g: impl Fn(f64) -> f64, x: f64) -> f64 {
    g(x) * x
}

/// `sin` as a user's differentiable closure.
#[derive(Clone, Copy)]
struct Sine;

impl DiffFn<f64, f64> for Sine {
    fn call(&self, x: f64) -> f64 {
        x.sin()
    }
    fn jvp(&self, x: f64, dx: f64) -> (f64, f64) {
        (x.sin(), x.cos() * dx)
    }
    fn vjp(&self, x: f64, ybar: f64) -> (f64, f64) {
        (x.sin(), x.cos() * ybar)
    }
}

#[test]
fn named_companions_take_a_diff_fn_for_a_closure() {
    let x: f64 = 0.7;
    // d/dx (x sin x) = sin x + x cos x.
    let want = x.sin() + x * x.cos();
    assert_eq!(scaled_by(f64::sin, x), x * x.sin());
    let (y, dy) = scaled_by_fwd(Sine, x, 1.0);
    assert_eq!(y, x * x.sin());
    assert!((dy - want).abs() < 1e-15, "{dy} against {want}");
    let (y, gx) = scaled_by_rev(Sine, x, 2.0);
    assert_eq!(y, x * x.sin());
    assert!(
        (gx - 2.0 * want).abs() < 1e-15,
        "{gx} against {}",
        2.0 * want
    );
}
