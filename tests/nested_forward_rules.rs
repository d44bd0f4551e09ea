//! Forward over forward through functions with custom forward rules: a `#[differentiable]`
//! forward rule is itself differentiated in forward mode, so second derivatives follow the
//! rule (deliberately wrong ones here, so that its use is visible); a rule without the
//! attribute is refused, naming it.

use autodiff_core::prelude::*;
use num_dual::{Dual2_64, DualNum as _};
use proptest::prelude::*;

// ------------------------------------------------------------------ a scalar rule

/// `x³` with a forward rule claiming the derivative `5x²` (wrong).
#[custom_rule(forward = cube_fwd)]
fn cube(x: f64) -> f64 {
    x * x * x
}

#[differentiable]
fn cube_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x * x * x, 5.0 * x * x * dx)
}

#[autodiff_forward(h_jvp, Dual, Dual)]
fn h(x: f64) -> f64 {
    cube(x).sin() + x
}

#[autodiff_forward(d2h, Dual, Dual)]
fn dh(x: f64) -> f64 {
    h_jvp(x, 1.0).1
}

/// The first derivative as the rule defines it: `cos(x³)·5x² + 1`.
fn rule_dh(x: f64) -> f64 {
    (x * x * x).cos() * 5.0 * x * x + 1.0
}

// ------------------------------------------------------------------ slices and options

/// `tol·Σ a_i b_i` over the first `n` elements, with a constant float option `tol` and a
/// forward rule that scales the tangent by 2 (wrong).
#[custom_rule(forward = dot_fwd)]
fn dot(a: &[f64], b: &[f64], #[constant] tol: f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += a[i] * b[i];
    }
    tol * s
}

#[differentiable]
fn dot_fwd(a: &[f64], da: &[f64], b: &[f64], db: &[f64], tol: f64, n: usize) -> (f64, f64) {
    let mut s = 0.0;
    let mut ds = 0.0;
    for i in 0..n {
        s += a[i] * b[i];
        ds += da[i] * b[i] + a[i] * db[i];
    }
    (tol * s, 2.0 * tol * ds)
}

#[autodiff_forward(quad_jvp, Dual, Dual)]
fn quad(x: &[f64]) -> f64 {
    let y: Vec<f64> = x.iter().map(|v| v.sin()).collect();
    dot(x, &y, 0.5, x.len()).exp()
}

/// The derivative of `quad` along `v`, as the rule defines it, differentiated again along
/// `u`.
#[autodiff_forward(quad_second, Dual, Const, Dual)]
fn quad_dir(x: &[f64], v: &[f64]) -> f64 {
    quad_jvp(x, v).1
}

/// `quad`'s directional derivative as the rule defines it: with `s = ½ Σ x_i sin x_i`,
/// `e^s · 2·½ Σ (sin x_i + x_i cos x_i) v_i`.
fn rule_quad_dir(x: &[f64], v: &[f64]) -> f64 {
    let s: f64 = 0.5 * x.iter().map(|a| a * a.sin()).sum::<f64>();
    let ds: f64 = x
        .iter()
        .zip(v)
        .map(|(a, b)| (a.sin() + a * a.cos()) * b)
        .sum();
    s.exp() * ds
}

/// The second derivative of `quad` along `v` then `u` as the rule defines it, with
/// `R[w] = Σ (sin x_i + x_i cos x_i) w_i` (the rule's tangent of `s` along `w`):
/// `e^s (c·R[u]·R[v] + Σ (2 cos x_i − x_i sin x_i) u_i v_i)`. The rule's value `s` has the
/// derivative `R[u]` (`c = 1`); its code's would be `R[u] / 2` (`c = ½`).
fn quad_second_by(x: &[f64], u: &[f64], v: &[f64], c: f64) -> f64 {
    let s: f64 = 0.5 * x.iter().map(|a| a * a.sin()).sum::<f64>();
    let r = |w: &[f64]| -> f64 {
        x.iter()
            .zip(w)
            .map(|(a, b)| (a.sin() + a * a.cos()) * b)
            .sum()
    };
    let dr: f64 = x
        .iter()
        .zip(u.iter().zip(v))
        .map(|(a, (ui, vi))| (2.0 * a.cos() - a * a.sin()) * ui * vi)
        .sum();
    s.exp() * (c * r(u) * r(v) + dr)
}

// ------------------------------------------------------------------ an output buffer

/// `y_i += x_i²`, returning nothing, with a forward rule claiming `dy_i += 3 x_i dx_i`
/// (wrong).
#[custom_rule(forward = square_into_fwd)]
fn square_into(x: &[f64], y: &mut [f64]) {
    for i in 0..x.len() {
        y[i] += x[i] * x[i];
    }
}

#[differentiable]
fn square_into_fwd(x: &[f64], dx: &[f64], y: &mut [f64], dy: &mut [f64]) {
    for i in 0..x.len() {
        y[i] += x[i] * x[i];
        dy[i] += 3.0 * x[i] * dx[i];
    }
}

#[autodiff_forward(squares_jvp, Dual, Dual)]
fn squares(x: &[f64]) -> f64 {
    let mut y = vec![1.0; x.len()];
    square_into(x, &mut y);
    square_into(&y.clone(), &mut y);
    y.iter().map(|v| v.ln()).sum()
}

#[autodiff_forward(squares_second, Dual, Const, Dual)]
fn squares_dir(x: &[f64], v: &[f64]) -> f64 {
    squares_jvp(x, v).1
}

/// `squares`' directional derivative as the rule defines it: with `a = 1 + x²` and
/// `b = a + a²`, `Σ (1 + 3a)·3x v / b`.
fn rule_squares_dir(x: &[f64], v: &[f64]) -> f64 {
    x.iter()
        .zip(v)
        .map(|(xi, vi)| {
            let a = 1.0 + xi * xi;
            let b = a + a * a;
            (1.0 + 3.0 * a) * 3.0 * xi * vi / b
        })
        .sum()
}

// ------------------------------------------------------------------ both rules

/// With both rules, forward over forward differentiates the forward rule (which claims
/// `7x`, wrong), and forward over reverse the reverse rule (which is right).
#[custom_rule(forward = half_square_fwd, reverse = half_square_rev)]
fn half_square(x: f64) -> f64 {
    0.5 * x * x
}

#[differentiable]
fn half_square_fwd(x: f64, dx: f64) -> (f64, f64) {
    (0.5 * x * x, 7.0 * x * dx)
}

#[differentiable]
fn half_square_rev(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    (0.5 * x * x, move |dret: f64| x * dret)
}

#[autodiff_forward(k_jvp, Dual, Dual)]
fn k(x: f64) -> f64 {
    half_square(x) * x
}

#[autodiff_forward(d2k, Dual, Dual)]
fn dk(x: f64) -> f64 {
    k_jvp(x, 1.0).1
}

// ------------------------------------------------------------------ a rule without the attribute

#[custom_rule(forward = plain_fwd)]
fn plain(x: f64) -> f64 {
    x.sin()
}

fn plain_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x.sin(), x.cos() * dx)
}

#[autodiff_forward(p_jvp, Dual, Dual)]
fn p(x: f64) -> f64 {
    plain(x) * x
}

#[autodiff_forward(d2p, Dual, Dual)]
fn dp(x: f64) -> f64 {
    p_jvp(x, 1.0).1
}

fn assert_close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol * (1.0 + want.abs()),
        "{what}: {got} vs {want}"
    );
}

#[test]
fn the_first_derivatives_follow_the_rules() {
    let x = 0.7;
    assert_close("h'", h_jvp(x, 1.0).1, rule_dh(x), 1e-14);
    let xs = [0.3, -1.1, 0.8];
    let v = [1.0, 0.5, -2.0];
    assert_close("quad'", quad_jvp(&xs, &v).1, rule_quad_dir(&xs, &v), 1e-13);
    assert_close(
        "squares'",
        squares_jvp(&xs, &v).1,
        rule_squares_dir(&xs, &v),
        1e-13,
    );
    assert_close("k'", k_jvp(x, 1.0).1, 7.0 * x * x + 0.5 * x * x, 1e-14);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The second derivative follows the rule as the first does: the rule's value has the
    /// rule's derivative `5x²` (not its code's `3x²`), and the rule's tangent `5x²·dx` is
    /// differentiated (`10x`). By hand, and with num-dual's second-order numbers, the rule
    /// entered as `cube` with those two derivatives.
    #[test]
    fn a_scalar_rule_is_differentiated_again(x in -1.3f64..1.3) {
        let (d1, d2) = d2h(x, 1.0);
        let x3 = x * x * x;
        // d/dx [cos(cube(x))·5x² + 1], with cube(x) = x³ and cube'(x) = 5x² (the rule's).
        let want = -x3.sin() * 5.0 * x * x * 5.0 * x * x + x3.cos() * 10.0 * x;
        prop_assert!((d1 - rule_dh(x)).abs() <= 1e-12 * (1.0 + d1.abs()));
        prop_assert!((d2 - want).abs() <= 1e-12 * (1.0 + want.abs()), "{d2} vs {want}");
        let cube_by_rule = Dual2_64::new(x3, 5.0 * x * x, 10.0 * x);
        let oracle = (cube_by_rule.sin() + Dual2_64::new(x, 1.0, 0.0)).v2;
        prop_assert!((d2 - oracle).abs() <= 1e-12 * (1.0 + oracle.abs()), "{d2} vs {oracle}");
        // Away from `x = 0`, the result is not the code's second derivative: the rule's
        // was used.
        let truth = (Dual2_64::from_re(x).derivative().powi(3).sin() + Dual2_64::from_re(x)).v2;
        if (want - truth).abs() > 1e-2 * (1.0 + truth.abs()) {
            prop_assert!((d2 - truth).abs() > 1e-3 * (1.0 + truth.abs()), "{d2} vs {truth}");
        }
    }

    /// A rule on slices with a constant option and an integer, and a rule writing an
    /// output buffer: the derivative along `u` of the rule's derivative along `v`.
    #[test]
    fn buffer_rules_are_differentiated_again(
        x in prop::collection::vec(-1.2f64..1.2, 3),
        v in prop::collection::vec(-1.0f64..1.0, 3),
        u in prop::collection::vec(-1.0f64..1.0, 3),
    ) {
        let along_u = |f: &dyn Fn(&[f64]) -> f64| {
            let h = 1e-5;
            let p: Vec<f64> = x.iter().zip(&u).map(|(a, b)| a + h * b).collect();
            let m: Vec<f64> = x.iter().zip(&u).map(|(a, b)| a - h * b).collect();
            (f(&p) - f(&m)) / (2.0 * h)
        };
        let (d1, d2) = quad_second(&x, &u, &v);
        prop_assert!((d1 - rule_quad_dir(&x, &v)).abs() <= 1e-12 * (1.0 + d1.abs()));
        // (The formula, checked: with the code's derivative of the value, it is the
        // derivative of the rule's first derivative as a function.)
        let fd = along_u(&|x| rule_quad_dir(x, &v));
        let by_code = quad_second_by(&x, &u, &v, 0.5);
        prop_assert!((by_code - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "{by_code} vs {fd}");
        let want = quad_second_by(&x, &u, &v, 1.0);
        prop_assert!((d2 - want).abs() <= 1e-12 * (1.0 + want.abs()), "quad: {d2} vs {want}");

        let (d1, d2) = squares_second(&x, &u, &v);
        prop_assert!((d1 - rule_squares_dir(&x, &v)).abs() <= 1e-12 * (1.0 + d1.abs()));
        let fd = along_u(&|x| rule_squares_dir(x, &v));
        prop_assert!((d2 - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "squares: {d2} vs {fd}");
    }

    /// With both rules, forward over forward takes the forward rule: `k' = 7x·x + ½x²`,
    /// and in `k''` the rule's value `½x²` has the rule's derivative `7x` too (its code's
    /// would be `x`): `k'' = 14x + 7x = 21x`.
    #[test]
    fn with_both_rules_forward_over_forward_takes_the_forward_rule(x in -2.0f64..2.0) {
        let (d1, d2) = d2k(x, 1.0);
        prop_assert!((d1 - 7.5 * x * x).abs() <= 1e-12 * (1.0 + d1.abs()));
        prop_assert!((d2 - 21.0 * x).abs() <= 1e-12 * (1.0 + d2.abs()), "{d2}");
    }
}

#[test]
#[should_panic(
    expected = "`plain` has a custom forward rule, `plain_fwd`, and a forward companion that calls `plain` is differentiated again (forward over forward): add `#[differentiable]` to `plain_fwd`"
)]
fn a_rule_without_the_attribute_is_refused_by_name() {
    // First order uses the rule.
    assert_close(
        "p'",
        p_jvp(0.4, 1.0).1,
        0.4f64.cos() * 0.4 + 0.4f64.sin(),
        1e-14,
    );
    let _ = d2p(0.4, 1.0);
}
