//! Nested differentiation through calls: Hessian-vector products of functions that call
//! other functions, methods and custom-ruled functions (forward over reverse, and reverse
//! over forward), second derivatives through calls (forward over forward, reverse over
//! forward) and a third order, against analytic formulas, finite differences of gradients
//! and num-dual.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::testing::close;
use num_dual::{Dual2_64, Dual3_64, DualNum as _};
use proptest::prelude::*;

mod nested_common;
use nested_common::{assert_all_close, fd_hvp};

// ------------------------------------------------------------------ a deliberately wrong rule

/// `Σ x_i²`, whose rule's gradient is deliberately wrong: `dx_i += (2·dret·x_i)²`.
#[custom_rule(reverse = f_custom_rev)]
#[inline(always)]
fn f_custom(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

#[differentiable]
fn f_custom_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    let y: f64 = x.iter().map(|v| v * v).sum();
    (y, move |dx: &mut [f64], dret: f64| {
        for i in 0..x.len() {
            dx[i] += (2.0 * dret * x[i]).powi(2);
        }
    })
}

mod elsewhere {
    use autodiff_core::prelude::*;

    #[custom_rule(reverse = f_custom_rev)]
    #[inline(never)]
    pub fn f_custom(x: &[f64]) -> f64 {
        x.iter().map(|v| v * v).sum()
    }

    #[differentiable]
    pub fn f_custom_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
        let y: f64 = x.iter().map(|v| v * v).sum();
        (y, move |dx: &mut [f64], dret: f64| {
            for i in 0..x.len() {
                dx[i] += (2.0 * dret * x[i]).powi(2);
            }
        })
    }
}

#[autodiff_reverse(d_g_true, Duplicated, Active)]
fn g_true(x: &[f64]) -> f64 {
    let s: f64 = x.iter().map(|v| v * v).sum();
    s.cos()
}

#[autodiff_reverse(d_g_custom, Duplicated, Active)]
fn g_custom(x: &[f64]) -> f64 {
    f_custom(x).cos()
}

#[autodiff_reverse(d_g_elsewhere, Duplicated, Active)]
fn g_elsewhere(x: &[f64]) -> f64 {
    elsewhere::f_custom(x).cos()
}

#[autodiff_forward(hvp_true, Dual, Dual)]
fn grad_true(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_g_true(x, dx, 1.0);
}

#[autodiff_forward(hvp_custom, Dual, Dual)]
fn grad_custom(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_g_custom(x, dx, 1.0);
}

#[autodiff_forward(hvp_elsewhere, Dual, Dual)]
fn grad_elsewhere(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_g_elsewhere(x, dx, 1.0);
}

/// The gradient the wrong rule implies for `cos(f(x))`: `w_i = (2·(-sin f)·x_i)²`.
fn wrong_gradient(x: &[f64]) -> Vec<f64> {
    let f: f64 = x.iter().map(|v| v * v).sum();
    x.iter().map(|xi| (2.0 * -f.sin() * xi).powi(2)).collect()
}

type Hvp = fn(&[f64], &[f64], &mut [f64], &mut [f64]);

fn run_hvp(hvp: Hvp, x: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (mut g, mut hv) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    hvp(x, v, &mut g, &mut hv);
    (g, hv)
}

#[test]
fn hvp_differentiates_the_wrong_rule_inlined_or_not_here_or_elsewhere() {
    let (x, v) = ([2.0], [1.0]);
    // By hand: w(x) = 4x²·sin²(x²), w'(x) = 8x·sin²(x²) + 16x³·sin(x²)·cos(x²).
    let (s, c) = (4.0f64.sin(), 4.0f64.cos());
    let by_hand = 8.0 * 2.0 * s * s + 16.0 * 8.0 * s * c;
    let by_fd = fd_hvp(wrong_gradient, &x, &v);
    close(
        "finite differences of the wrong gradient",
        by_fd[0],
        by_hand,
        1e-6,
    )
    .unwrap();
    let (_, true_hv) = run_hvp(hvp_true, &x, &v);
    // The true H·v of cos(x²): -2·sin(x²) - 4x²·cos(x²).
    close("true H·v", true_hv[0], -2.0 * s - 16.0 * c, 1e-12).unwrap();
    for (name, hvp) in [
        ("inline(always)", hvp_custom as Hvp),
        ("inline(never), other module", hvp_elsewhere as Hvp),
    ] {
        let (g, hv) = run_hvp(hvp, &x, &v);
        close(
            &format!("{name}: gradient"),
            g[0],
            wrong_gradient(&x)[0],
            1e-12,
        )
        .unwrap();
        close(&format!("{name}: H·v"), hv[0], by_hand, 1e-10).unwrap();
        assert!(
            (hv[0] - true_hv[0]).abs() > 1.0,
            "{name}: the rule was not used"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn hvp_of_the_wrong_rule_matches_finite_differences(
        x in prop::collection::vec(-1.5f64..1.5, 1..5),
        seed in prop::collection::vec(-1.0f64..1.0, 5),
    ) {
        let v: Vec<f64> = seed[..x.len()].to_vec();
        let want = fd_hvp(wrong_gradient, &x, &v);
        for hvp in [hvp_custom as Hvp, hvp_elsewhere as Hvp] {
            let (_, hv) = run_hvp(hvp, &x, &v);
            for i in 0..x.len() {
                prop_assert!((hv[i] - want[i]).abs() <= 1e-5 * (1.0 + want[i].abs()));
            }
        }
    }
}

// ------------------------------------------------------------------ both rules

/// `x³` with a forward rule claiming `5x²` and a reverse rule claiming `4x²` (both
/// wrong): forward over reverse differentiates the reverse rule.
#[custom_rule(forward = cube_fwd, reverse = cube_rev)]
fn cube(x: f64) -> f64 {
    x * x * x
}

fn cube_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x * x * x, 5.0 * x * x * dx)
}

#[differentiable]
fn cube_rev(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
    let y = x * x * x;
    (y, move |dret: f64| 4.0 * x * x * dret)
}

#[autodiff_reverse(d_sum_cubes, Duplicated, Active)]
#[autodiff_forward(sum_cubes_jvp, Dual, Dual)]
fn sum_cubes(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += cube(x[i]);
    }
    s
}

#[autodiff_forward(hvp_sum_cubes, Dual, Dual)]
fn grad_sum_cubes(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_sum_cubes(x, dx, 1.0);
}

#[test]
fn forward_over_reverse_uses_the_reverse_rule() {
    let x = [0.5, -1.5, 2.0];
    let v = [1.0, 0.25, -2.0];
    let (g, hv) = run_hvp(hvp_sum_cubes, &x, &v);
    // The reverse rule's gradient is 4x², so its derivative along v is 8x·v.
    let want_g: Vec<f64> = x.iter().map(|a| 4.0 * a * a).collect();
    let want_hv: Vec<f64> = x.iter().zip(&v).map(|(a, b)| 8.0 * a * b).collect();
    assert_all_close("gradient", &g, &want_g, 1e-12);
    assert_all_close("H·v", &hv, &want_hv, 1e-12);
}

/// The rule's function as a term of a product, called directly and through a helper: its
/// value's derivative is the forward rule's (`5x²`) on both paths, its pullback's the
/// reverse rule's, differentiated.
#[autodiff_reverse(d_cubes_times_x, Duplicated, Active)]
fn cubes_times_x(x: &[f64]) -> f64 {
    x.iter().map(|a| cube(*a) * a).sum()
}

#[differentiable]
fn cube_via(a: f64) -> f64 {
    cube(a)
}

#[autodiff_reverse(d_cubes_times_x_via, Duplicated, Active)]
fn cubes_times_x_via(x: &[f64]) -> f64 {
    x.iter().map(|a| cube_via(*a) * a).sum()
}

#[test]
fn forward_over_reverse_gives_a_rule_the_same_derivative_directly_and_through_helpers() {
    let x = [0.5, -1.5, 2.0];
    let v = [1.0, 0.25, -2.0];
    // ∂/∂x (cube(x)·x) is the pullback 4x²·x plus the value x³; along v, the pullback's
    // derivative (8x·x + 4x²)·v and the value's, 5x²·v by the forward rule: 17x²·v.
    let want_g: Vec<f64> = x.iter().map(|a| 5.0 * a * a * a).collect();
    let want_hv: Vec<f64> = x.iter().zip(&v).map(|(a, b)| 17.0 * a * a * b).collect();
    for (path, g, hv) in [
        (
            "directly",
            autodiff_core::gradient::<d_cubes_times_x>(&x),
            autodiff_core::hvp::<d_cubes_times_x>(&x, &v),
        ),
        (
            "through a helper",
            autodiff_core::gradient::<d_cubes_times_x_via>(&x),
            autodiff_core::hvp::<d_cubes_times_x_via>(&x, &v),
        ),
    ] {
        assert_all_close(&format!("gradient, {path}"), &g, &want_g, 1e-12);
        assert_all_close(&format!("H·v, {path}"), &hv, &want_hv, 1e-12);
    }
}

/// Reverse over forward through the function with both rules: the forward rule gives the
/// value (`Σ 5x²·v`), and its derivative is the reverse rule's, differentiated, as under
/// forward over reverse.
#[autodiff_reverse(d_dir_cubes, Duplicated, Const, Active)]
fn dir_cubes(x: &[f64], v: &[f64]) -> f64 {
    sum_cubes_jvp(x, v).1
}

#[test]
fn reverse_over_forward_uses_the_reverse_rule() {
    let x = [0.5, -1.5, 2.0];
    let v = [1.0, 0.25, -2.0];
    let mut g = [0.0; 3];
    let dir = d_dir_cubes(&x, &mut g, &v, 1.0);
    let want_dir: f64 = x.iter().zip(&v).map(|(a, b)| 5.0 * a * a * b).sum();
    let want_g: Vec<f64> = x.iter().zip(&v).map(|(a, b)| 8.0 * a * b).collect();
    assert!((dir - want_dir).abs() <= 1e-12, "{dir} vs {want_dir}");
    assert_all_close("gradient of ∇f·v", &g, &want_g, 1e-12);
}

// ------------------------------------------------------------------ logsumexp with a rule

/// `log Σ exp(z_i)`, stable, with a reverse rule (the softmax) written to be
/// differentiated again, and a forward rule.
#[custom_rule(forward = logsumexp_fwd, reverse = logsumexp_rev)]
fn logsumexp(z: &[f64]) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// (With a named lifetime: the rule's derivatives take elided ones.)
#[differentiable]
fn logsumexp_rev<'a>(z: &'a [f64]) -> (f64, impl FnOnce(&mut [f64], f64) + 'a) {
    let mut m = z[0];
    for i in 1..z.len() {
        m = m.max(z[i]);
    }
    let mut s = 0.0;
    for i in 0..z.len() {
        s += (z[i] - m).exp();
    }
    let y = m + s.ln();
    (y, move |dz: &mut [f64], dy: f64| {
        for i in 0..z.len() {
            dz[i] += dy * (z[i] - y).exp();
        }
    })
}

fn logsumexp_fwd(z: &[f64], dz: &[f64]) -> (f64, f64) {
    let p = softmax(z);
    (logsumexp(z), p.iter().zip(dz).map(|(a, b)| a * b).sum())
}

/// Cross-entropy of the logits `z` for the class `y`.
#[autodiff_reverse(d_xent, Duplicated, Const, Active)]
#[autodiff_forward(xent_jvp, Dual, Const, Dual)]
fn xent(z: &[f64], y: usize) -> f64 {
    logsumexp(z) - z[y]
}

/// Reverse over forward through the rules: the gradient of `∇xent·v` is `H·v`.
#[autodiff_reverse(d_dir_xent, Duplicated, Const, Const, Active)]
fn dir_xent(z: &[f64], v: &[f64], y: usize) -> f64 {
    xent_jvp(z, v, y).1
}

#[autodiff_forward(hvp_xent, Dual, Dual, Const)]
fn grad_xent(z: &[f64], dz: &mut [f64], y: usize) {
    dz.fill(0.0);
    d_xent(z, dz, y, 1.0);
}

fn softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn hvp_through_a_differentiable_logsumexp_rule(
        z in prop::collection::vec(-30.0f64..30.0, 2..7),
        seed in prop::collection::vec(-1.0f64..1.0, 7),
        class in 0usize..7,
    ) {
        let n = z.len();
        let y = class % n;
        let v = &seed[..n];
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        hvp_xent(&z, v, &mut g, &mut hv, y);
        // Gradient p - e_y, Hessian diag(p) - p·pᵀ.
        let p = softmax(&z);
        let pv: f64 = p.iter().zip(v).map(|(a, b)| a * b).sum();
        for i in 0..n {
            let want_g = p[i] - if i == y { 1.0 } else { 0.0 };
            let want_hv = p[i] * v[i] - p[i] * pv;
            prop_assert!((g[i] - want_g).abs() <= 1e-12, "g[{}] {} vs {}", i, g[i], want_g);
            prop_assert!((hv[i] - want_hv).abs() <= 1e-12, "hv[{}] {} vs {}", i, hv[i], want_hv);
        }
        // The same by reverse over forward.
        let mut hv_rev = vec![0.0; n];
        let dir = d_dir_xent(&z, &mut hv_rev, v, y, 1.0);
        let g_v: f64 = g.iter().zip(v).map(|(a, b)| a * b).sum();
        prop_assert!((dir - g_v).abs() <= 1e-12, "{} vs {}", dir, g_v);
        for i in 0..n {
            let want_hv = p[i] * v[i] - p[i] * pv;
            prop_assert!((hv_rev[i] - want_hv).abs() <= 1e-12, "{:?}", hv_rev);
        }
    }
}

// ------------------------------------------------------------------ a rule with a tuple value

static POLAR_PULLBACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Cartesian coordinates of the polar `(r, t)`: a rule whose value is a tuple.
#[custom_rule(reverse = polar_rev)]
fn polar(r: f64, t: f64) -> (f64, f64) {
    (r * t.cos(), r * t.sin())
}

/// The pullback takes the tuple's cotangent as a tuple pattern.
#[allow(clippy::type_complexity)]
#[differentiable]
fn polar_rev(r: f64, t: f64) -> ((f64, f64), impl FnOnce((f64, f64)) -> (f64, f64)) {
    let (c, s) = (t.cos(), t.sin());
    ((r * c, r * s), move |(a, b): (f64, f64)| {
        no_grad(POLAR_PULLBACKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        (a * c + b * s, r * (b * c - a * s))
    })
}

/// The same rule, its cotangent taken as one tuple.
#[custom_rule(reverse = polar_whole_rev)]
fn polar_whole(r: f64, t: f64) -> (f64, f64) {
    (r * t.cos(), r * t.sin())
}

#[allow(clippy::type_complexity)]
#[differentiable]
fn polar_whole_rev(r: f64, t: f64) -> ((f64, f64), impl FnOnce((f64, f64)) -> (f64, f64)) {
    let (c, s) = (t.cos(), t.sin());
    ((r * c, r * s), move |d: (f64, f64)| {
        (d.0 * c + d.1 * s, r * (d.1 * c - d.0 * s))
    })
}

/// `(r t, 1)`: the pullback ignores the cotangent of the constant second value.
#[custom_rule(reverse = product_and_one_rev)]
fn product_and_one(r: f64, t: f64) -> (f64, f64) {
    (r * t, 1.0)
}

#[allow(clippy::type_complexity)]
#[differentiable]
fn product_and_one_rev(r: f64, t: f64) -> ((f64, f64), impl FnOnce((f64, f64)) -> (f64, f64)) {
    ((r * t, 1.0), move |(a, _): (f64, f64)| (a * t, a * r))
}

/// `(r t)² · 1`.
#[autodiff_reverse(d_squared_product, Duplicated, Active)]
fn squared_product(p: &[f64]) -> f64 {
    let (q, one) = product_and_one(p[0], p[1]);
    q * q * one
}

/// `x·y` of the point: `r² sin(2t) / 2`.
#[autodiff_reverse(d_polar_area, Duplicated, Active)]
fn polar_area(p: &[f64]) -> f64 {
    let (x, y) = polar(p[0], p[1]);
    x * y
}

#[autodiff_reverse(d_polar_whole_area, Duplicated, Active)]
fn polar_whole_area(p: &[f64]) -> f64 {
    let (x, y) = polar_whole(p[0], p[1]);
    x * y
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn hvp_through_a_rule_whose_value_is_a_tuple(
        r in -3.0f64..3.0,
        t in -3.0f64..3.0,
        v in prop::collection::vec(-1.0f64..1.0, 2),
    ) {
        // Hessian of r² sin(2t)/2: [[sin 2t, 2r cos 2t], [2r cos 2t, -2r² sin 2t]].
        let (s2, c2) = (2.0 * t).sin_cos();
        let want = [
            s2 * v[0] + 2.0 * r * c2 * v[1],
            2.0 * r * c2 * v[0] - 2.0 * r * r * s2 * v[1],
        ];
        let before = POLAR_PULLBACKS.load(std::sync::atomic::Ordering::SeqCst);
        let hv = autodiff_core::hvp::<d_polar_area>(&[r, t], &v);
        let hv_whole = autodiff_core::hvp::<d_polar_whole_area>(&[r, t], &v);
        // The rule's pullback ran (differentiated): the rule was used.
        prop_assert!(POLAR_PULLBACKS.load(std::sync::atomic::Ordering::SeqCst) > before);
        for i in 0..2 {
            close(&format!("H·v {i}"), hv[i], want[i], 1e-12).unwrap();
            close(&format!("H·v {i}, whole tuple"), hv_whole[i], want[i], 1e-12).unwrap();
        }
        // Hessian of (r t)²: [[2t², 4rt], [4rt, 2r²]].
        let hv = autodiff_core::hvp::<d_squared_product>(&[r, t], &v);
        let want = [
            2.0 * t * t * v[0] + 4.0 * r * t * v[1],
            4.0 * r * t * v[0] + 2.0 * r * r * v[1],
        ];
        for i in 0..2 {
            close(&format!("H·v {i}, a cotangent ignored"), hv[i], want[i], 1e-12).unwrap();
        }
    }
}

/// A rule of a function that returns a vector, its pullback taking the cotangent as a
/// `Vec`. Deliberately not the function's derivative (`3 g` where `exp` would give `exp(z)
/// g`), so that its use is visible.
#[custom_rule(reverse = expd_rev)]
fn expd(z: &[f64]) -> Vec<f64> {
    z.iter().map(|v| v.exp()).collect()
}

#[allow(clippy::type_complexity)]
#[differentiable]
fn expd_rev(z: &[f64]) -> (Vec<f64>, impl FnOnce(&mut [f64], Vec<f64>) + '_) {
    let mut p = vec![0.0; z.len()];
    for i in 0..z.len() {
        p[i] = z[i].exp();
    }
    (p, move |dz: &mut [f64], g: Vec<f64>| {
        for i in 0..z.len() {
            dz[i] += 3.0 * g[i] * z[i] * z[i];
        }
    })
}

/// `e₀ e₁`, whose gradient through the rule is `(3 x₀² e₁, 3 x₁² e₀)`.
#[autodiff_reverse(d_expd_product, Duplicated, Active)]
fn expd_product(x: &[f64]) -> f64 {
    let e = expd(x);
    e[0] * e[1]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn hvp_through_a_rule_of_a_vector_function(
        x in prop::collection::vec(-1.0f64..1.0, 2),
        v in prop::collection::vec(-1.0f64..1.0, 2),
    ) {
        let (e0, e1) = (x[0].exp(), x[1].exp());
        let mut g = [0.0; 2];
        d_expd_product(&x, &mut g, 1.0);
        close("gradient 0", g[0], 3.0 * x[0] * x[0] * e1, 1e-12).unwrap();
        close("gradient 1", g[1], 3.0 * x[1] * x[1] * e0, 1e-12).unwrap();
        // The Jacobian of that gradient, along v.
        let want = [
            6.0 * x[0] * e1 * v[0] + 3.0 * x[0] * x[0] * e1 * v[1],
            3.0 * x[1] * x[1] * e0 * v[0] + 6.0 * x[1] * e0 * v[1],
        ];
        let hv = autodiff_core::hvp::<d_expd_product>(&x, &v);
        for i in 0..2 {
            close(&format!("H·v {i}"), hv[i], want[i], 1e-12).unwrap();
        }
    }
}

// ------------------------------------------------------------------ the struct `Model` loss

#[derive(Clone, Debug)]
struct Model {
    w: Vec<f64>,
    b: f64,
}

impl Model {
    fn zeros(d: usize) -> Model {
        Model {
            w: vec![0.0; d],
            b: 0.0,
        }
    }

    fn flat(&self) -> Vec<f64> {
        let mut out = self.w.clone();
        out.push(self.b);
        out
    }

    fn from_flat(p: &[f64]) -> Model {
        Model {
            w: p[..p.len() - 1].to_vec(),
            b: p[p.len() - 1],
        }
    }

    #[differentiable]
    fn predict(&self, x: &[f64]) -> f64 {
        let mut s = self.b;
        for i in 0..x.len() {
            s += self.w[i] * x[i];
        }
        s.tanh()
    }
}

/// Mean squared error of the model over rows of `xs` (row-major, `w.len()` columns).
#[autodiff_reverse(d_loss, Duplicated, Const, Const, Active)]
#[autodiff_forward(loss_jvp, Dual, Const, Const, Dual)]
fn loss(m: &Model, xs: &[f64], ys: &[f64]) -> f64 {
    let d = m.w.len();
    let mut l = 0.0;
    for i in 0..ys.len() {
        let r = m.predict(&xs[i * d..(i + 1) * d]) - ys[i];
        l += r * r;
    }
    l / ys.len() as f64
}

#[autodiff_forward(hvp_loss, Dual, Dual, Const, Const)]
fn grad_loss(m: &Model, dm: &mut Model, xs: &[f64], ys: &[f64]) {
    dm.w.fill(0.0);
    dm.b = 0.0;
    d_loss(m, dm, xs, ys, 1.0);
}

/// Reverse over forward through a method call: the gradient of `∇loss(m)·v` is `H·v`
/// with respect to `m`, and `∇loss(m)` with respect to `v`.
#[autodiff_reverse(d_loss_dir, Duplicated, Duplicated, Const, Const, Active)]
fn loss_dir(m: &Model, v: &Model, xs: &[f64], ys: &[f64]) -> f64 {
    loss_jvp(m, v, xs, ys).1
}

fn loss_gradient(p: &[f64], xs: &[f64], ys: &[f64]) -> Vec<f64> {
    let m = Model::from_flat(p);
    let mut g = Model::zeros(m.w.len());
    d_loss(&m, &mut g, xs, ys, 1.0);
    g.flat()
}

/// The model's Hessian, analytically: with `s = tanh(w·x + b)`, `r = s - y` and the
/// features `φ = (x, 1)`, `H = 2/N Σ (s'² + r·s'')·φφᵀ`, `s' = 1 - s²`, `s'' = -2s·s'`.
fn loss_hessian(m: &Model, xs: &[f64], ys: &[f64]) -> Vec<Vec<f64>> {
    let d = m.w.len();
    let n = ys.len();
    let mut h = vec![vec![0.0; d + 1]; d + 1];
    for i in 0..n {
        let mut phi = xs[i * d..(i + 1) * d].to_vec();
        phi.push(1.0);
        let s = m.predict(&xs[i * d..(i + 1) * d]);
        let (ds, dds) = (1.0 - s * s, -2.0 * s * (1.0 - s * s));
        let c = 2.0 / n as f64 * (ds * ds + (s - ys[i]) * dds);
        for a in 0..=d {
            for b in 0..=d {
                h[a][b] += c * phi[a] * phi[b];
            }
        }
    }
    h
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn model_hvp_and_hessian_through_a_method(
        params in prop::collection::vec(-1.0f64..1.0, 4),
        xs in prop::collection::vec(-2.0f64..2.0, 15),
        ys in prop::collection::vec(-1.0f64..1.0, 5),
        dir in prop::collection::vec(-1.0f64..1.0, 4),
    ) {
        let m = Model::from_flat(&params);
        let v = Model::from_flat(&dir);
        let (mut g, mut hv) = (Model::zeros(3), Model::zeros(3));
        hvp_loss(&m, &v, &mut g, &mut hv, &xs, &ys);
        let grad = |p: &[f64]| loss_gradient(p, &xs, &ys);
        let fd = fd_hvp(grad, &params, &dir);
        let h = loss_hessian(&m, &xs, &ys);
        let got = hv.flat();
        for a in 0..4 {
            let exact: f64 = (0..4).map(|b| h[a][b] * dir[b]).sum();
            prop_assert!((got[a] - exact).abs() <= 1e-12 * (1.0 + exact.abs()), "{} vs {}", got[a], exact);
            prop_assert!((got[a] - fd[a]).abs() <= 1e-6 * (1.0 + fd[a].abs()));
        }
        prop_assert_eq!(g.flat(), grad(&params));
        // The same by reverse over forward.
        let (mut hv_rev, mut g_rev) = (Model::zeros(3), Model::zeros(3));
        d_loss_dir(&m, &mut hv_rev, &v, &mut g_rev, &xs, &ys, 1.0);
        let (got, got_g) = (hv_rev.flat(), g_rev.flat());
        for a in 0..4 {
            let exact: f64 = (0..4).map(|b| h[a][b] * dir[b]).sum();
            prop_assert!((got[a] - exact).abs() <= 1e-12 * (1.0 + exact.abs()), "{} vs {}", got[a], exact);
            prop_assert!((got_g[a] - g.flat()[a]).abs() <= 1e-12 * (1.0 + got_g[a].abs()));
        }
    }
}

// ------------------------------------------------------------------ calls in a loop

#[differentiable]
fn pair_term(a: f64, b: f64) -> f64 {
    let u = 1.0 - a;
    let w = b - a * a;
    u * u + 100.0 * w * w
}

/// Rosenbrock as a sum of calls, whose pullbacks run in the reverse sweep of a loop.
#[autodiff_reverse(d_rosen_calls, Duplicated, Active)]
#[autodiff_forward(rosen_calls_jvp, Dual, Dual)]
fn rosen_calls(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += pair_term(x[i], x[i + 1]);
    }
    s
}

#[autodiff_forward(hvp_rosen_calls, Dual, Dual)]
fn grad_rosen_calls(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_rosen_calls(x, dx, 1.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn rosenbrock_hvp_through_calls_in_a_loop(
        x in prop::collection::vec(-2.0f64..2.0, 2..9),
        seed in prop::collection::vec(-1.0f64..1.0, 9),
    ) {
        let n = x.len();
        let v = &seed[..n];
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        hvp_rosen_calls(&x, v, &mut g, &mut hv);
        let want = rosen_hvp_analytic(&x, v);
        for i in 0..n {
            prop_assert!((hv[i] - want[i]).abs() <= 1e-9 * (1.0 + want[i].abs()));
        }
        // The same by reverse over forward, added into the shadow.
        let mut hv_rev = vec![1.0; n];
        let dir = d_rosen_dir(&x, &mut hv_rev, v, 1.0);
        let g_dot_v: f64 = g.iter().zip(v).map(|(a, b)| a * b).sum();
        prop_assert!((dir - g_dot_v).abs() <= 1e-9 * (1.0 + g_dot_v.abs()));
        for i in 0..n {
            let got = hv_rev[i] - 1.0;
            prop_assert!((got - want[i]).abs() <= 1e-9 * (1.0 + want[i].abs()), "{hv_rev:?} vs {want:?}");
        }
    }
}

/// Reverse over forward through calls in a loop: the gradient of `∇f(x)·v` is `H(x)·v`.
#[autodiff_reverse(d_rosen_dir, Duplicated, Const, Active)]
fn rosen_dir(x: &[f64], v: &[f64]) -> f64 {
    rosen_calls_jvp(x, v).1
}

fn rosen_hvp_analytic(x: &[f64], v: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut want = vec![0.0; n];
    for i in 0..n - 1 {
        let (a, b) = (x[i], x[i + 1]);
        let (haa, hab, hbb) = (2.0 + 1200.0 * a * a - 400.0 * b, -400.0 * a, 200.0);
        want[i] += haa * v[i] + hab * v[i + 1];
        want[i + 1] += hab * v[i] + hbb * v[i + 1];
    }
    want
}

// ------------------------------------------------------------------ forward over forward

#[differentiable]
fn cubed(x: f64) -> f64 {
    x * x * x
}

#[autodiff_forward(h_jvp, Dual, Dual)]
fn h(x: f64) -> f64 {
    cubed(x).sin() * x.exp()
}

#[autodiff_forward(d2h, Dual, Dual)]
fn dh(x: f64) -> f64 {
    h_jvp(x, 1.0).1
}

fn h_dual(x: Dual2_64) -> Dual2_64 {
    (x * x * x).sin() * x.exp()
}

/// Reverse over forward through a call: `f''` as the gradient of `f'`.
#[autodiff_reverse(d2h_rev, Active, Active)]
fn dh_rev(x: f64) -> f64 {
    h_jvp(x, 1.0).1
}

/// A callee with an integer parameter and a constant float argument (whose tangent the
/// forward companion passes as `Zero`), called twice.
#[differentiable]
fn shifted_power(x: f64, k: i32, shift: f64) -> f64 {
    (x + shift).powi(k) * x.sin()
}

#[autodiff_forward(q_jvp, Dual, Dual)]
fn q(x: f64) -> f64 {
    shifted_power(x, 3, 0.5) + shifted_power(x * x, 2, -0.25).exp()
}

fn q_dual(x: Dual2_64) -> Dual2_64 {
    (x + 0.5).powi(3) * x.sin() + ((x * x - 0.25).powi(2) * (x * x).sin()).exp()
}

#[autodiff_reverse(d2q_rev, Active, Active)]
fn dq(x: f64) -> f64 {
    q_jvp(x, 1.0).1
}

// ------------------------------------------------------------------ third order

#[autodiff_reverse(d_cos_sq, Duplicated, Active)]
fn cos_sq(x: &[f64]) -> f64 {
    let s: f64 = x.iter().map(|v| v * v).sum();
    s.cos()
}

#[autodiff_forward(hvp_cos_sq, Dual, Dual)]
fn grad_cos_sq(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_cos_sq(x, dx, 1.0);
}

/// Forward over forward over reverse: the derivative of `H(x)·v` along `u`.
#[autodiff_forward(third_cos_sq, Dual, Const, Dual, Dual)]
fn hvp_of_cos_sq(x: &[f64], v: &[f64], g: &mut [f64], hv: &mut [f64]) {
    hvp_cos_sq(x, v, g, hv);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn second_derivative_through_a_call_matches_dual2(x in -1.2f64..1.2) {
        let (d1, d2) = d2h(x, 1.0);
        let want = h_dual(Dual2_64::from_re(x).derivative());
        prop_assert!((d1 - want.v1).abs() <= 1e-12 * (1.0 + want.v1.abs()));
        prop_assert!((d2 - want.v2).abs() <= 1e-12 * (1.0 + want.v2.abs()));
    }

    #[test]
    fn reverse_over_forward_through_calls_matches_dual2(x in -1.2f64..1.2) {
        let (d1, d2) = d2h_rev(x, 1.0);
        let want = h_dual(Dual2_64::from_re(x).derivative());
        prop_assert!((d1 - want.v1).abs() <= 1e-12 * (1.0 + want.v1.abs()));
        prop_assert!((d2 - want.v2).abs() <= 1e-12 * (1.0 + want.v2.abs()));
        let (d1, d2) = d2q_rev(x, 1.0);
        let want = q_dual(Dual2_64::from_re(x).derivative());
        prop_assert!((d1 - want.v1).abs() <= 1e-12 * (1.0 + want.v1.abs()));
        prop_assert!((d2 - want.v2).abs() <= 1e-11 * (1.0 + want.v2.abs()));
    }

    #[test]
    fn third_derivative_matches_dual3(x in -1.5f64..1.5) {
        let (mut g, mut dg, mut hv, mut dhv) = ([0.0], [0.0], [0.0], [0.0]);
        third_cos_sq(&[x], &[1.0], &[1.0], &mut g, &mut dg, &mut hv, &mut dhv);
        let want = {
            let x = Dual3_64::from_re(x).derivative();
            (x * x).cos()
        };
        prop_assert!((g[0] - want.v1).abs() <= 1e-12 * (1.0 + want.v1.abs()));
        prop_assert!((hv[0] - want.v2).abs() <= 1e-12 * (1.0 + want.v2.abs()));
        prop_assert!((dhv[0] - want.v3).abs() <= 1e-11 * (1.0 + want.v3.abs()));
        prop_assert!((dg[0] - want.v2).abs() <= 1e-12 * (1.0 + want.v2.abs()));
    }
}

// ---------------------------------------------------------------- a rule that accumulates into an output

/// `y[0] += a²`, with a reverse rule that accumulates too: under forward over reverse,
/// the rule is run once to hand over its derivatives, and its output put back before they
/// run.
#[custom_rule(reverse = accumulate_rev)]
fn accumulate(a: f64, y: &mut [f64]) {
    y[0] += a * a;
}

#[differentiable]
fn accumulate_rev(a: f64, y: &mut [f64]) -> ((), impl FnOnce(&mut [f64]) -> f64 + use<>) {
    y[0] += a * a;
    ((), move |dy: &mut [f64]| 2.0 * a * dy[0])
}

/// `(a² + 1)²`.
#[autodiff_reverse(d_accumulated, Active, Active)]
fn accumulated(a: f64) -> f64 {
    let mut y = vec![1.0];
    accumulate(a, &mut y);
    y[0] * y[0]
}

#[autodiff_forward(second_accumulated, Dual, Dual)]
fn first_accumulated(a: f64) -> f64 {
    d_accumulated(a, 1.0).1
}

#[test]
fn a_rule_accumulating_into_an_output_under_forward_over_reverse() {
    for a in [0.3_f64, -1.1, 2.0] {
        // f = (a² + 1)²: f' = 4a(a² + 1), f'' = 12a² + 4.
        let (g, h) = second_accumulated(a, 1.0);
        assert!((g - 4.0 * a * (a * a + 1.0)).abs() < 1e-12, "f'({a}) = {g}");
        assert!((h - (12.0 * a * a + 4.0)).abs() < 1e-12, "f''({a}) = {h}");
    }
}
