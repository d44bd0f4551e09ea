//! Custom rules whose pullbacks borrow what they are lent: rules chained through their
//! outputs, and calls in loops, in straight-line code and on `&mut` parameters that
//! overwrite a lent buffer before the reverse sweep. Each call's rule fires once per
//! call in forward and reverse mode, and the primal never runs besides it; forward over
//! reverse differentiates the rule.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::testing::{central_gradient, close};
use num_dual::{Dual64, DualNum};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

// ---------------------------------------------------------------- an explicit Euler step

static STEP_PRIMAL: AtomicUsize = AtomicUsize::new(0);
static STEP_AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static STEP_PULLBACKS: AtomicUsize = AtomicUsize::new(0);
static STEP_FORWARDS: AtomicUsize = AtomicUsize::new(0);

const H: f64 = 0.1;

/// `v = u + h sin(u)`, one step of `u' = sin(u)`.
#[custom_rule(forward = step_fwd, reverse = step_rev)]
fn step(u: &[f64], v: &mut [f64]) {
    STEP_PRIMAL.fetch_add(1, Ordering::SeqCst);
    for i in 0..u.len() {
        v[i] = u[i] + H * u[i].sin();
    }
}

fn step_fwd(u: &[f64], du: &[f64], v: &mut [f64], dv: &mut [f64]) {
    STEP_FORWARDS.fetch_add(1, Ordering::SeqCst);
    for i in 0..u.len() {
        v[i] = u[i] + H * u[i].sin();
        dv[i] = (1.0 + H * u[i].cos()) * du[i];
    }
}

/// The pullback borrows `u` (`use<'a>`) rather than copying it. `#[differentiable]`, so
/// that forward over reverse differentiates it.
#[allow(clippy::unused_unit)]
#[differentiable]
fn step_rev<'a>(
    u: &'a [f64],
    v: &mut [f64],
) -> ((), impl FnOnce(&mut [f64], &mut [f64]) + use<'a>) {
    no_grad(STEP_AUGMENTED.fetch_add(1, Ordering::SeqCst));
    for i in 0..u.len() {
        v[i] = u[i] + H * u[i].sin();
    }
    ((), move |du: &mut [f64], dv: &mut [f64]| {
        no_grad(STEP_PULLBACKS.fetch_add(1, Ordering::SeqCst));
        for i in 0..u.len() {
            du[i] += (1.0 + H * u[i].cos()) * dv[i];
            dv[i] = 0.0;
        }
    })
}

/// Held by each test for its whole run: the tests share `step`'s counters.
static SERIAL: Mutex<()> = Mutex::new(());

/// `(primal, augmented, pullbacks, forwards)` calls of `step`, read and reset to zero.
fn step_counts() -> [usize; 4] {
    [
        &STEP_PRIMAL,
        &STEP_AUGMENTED,
        &STEP_PULLBACKS,
        &STEP_FORWARDS,
    ]
    .map(|c| c.swap(0, Ordering::SeqCst))
}

/// Steps in place: each step lends `u`, then overwrites it with the step's result.
#[autodiff_reverse(d_integrate, Duplicated, Active)]
#[autodiff_forward(integrate_jvp, Dual, Dual)]
fn integrate(u0: &[f64]) -> f64 {
    let mut u = u0.to_vec();
    let mut v = vec![0.0; u0.len()];
    for _ in 0..5 {
        step(&u, &mut v);
        u.copy_from_slice(&v);
    }
    let mut s = 0.0;
    for i in 0..u.len() {
        s += u[i] * u[i];
    }
    s
}

/// `Σ u_i²` after `steps` steps from `u0`, in plain dual numbers: the oracle.
fn integrate_dual(u0: &[Dual64], steps: usize) -> Dual64 {
    let mut u = u0.to_vec();
    for _ in 0..steps {
        u = u.iter().map(|&a| a + a.sin() * H).collect();
    }
    u.iter().fold(Dual64::from(0.0), |s, &a| s + a * a)
}

/// The dual numbers of `x` seeded with the `i`-th unit vector.
fn unit_seeded(x: &[f64], i: usize) -> Vec<Dual64> {
    (0..x.len())
        .map(|j| Dual64::new(x[j], if i == j { 1.0 } else { 0.0 }))
        .collect()
}

#[test]
fn a_rule_in_a_loop_that_overwrites_what_it_lent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let u0 = [0.3, -1.2, 2.0];
    step_counts();
    let mut g = [0.0; 3];
    let y = d_integrate(&u0, &mut g, 1.0);
    // The rule's augmented part and pullback ran once per step; the primal never did.
    assert_eq!(step_counts(), [0, 5, 5, 0]);
    close(
        "value",
        y,
        integrate_dual(&unit_seeded(&u0, 0), 5).re,
        1e-14,
    )
    .unwrap();
    for i in 0..3 {
        let want = integrate_dual(&unit_seeded(&u0, i), 5).eps;
        close(&format!("∂{i}"), g[i], want, 1e-12).unwrap();
    }
    let fd = central_gradient(integrate, &u0, 1e-6);
    for i in 0..3 {
        close(&format!("∂{i} against differences"), g[i], fd[i], 1e-6).unwrap();
    }

    let dir = [1.0, -0.5, 0.25];
    step_counts();
    let (y, t) = integrate_jvp(&u0, &dir);
    assert_eq!(step_counts(), [0, 0, 0, 5]);
    let seeded: Vec<Dual64> = (0..3).map(|j| Dual64::new(u0[j], dir[j])).collect();
    let want = integrate_dual(&seeded, 5);
    close("forward value", y, want.re, 1e-14).unwrap();
    close("tangent", t, want.eps, 1e-12).unwrap();
}

/// Ping-pong between two buffers: each step's output is the next one's input, and each
/// buffer is lent, then overwritten by a later step.
#[autodiff_reverse(d_ping_pong, Duplicated, Active)]
fn ping_pong(u0: &[f64]) -> f64 {
    let mut a = u0.to_vec();
    let mut b = vec![0.0; u0.len()];
    for _ in 0..3 {
        step(&a, &mut b);
        step(&b, &mut a);
    }
    a.iter().map(|x| x * x).sum()
}

#[test]
fn rules_chained_through_two_buffers_in_a_loop() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let u0 = [0.7, -0.4];
    step_counts();
    let mut g = [0.0; 2];
    d_ping_pong(&u0, &mut g, 1.0);
    assert_eq!(step_counts(), [0, 6, 6, 0]);
    let fd = central_gradient(ping_pong, &u0, 1e-6);
    for i in 0..2 {
        let want = integrate_dual(&unit_seeded(&u0, i), 6).eps;
        close(&format!("∂{i}"), g[i], want, 1e-12).unwrap();
        close(&format!("∂{i} against differences"), g[i], fd[i], 1e-6).unwrap();
    }
}

// ---------------------------------------------------------------- straight-line code

/// Two rules chained through an output: the second reads what the first wrote.
#[autodiff_reverse(d_chained, Duplicated, Active)]
fn chained(x: &[f64]) -> f64 {
    let mut y = vec![0.0; x.len()];
    let mut z = vec![0.0; x.len()];
    step(x, &mut y);
    step(&y, &mut z);
    z.iter().map(|v| v * v).sum()
}

/// A buffer lent to the rule, then scaled in place before another call.
#[autodiff_reverse(d_lent_then_scaled, Duplicated, Active)]
fn lent_then_scaled(x: &[f64]) -> f64 {
    let mut w = x.to_vec();
    let mut y = vec![0.0; x.len()];
    step(&w, &mut y);
    let first: f64 = y.iter().sum();
    for i in 0..w.len() {
        w[i] *= 3.0;
    }
    step(&w, &mut y);
    first * y.iter().sum::<f64>()
}

#[test]
fn rules_chained_and_lent_in_straight_line_code() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = [0.2, 1.4, -0.9];
    for (name, f, df) in [
        (
            "chained",
            chained as fn(&[f64]) -> f64,
            d_chained as fn(&[f64], &mut [f64], f64) -> f64,
        ),
        ("lent, then scaled", lent_then_scaled, d_lent_then_scaled),
    ] {
        step_counts();
        let mut g = [0.0; 3];
        let y = df(&x, &mut g, 1.0);
        assert_eq!(step_counts(), [0, 2, 2, 0], "{name}");
        close(&format!("{name}: value"), y, f(&x), 1e-14).unwrap();
        step_counts();
        let fd = central_gradient(f, &x, 1e-6);
        for i in 0..3 {
            close(&format!("{name}: ∂{i}"), g[i], fd[i], 1e-6).unwrap();
        }
    }
    // Analytic: step is elementwise, so ∂/∂x_i of Σ step(step(x))² is
    // 2 z_i step'(y_i) step'(x_i).
    let mut g = [0.0; 3];
    d_chained(&x, &mut g, 1.0);
    step_counts();
    for i in 0..3 {
        let y = x[i] + H * x[i].sin();
        let z = y + H * y.sin();
        let want = 2.0 * z * (1.0 + H * y.cos()) * (1.0 + H * x[i].cos());
        close(&format!("chained, analytic ∂{i}"), g[i], want, 1e-13).unwrap();
    }
}

// ---------------------------------------------------------------- `&mut` parameters

/// [`integrate`] stepping its `&mut` parameter in place: each step lends it, then
/// overwrites it.
#[autodiff_reverse(d_integrate_in_place, Duplicated, Active)]
#[autodiff_forward(integrate_in_place_jvp, Dual, Dual)]
fn integrate_in_place(u: &mut [f64]) -> f64 {
    let mut v = vec![0.0; u.len()];
    for _ in 0..5 {
        step(&*u, &mut v);
        u.copy_from_slice(&v);
    }
    u.iter().map(|a| a * a).sum()
}

/// The same on a `&mut Vec`.
#[autodiff_reverse(d_integrate_in_place_vec, Duplicated, Active)]
fn integrate_in_place_vec(u: &mut Vec<f64>) -> f64 {
    let mut v = vec![0.0; u.len()];
    for _ in 0..5 {
        step(&*u, &mut v);
        u.copy_from_slice(&v);
    }
    u.iter().map(|a| a * a).sum()
}

/// A `&mut` array lent, overwritten in one element, and lent again.
#[autodiff_reverse(d_lent_array, Duplicated, Active)]
fn lent_array(u: &mut [f64; 3]) -> f64 {
    let mut v = [0.0; 3];
    step(&u[..], &mut v);
    u[0] = v[0] * v[1];
    step(&*u, &mut v);
    v[2] * u[0]
}

#[autodiff_forward(hvp_integrate_in_place, Dual, Dual)]
fn grad_integrate_in_place(x: &[f64], dx: &mut [f64]) {
    let mut u = x.to_vec();
    dx.fill(0.0);
    d_integrate_in_place(&mut u, dx, 1.0);
}

#[test]
fn a_rule_lent_a_mutable_parameter_that_is_then_overwritten() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = [0.3, -1.2, 2.0];
    let oracle: Vec<f64> = (0..3)
        .map(|i| integrate_dual(&unit_seeded(&x, i), 5).eps)
        .collect();
    step_counts();
    let (mut u, mut g) = (x, [0.0; 3]);
    let y = d_integrate_in_place(&mut u, &mut g, 1.0);
    assert_eq!(step_counts(), [0, 5, 5, 0], "slice");
    close("slice: value", y, integrate(&x), 1e-14).unwrap();
    step_counts();
    let (mut u, mut g_vec) = (x.to_vec(), vec![0.0; 3]);
    d_integrate_in_place_vec(&mut u, &mut g_vec, 1.0);
    assert_eq!(step_counts(), [0, 5, 5, 0], "Vec");
    for i in 0..3 {
        close(&format!("slice: ∂{i}"), g[i], oracle[i], 1e-12).unwrap();
        close(&format!("Vec: ∂{i}"), g_vec[i], oracle[i], 1e-12).unwrap();
    }
    let mut u = x;
    let (_, dy) = integrate_in_place_jvp(&mut u, &mut [0.0, 1.0, 0.0]);
    assert_eq!(step_counts(), [0, 0, 0, 5], "forward");
    close("forward", dy, oracle[1], 1e-12).unwrap();

    let (mut u, mut g) = (x, [0.0; 3]);
    d_lent_array(&mut u, &mut g, 1.0);
    assert_eq!(step_counts(), [0, 2, 2, 0], "array");
    let fd = central_gradient(|x: &[f64]| lent_array(&mut [x[0], x[1], x[2]]), &x, 1e-6);
    for i in 0..3 {
        close(&format!("array: ∂{i}"), g[i], fd[i], 1e-6).unwrap();
    }

    // Forward over reverse: the same H·v as `integrate`'s, tested against dual numbers
    // below.
    let v = [1.0, 0.5, -0.25];
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    hvp_integrate_in_place(&x, &v, &mut g, &mut hv);
    let (mut g_want, mut hv_want) = ([0.0; 3], [0.0; 3]);
    hvp_integrate(&x, &v, &mut g_want, &mut hv_want);
    step_counts();
    for i in 0..3 {
        close(&format!("H·v: gradient {i}"), g[i], g_want[i], 1e-13).unwrap();
        close(&format!("H·v {i}"), hv[i], hv_want[i], 1e-12).unwrap();
    }
}

#[autodiff_forward(hvp_integrate, Dual, Dual)]
fn grad_integrate(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_integrate(x, dx, 1.0);
}

#[test]
fn hessian_vector_product_through_a_rule_that_borrows_what_it_lent() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let x = [0.3, -1.2, 2.0];
    let v = [1.0, 0.5, -0.25];
    let (mut g, mut hv) = (vec![0.0; 3], vec![0.0; 3]);
    hvp_integrate(&x, &v, &mut g, &mut hv);
    // The oracle's gradient, by dual numbers, differenced along `v`.
    let oracle_gradient = |x: &[f64]| -> Vec<f64> {
        (0..3)
            .map(|i| integrate_dual(&unit_seeded(x, i), 5).eps)
            .collect()
    };
    let h = 1e-5;
    let at = |s: f64| -> Vec<f64> { (0..3).map(|i| x[i] + s * v[i]).collect() };
    let (gp, gm) = (oracle_gradient(&at(h)), oracle_gradient(&at(-h)));
    let g0 = oracle_gradient(&x);
    for i in 0..3 {
        close(&format!("gradient {i}"), g[i], g0[i], 1e-12).unwrap();
        let want = (gp[i] - gm[i]) / (2.0 * h);
        close(&format!("H·v {i}"), hv[i], want, 1e-6).unwrap();
    }
    step_counts();
}

// ---------------------------------------------------------------- a call's vector, lent

/// `Σ z²`, whose pullback borrows `z`.
#[custom_rule(reverse = sum_sq_rev)]
fn sum_sq(z: &[f64]) -> f64 {
    z.iter().map(|v| v * v).sum()
}

fn sum_sq_rev(z: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    let s = z.iter().map(|v| v * v).sum();
    (s, move |dz: &mut [f64], g: f64| {
        for i in 0..z.len() {
            dz[i] += 2.0 * g * z[i];
        }
    })
}

#[differentiable]
fn scaled_sines(x: &[f64], a: f64) -> Vec<f64> {
    x.iter().map(|v| a * v.sin()).collect()
}

/// Each step of the loop lends the rule a vector that a call returned there, which the
/// next step replaces.
#[autodiff_reverse(d_lent_call_vectors, Duplicated, Active)]
fn lent_call_vectors(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..3 {
        let o = scaled_sines(x, k as f64 + 1.0);
        s += sum_sq(&o);
    }
    s
}

#[test]
fn a_vector_a_call_returned_in_a_loop_lent_to_a_rule_that_borrows_it() {
    let x = [0.3, -1.2, 2.0];
    let mut g = vec![0.0; 3];
    let value = d_lent_call_vectors(&x, &mut g, 1.0);
    close("value", value, lent_call_vectors(&x), 1e-12).unwrap();
    // Σ_k (k+1)² Σ_i sin² x_i: ∂/∂x_i = Σ_k (k+1)² 2 sin x_i cos x_i.
    for i in 0..3 {
        let want = 14.0 * 2.0 * x[i].sin() * x[i].cos();
        close(&format!("gradient {i}"), g[i], want, 1e-12).unwrap();
    }
}

// ---------------------------------------------------------------- a method's rule

/// A gain with a vector member, whose method has a rule that says its slope is `7 x`
/// (the code's is `2 k0 x`), so that the test sees which one ran.
#[derive(Clone)]
#[differentiable]
pub struct Gain {
    pub k: Vec<f64>,
}

#[differentiable]
impl Gain {
    #[custom_rule(forward = Self::apply_fwd, reverse = Self::apply_rev)]
    pub fn apply(&self, x: f64) -> f64 {
        self.k[0] * x * x
    }

    pub fn apply_fwd(&self, x: f64, dx: f64) -> (f64, f64) {
        (self.k[0] * x * x, 7.0 * x * dx)
    }

    pub fn apply_rev(&self, x: f64) -> (f64, impl FnOnce(f64) -> f64 + '_) {
        (self.k[0] * x * x, move |g: f64| 7.0 * x * g)
    }
}

/// The struct built by a literal where it is bound, without `mut`: the pullback of its
/// method's rule borrows it.
#[autodiff_forward(gained_fwd, Dual, Dual)]
#[autodiff_reverse(gained_rev, Active, Active)]
fn gained(x: f64) -> f64 {
    let c = Gain { k: vec![2.0, 1.0] };
    c.apply(x) + x
}

#[test]
fn a_method_rule_on_a_struct_with_a_vector_built_in_the_function() {
    for x in [0.5, -1.25] {
        let want = (2.0 * x * x + x, 7.0 * x + 1.0);
        let (v, d) = gained_rev(x, 1.0);
        close("value", v, want.0, 1e-12).unwrap();
        close("reverse", d, want.1, 1e-12).unwrap();
        let (v, d) = gained_fwd(x, 1.0);
        close("value", v, want.0, 1e-12).unwrap();
        close("forward", d, want.1, 1e-12).unwrap();
    }
}
