//! Minimal reproductions of bugs found in the engine, kept as regression tests.
// Index loops, `&Vec` parameters and local vectors are constructs under test.
#![allow(clippy::needless_range_loop, clippy::ptr_arg, clippy::useless_vec)]

use autodiff_core::prelude::*;
use autodiff_core::testing::{check_directional, check_gradient};

fn grad_of(d: fn(&[f64], &mut [f64], f64) -> f64) -> impl Fn(&[f64]) -> Vec<f64> {
    move |x| {
        let mut g = vec![0.0; x.len()];
        d(x, &mut g, 1.0);
        g
    }
}

/// Nested `for` loops in reverse mode recorded the inner range before iterating it.
#[autodiff_reverse(d_nested, Duplicated, Active)]
#[autodiff_forward(nested_jvp, Dual, Dual)]
fn nested(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        for j in 0..x.len() {
            s += x[i] * x[j].sin();
        }
    }
    s
}

/// `let ys = ...collect();` moved the collected buffer, which its adjoint still needed.
#[autodiff_reverse(d_collected, Duplicated, Active)]
#[autodiff_forward(collected_jvp, Dual, Dual)]
fn collected(x: &[f64]) -> f64 {
    let ys: Vec<f64> = x.iter().map(|v| v * v + 1.0).collect();
    let mut p = 1.0;
    for y in ys.iter() {
        p *= y.ln();
    }
    p
}

/// A closure whose body is a compound assignment was rejected.
#[autodiff_reverse(d_for_each_sum, Duplicated, Active)]
#[autodiff_forward(for_each_sum_jvp, Dual, Dual)]
fn for_each_sum(x: &[f64]) -> f64 {
    let mut s = 0.0;
    x.iter().for_each(|v| s += v.exp());
    s
}

/// `l` is computed late in the loop body's reverse (after `k` is stepped back); the
/// branch's block reads it in a `let` that its own reverse re-creates first. That
/// re-creation asked the wrong block which locals were late, and left `v` undefined: the
/// reverse companion did not compile (found by the differential generator, seed 6001).
#[autodiff_reverse(d_late_in_branch, Duplicated, Active)]
#[autodiff_forward(late_in_branch_jvp, Dual, Dual)]
#[allow(clippy::explicit_counter_loop)] // the counter is the construct under test
fn late_in_branch(x: &[f64]) -> f64 {
    let n = x.len();
    let mut k = 0;
    let mut s = 0.0;
    for i in 0..n {
        let l = x[k];
        let y = if l > 0.0 {
            let v = l * 2.0;
            v * x[i].sin()
        } else {
            l * x[i]
        };
        k += 1;
        s += y * y;
    }
    s
}

/// Its gradient, differentiated again.
#[autodiff_forward(late_in_branch_hvp, Dual, Dual)]
fn late_in_branch_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    d_late_in_branch(x, g, 1.0);
}

#[test]
fn late_value_in_a_nested_block() {
    let x = [0.3, -1.1, 0.8, 2.0];
    let v = [0.5, -0.25, 1.0, 0.75];
    check_gradient(late_in_branch, grad_of(d_late_in_branch), &x, 1e-7).unwrap();
    check_directional(
        late_in_branch,
        |x, v| late_in_branch_jvp(x, v).1,
        &x,
        &[&v],
        1e-7,
    )
    .unwrap();
    let (mut g, mut hv) = ([0.0; 4], [0.0; 4]);
    late_in_branch_hvp(&x, &v, &mut g, &mut hv);
    let h = 1e-6;
    let at = |s: f64| {
        let z: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + s * b).collect();
        grad_of(d_late_in_branch)(&z)
    };
    let (gp, gm) = (at(h), at(-h));
    for i in 0..4 {
        let want = (gp[i] - gm[i]) / (2.0 * h);
        assert!(
            (hv[i] - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "H·v[{i}]: {} vs {want}",
            hv[i]
        );
    }
}

#[test]
fn reverse_and_forward_agree_with_finite_differences() {
    let x = [0.3, -1.1, 0.8, 2.0];
    let v = [0.5, -0.25, 1.0, 0.75];
    check_gradient(nested, grad_of(d_nested), &x, 1e-7).unwrap();
    check_directional(nested, |x, v| nested_jvp(x, v).1, &x, &[&v], 1e-7).unwrap();
    check_gradient(collected, grad_of(d_collected), &x, 1e-7).unwrap();
    check_directional(collected, |x, v| collected_jvp(x, v).1, &x, &[&v], 1e-7).unwrap();
    check_gradient(for_each_sum, grad_of(d_for_each_sum), &x, 1e-7).unwrap();
    check_directional(
        for_each_sum,
        |x, v| for_each_sum_jvp(x, v).1,
        &x,
        &[&v],
        1e-7,
    )
    .unwrap();
}

/// `step_by` on an inclusive range cannot be reversed in place.
#[autodiff_reverse(d_stepped, Duplicated, Active)]
#[autodiff_forward(stepped_jvp, Dual, Dual)]
fn stepped(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in (1..=x.len()).step_by(2) {
        s += x[i - 1] * x[i - 1];
    }
    s
}

/// Writes through `iter_mut()` must alias the elements.
#[autodiff_reverse(d_doubled, Duplicated, Duplicated)]
#[autodiff_forward(doubled_jvp, Dual, Dual)]
fn doubled(x: &[f64], y: &mut [f64]) {
    for (i, v) in y.iter_mut().enumerate() {
        *v *= 2.0 * x[i];
    }
}

/// A row of a `Vec<Vec<f64>>` and a nested struct field bound by reference.
struct Inner {
    a: f64,
    b: f64,
}
struct Outer {
    inner: Inner,
}

#[autodiff_reverse(d_rows, Duplicated, Duplicated, Active)]
#[autodiff_forward(rows_jvp, Dual, Dual, Dual)]
fn rows(m: &Vec<Vec<f64>>, o: &Outer) -> f64 {
    let r = &m[1];
    let p = &o.inner;
    let mut s = r[0] * m[0][1] + p.a * p.b;
    for row in m.iter() {
        s += row[0] * row[1];
    }
    s
}

/// A `&mut self` method called on a `&mut` struct parameter.
#[derive(Clone)]
struct Acc {
    b: f64,
}

impl Acc {
    #[differentiable]
    fn bump(&mut self, x: f64) {
        self.b *= x;
    }
}

#[autodiff_reverse(d_use_bump, Duplicated, Active)]
#[autodiff_forward(use_bump_jvp, Dual, Dual)]
fn use_bump(m: &mut Acc, x: f64) {
    m.bump(x);
    m.bump(x);
}

#[test]
fn adapters_mut_iteration_rows_and_mut_methods() {
    let x = [0.3, -1.1, 0.8, 2.0, 1.5];
    check_gradient(stepped, grad_of(d_stepped), &x, 1e-7).unwrap();
    let (_, t) = stepped_jvp(&x, &[1.0; 5]);
    assert!((t - 2.0 * (0.3 + 0.8 + 1.5)).abs() < 1e-12);

    // y_i ← 2 x_i y_i: tangent 2(dx_i y_i + x_i dy_i); cotangents dx_i += 2 y_i ȳ_i, ȳ_i ← 2 x_i ȳ_i.
    let xs = [0.5, -2.0];
    let mut y = [3.0, 0.25];
    let mut dy = [1.0, -1.0];
    doubled_jvp(&xs, &[0.1, 0.2], &mut y, &mut dy);
    assert_eq!(y, [3.0, -1.0]);
    assert!((dy[0] - 2.0 * (0.1 * 3.0 + 0.5 * 1.0)).abs() < 1e-12);
    assert!((dy[1] - 2.0 * (0.2 * 0.25 + 2.0)).abs() < 1e-12);
    let mut y = [3.0, 0.25];
    let mut bx = [0.0; 2];
    let mut by = [1.0, 2.0];
    d_doubled(&xs, &mut bx, &mut y, &mut by);
    assert_eq!(y, [3.0, -1.0]);
    assert_eq!(bx, [6.0, 1.0]);
    assert_eq!(by, [1.0, -8.0]);

    let m = vec![vec![1.0, 2.0], vec![3.0, 4.0]];
    let o = Outer {
        inner: Inner { a: 0.5, b: -1.5 },
    };
    let mut dm = vec![vec![0.0; 2]; 2];
    let mut dob = Outer {
        inner: Inner { a: 0.0, b: 0.0 },
    };
    let v = d_rows(&m, &mut dm, &o, &mut dob, 1.0);
    assert_eq!(v, 3.0 * 2.0 + 0.5 * -1.5 + 1.0 * 2.0 + 3.0 * 4.0);
    assert_eq!(dm, vec![vec![2.0, 3.0 + 1.0], vec![2.0 + 4.0, 3.0]]);
    assert_eq!((dob.inner.a, dob.inner.b), (-1.5, 0.5));
    let tm = vec![vec![1.0, 0.0], vec![0.0, 0.0]];
    let to = Outer {
        inner: Inner { a: 1.0, b: 0.0 },
    };
    let (_, t) = rows_jvp(&m, &tm, &o, &to);
    assert_eq!(t, 2.0 + -1.5);

    let mut acc = Acc { b: 2.0 };
    let mut dacc = Acc { b: 1.0 };
    let gx = d_use_bump(&mut acc, &mut dacc, 3.0);
    assert_eq!(acc.b, 18.0);
    // b ← b x²: the cotangent of the initial b is x² = 9, and d/dx = 2 b x = 12.
    assert_eq!(dacc.b, 9.0);
    assert_eq!(gx, 12.0);
    let mut acc = Acc { b: 2.0 };
    let mut tacc = Acc { b: 1.0 };
    use_bump_jvp(&mut acc, &mut tacc, 3.0, 1.0);
    assert_eq!(tacc.b, 9.0 + 12.0);
}

/// One shadow lent to two arguments of a call.
#[differentiable]
fn dot2(a: &[f64], b: &[f64]) -> f64 {
    a[0] * b[0] + a[1] * b[1]
}

#[differentiable]
fn mul(a: f64, b: f64) -> f64 {
    a * b
}

#[autodiff_reverse(d_split_dot, Duplicated, Active)]
fn split_dot(x: &[f64]) -> f64 {
    dot2(&x[..2], &x[2..]) + dot2(x, x) + mul(x[0], x[0])
}

#[test]
fn one_shadow_for_two_arguments() {
    let x = [0.5, -1.5, 2.0, 0.25];
    check_gradient(split_dot, grad_of(d_split_dot), &x, 1e-7).unwrap();
    // Under H·v too (the scratch shadow of the second argument is read back): f =
    // x₀x₂ + x₁x₃ + x₀² + x₁² + x₀² is quadratic, H = [[4, 0, 1, 0], [0, 2, 0, 1],
    // [1, 0, 0, 0], [0, 1, 0, 0]].
    let v = [1.0, -2.0, 0.5, 3.0];
    let hv = autodiff_core::hvp::<d_split_dot>(&x, &v);
    let want = [4.0 * 1.0 + 0.5, 2.0 * -2.0 + 3.0, 1.0, -2.0];
    for i in 0..4 {
        assert!(
            (hv[i] - want[i]).abs() < 1e-12,
            "H·v[{i}] = {}, expected {}",
            hv[i],
            want[i]
        );
    }
}

/// Constants keep their written types; `copied()` elements and closure arguments are values;
/// `sin_cos` of a constant destructures.
#[autodiff_reverse(d_typed, Duplicated, Active)]
#[autodiff_forward(typed_jvp, Dual, Dual)]
fn typed(x: &[f64]) -> f64 {
    let t: f64 = 0.5;
    let g = |q: f64| if q <= 2.0 { q } else { x[0] };
    let (s, c) = 0.5_f64.sin_cos();
    let mut acc = x[0] * t.sin() + g(x[1]) + g(2.0).abs() * s + c;
    for v in x.iter().copied() {
        if v > 0.0 {
            acc += v * v;
        }
    }
    acc
}

#[test]
fn typed_constants_and_value_arguments() {
    let x = [0.7, -1.2, 1.9];
    check_gradient(typed, grad_of(d_typed), &x, 1e-7).unwrap();
    let v = [0.3, 1.0, -0.5];
    check_directional(typed, |x, v| typed_jvp(x, v).1, &x, &[&v], 1e-7).unwrap();
}

/// A local closure called with a place or local that its caller also reads: the argument
/// binding renamed the shared load (`x[0] + g(x[0])` did not compile).
#[autodiff_reverse(d_reread, Duplicated, Active)]
#[autodiff_forward(reread_jvp, Dual, Dual)]
fn reread(x: &[f64]) -> f64 {
    let g = |q: f64| q * 2.0;
    let h = |a: f64, b: f64| a * b.sin();
    let t = x[1] * 3.0;
    x[0] + g(x[0]) + t + g(t) + h(x[0], x[0])
}

#[test]
fn closure_arguments_that_the_caller_rereads() {
    let x = [0.4, -0.8];
    check_gradient(reread, grad_of(d_reread), &x, 1e-7).unwrap();
    let v = [1.0, 0.5];
    check_directional(reread, |x, v| reread_jvp(x, v).1, &x, &[&v], 1e-7).unwrap();
}

/// An empty `f64` sum is -0.0; the companions started theirs at +0.0, which flips
/// `signum` of an empty sum.
#[autodiff_reverse(d_empty_sum, Duplicated, Active)]
#[autodiff_forward(empty_sum_jvp, Dual, Dual)]
fn empty_sum(x: &[f64]) -> f64 {
    let s: f64 = x[..0].iter().sum();
    let t = x.iter().map(|v| v * 0.0).sum::<f64>();
    x[0] * s.signum() + x[1] * t.signum()
}

#[test]
fn empty_sums_are_negative_zero() {
    let x = [0.5, -2.0];
    let mut g = [0.0; 2];
    let y = d_empty_sum(&x, &mut g, 1.0);
    assert_eq!(y, empty_sum(&x));
    // s = -0.0, so signum(s) = -1; t is a sum of +0.0 and -0.0 terms starting at -0.0.
    assert_eq!(g[0], -1.0);
    assert_eq!(empty_sum_jvp(&x, &[1.0, 0.0]), (y, -1.0));
}

/// `let acc: f64 = if .. { -2.0 } else { 1.5 };` lost its type, so `acc.max(a)` was a
/// method call on an ambiguous `{float}`.
#[autodiff_reverse(d_typed_if, Active, Duplicated, Active)]
#[autodiff_forward(typed_if_jvp, Dual, Dual, Dual)]
fn typed_if(a: f64, x: &[f64]) -> f64 {
    let acc: f64 = if x[1] >= 1.0 { -2.0 } else { 1.5 };
    acc.max(a) * x[0]
}

#[test]
fn typed_if_values() {
    let x = [0.5, 2.0];
    let mut g = [0.0; 2];
    let (y, da) = d_typed_if(-1.0, &x, &mut g, 1.0);
    assert_eq!((y, da, g), (typed_if(-1.0, &x), 0.5, [-1.0, 0.0]));
    let (y, dy) = typed_if_jvp(3.0, 1.0, &x, &[1.0, 0.0]);
    assert_eq!((y, dy), (1.5, 3.5));
}

#[differentiable]
fn half_sin(a: f64) -> f64 {
    0.5 * a.sin()
}

/// A local bound from a call and then added to itself (`acc += acc`): its adjoint, added
/// with a helper because a call's result may be a tuple, was borrowed while it was read
/// (E0503).
#[autodiff_reverse(d_self_sum, Duplicated, Active)]
fn self_sum(x: &[f64]) -> f64 {
    let mut acc: f64 = half_sin(x[0] * x[1]);
    acc += acc;
    acc * x[1]
}

#[test]
fn a_call_result_added_to_itself() {
    // f = sin(x0 x1) x1: ∂f/∂x0 = cos(x0 x1) x1², ∂f/∂x1 = cos(x0 x1) x0 x1 + sin(x0 x1).
    let x = [0.7, -1.3];
    let mut g = [0.0; 2];
    let y = d_self_sum(&x, &mut g, 1.0);
    let (p, c, s) = (x[0] * x[1], (x[0] * x[1]).cos(), (x[0] * x[1]).sin());
    assert!((y - s * x[1]).abs() < 1e-15);
    assert!((g[0] - c * x[1] * x[1]).abs() < 1e-14, "{g:?}");
    assert!((g[1] - (c * p + s)).abs() < 1e-14, "{g:?}");
}

/// An inner loop whose range names a variable containing `skip` (`0..skip_to`), with a
/// buffer read at one index the loop does not change: the reverse took the range for a
/// `skip` adapter and replayed the loop, while the adjoint of `w[i]` was still kept in a
/// local declared only by the other form of loop (E0425).
#[autodiff_reverse(d_named_like_an_adapter, Duplicated, Const, Active)]
fn named_like_an_adapter(w: &[f64], skip: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        let skip_to = (i + skip).min(w.len());
        for j in i..skip_to {
            s += w[i].sin() * (j as f64 + 0.5);
        }
    }
    s
}

#[test]
fn a_range_named_like_an_adapter() {
    // ∂f/∂w_i = cos(w_i) Σ_{j=i}^{min(i+skip, n)-1} (j + 1/2).
    let w = [0.3, -0.8, 1.2, 0.5];
    let mut g = [0.0; 4];
    let y = d_named_like_an_adapter(&w, &mut g, 2, 1.0);
    assert_eq!(y, named_like_an_adapter(&w, 2));
    for i in 0..4 {
        let s: f64 = (i..(i + 2).min(4)).map(|j| j as f64 + 0.5).sum();
        assert!((g[i] - w[i].cos() * s).abs() < 1e-14, "{g:?}");
    }
}

/// Under forward over reverse, the partials of `max`, `min` and `log` against an untyped
/// float literal (`v.max(0.0)`, `x.log(10.0)`) called methods on that literal
/// (`(0.0).is_nan()`, `(10.0).ln()`): E0689, ambiguous numeric type.
#[autodiff_reverse(d_literal_args, Duplicated, Active)]
fn literal_args(x: &[f64]) -> f64 {
    let relu = (x[0] * x[1]).max(0.0);
    relu * relu + x[1].min(-0.25) * x[0] + x[0].log(10.0) * x[1]
}

#[test]
fn second_derivatives_through_literal_arguments() {
    // At x = (1.5, 0.8): x0 x1 > 0 and x1 > -0.25, so f = (x0 x1)² - 0.25 x0 + x1 log10(x0).
    let x = [1.5, 0.8];
    let v = [0.4, -0.7];
    let hv = autodiff_core::hvp::<d_literal_args>(&x, &v);
    let l10 = 10f64.ln();
    let h = [
        [
            2.0 * x[1] * x[1] - x[1] / (x[0] * x[0] * l10),
            4.0 * x[0] * x[1] + 1.0 / (x[0] * l10),
        ],
        [4.0 * x[0] * x[1] + 1.0 / (x[0] * l10), 2.0 * x[0] * x[0]],
    ];
    for i in 0..2 {
        let want = h[i][0] * v[0] + h[i][1] * v[1];
        assert!((hv[i] - want).abs() < 1e-12, "{hv:?}");
    }
}

/// A constant enum whose variant carries a constant.
#[derive(Clone, Copy)]
pub enum Slope {
    Flat,
    Leaky(f64),
}

/// A `match` binding a constant inside a constant parameter, differentiated twice: the
/// forward over reverse reads the companion's binding back as a constant.
#[autodiff_reverse(d_leaky_squares, Duplicated, Const, Active)]
fn leaky_squares(x: &[f64], slope: Slope) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += match slope {
            Slope::Flat => v * v,
            Slope::Leaky(k) => {
                if *v > 0.0 {
                    v * v
                } else {
                    k * v * v
                }
            }
        };
    }
    s
}

#[autodiff_forward(leaky_hvp, Dual, Const, Dual)]
fn leaky_gradient(x: &[f64], slope: Slope, g: &mut [f64]) {
    g.fill(0.0);
    d_leaky_squares(x, g, slope, 1.0);
}

#[test]
fn a_match_binding_a_constant_under_forward_over_reverse() {
    // H = diag(2, 2k) at x = (0.5, -0.5).
    let (mut g, mut hv) = ([0.0; 2], [0.0; 2]);
    leaky_hvp(
        &[0.5, -0.5],
        &[1.0, 1.0],
        Slope::Leaky(0.25),
        &mut g,
        &mut hv,
    );
    assert_eq!((g, hv), ([1.0, -0.25], [2.0, 0.5]));
    leaky_hvp(&[0.5, -0.5], &[1.0, 1.0], Slope::Flat, &mut g, &mut hv);
    assert_eq!((g, hv), ([1.0, -1.0], [2.0, 2.0]));
}

/// A struct whose differentiable method has the name of an integer method.
pub struct Scale {
    pub k: f64,
}

impl Scale {
    #[differentiable]
    pub fn pow(&self, x: f64) -> f64 {
        self.k * x * x
    }
}

/// `s.pow(x)` is the user's method, differentiated, not integer arithmetic.
#[autodiff_reverse(d_scaled_square, Duplicated, Active, Active)]
fn scaled_square(s: &Scale, x: f64) -> f64 {
    s.pow(x) + x.powi(2)
}

#[test]
fn a_user_method_named_like_an_integer_method() {
    let s = Scale { k: 3.0 };
    let mut ds = Scale { k: 0.0 };
    let (y, dx) = d_scaled_square(&s, &mut ds, 2.0, 1.0);
    assert_eq!((y, dx, ds.k), (16.0, 16.0, 4.0));
}

#[differentiable]
fn square(x: f64) -> f64 {
    x * x
}

/// A float local that takes a struct parameter's name (`let mut s = square(x)` after
/// `s.k` was read) stays a float.
#[autodiff_forward(shadowed_param_fwd, Const, Dual, Dual)]
#[autodiff_reverse(shadowed_param_rev, Const, Active, Active)]
fn shadowed_param(s: &Scale, x: f64) -> f64 {
    let k = s.k;
    let mut s = square(x);
    s *= k;
    s + 1.0
}

#[test]
fn a_float_local_named_as_a_struct_parameter() {
    let s = Scale { k: 3.0 };
    // 3x² + 1 at x = 2: 13, derivative 6x = 12.
    assert_eq!(shadowed_param_fwd(&s, 2.0, 1.0), (13.0, 12.0));
    assert_eq!(shadowed_param_rev(&s, 2.0, 1.0), (13.0, 12.0));
}

type Idx = usize;

/// A conversion to an integer type named by an alias picks an element, as `as usize`
/// does (a float alias is refused: `tests/ui/cast_to_float_alias.rs`).
#[autodiff_forward(picked_fwd, Dual, Dual)]
#[autodiff_reverse(picked_rev, Duplicated, Active)]
fn picked(x: &[f64]) -> f64 {
    let k = (x[0].abs() * 2.0) as Idx % x.len();
    x[k] * x[1]
}

#[test]
fn a_conversion_to_an_integer_alias() {
    // x[0] = 1.2: k = 2, f = x[2]·x[1].
    let x = [1.2, 3.0, -0.5];
    assert_eq!(picked_fwd(&x, &[0.0, 1.0, 2.0]), (-1.5, -0.5 + 6.0));
    let mut g = [0.0; 3];
    assert_eq!(picked_rev(&x, &mut g, 1.0), -1.5);
    assert_eq!(g, [0.0, -0.5, 3.0]);
}

/// A body with a float member of each type and a count.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Body {
    pub pos: f64,
    pub mass: f32,
    pub n: usize,
}

/// Float members converted with `as` (and `f64::from`) in an expression carried no
/// derivative: the conversion was kept as written.
#[autodiff_forward(member_casts_fwd, Dual, Dual)]
#[autodiff_reverse(member_casts_rev, Duplicated, Active)]
#[allow(clippy::unnecessary_cast)] // `f64 as f64` is one of the cases
fn member_casts(b: &Body) -> f64 {
    b.pos as f64 * 2.0 + b.mass as f64 * 10.0 + f64::from(b.mass) * b.pos + b.n as f64
}

#[test]
fn float_members_converted_with_as() {
    let b = Body {
        pos: 0.5,
        mass: 2.0,
        n: 3,
    };
    // f = 2 pos + 10 mass + mass·pos + n: ∂pos = 2 + mass = 4, ∂mass = 10 + pos = 10.5.
    // The shadow's count (7) carries no derivative.
    let mut d = Body {
        pos: 0.0,
        mass: 0.0,
        n: 7,
    };
    assert_eq!(member_casts_rev(&b, &mut d, 1.0), 25.0);
    assert_eq!((d.pos, d.mass, d.n), (4.0, 10.5, 7));
    let along = |pos: f64, mass: f32| Body { pos, mass, n: 7 };
    assert_eq!(member_casts_fwd(&b, &along(1.0, 0.0)), (25.0, 4.0));
    assert_eq!(member_casts_fwd(&b, &along(0.0, 1.0)), (25.0, 10.5));
}

#[autodiff_reverse(power_rev, Duplicated, Active)]
fn power(x: &[f64]) -> f64 {
    x[0].powf(x[1])
}

/// The partial of `a.powf(b)` in `a` was written as zero at `b = 0`, so its derivative in
/// `b` (the mixed second derivative `1/a`) was lost there.
#[test]
fn mixed_second_derivative_of_powf_at_a_zero_exponent() {
    let a: f64 = 2.0;
    // H at b = 0: [[0, 1/a], [1/a, ln²a]].
    let hv = autodiff_core::hvp::<power_rev>(&[a, 0.0], &[0.0, 1.0]);
    assert!((hv[0] - 0.5).abs() < 1e-15, "{hv:?}");
    assert!((hv[1] - a.ln().powi(2)).abs() < 1e-15, "{hv:?}");
    let hv = autodiff_core::hvp::<power_rev>(&[a, 0.0], &[1.0, 0.0]);
    assert!(hv[0].abs() < 1e-15 && (hv[1] - 0.5).abs() < 1e-15, "{hv:?}");
}

/// A pair energy that computes every distance, its own (zero) included, and uses only the
/// others: the square root's partial at zero is infinite, and its zero adjoint gave the
/// gradient `0 · ∞`, not a number.
#[autodiff_reverse(pair_energy_rev, Duplicated, Active)]
#[autodiff_forward(pair_energy_fwd, Dual, Dual)]
fn pair_energy(p: &[f64]) -> f64 {
    let n = p.len() / 2;
    let mut e = 0.0;
    for i in 0..n {
        for j in 0..n {
            let dx = p[2 * i] - p[2 * j];
            let dy = p[2 * i + 1] - p[2 * j + 1];
            let r = (dx * dx + dy * dy).sqrt();
            let inv = 1.0 / r;
            if i != j {
                e += 0.5 * inv + 0.1 * r.ln();
            }
        }
    }
    e
}

#[test]
fn unused_values_with_infinite_partials() {
    let p = [0.0, 0.0, 1.0, 0.5, -0.5, 2.0];
    let grad = grad_of(pair_energy_rev);
    check_gradient(pair_energy, &grad, &p, 1e-6).unwrap();
    let dirs: [&[f64]; 2] = [
        &[1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        &[0.3, -0.2, 0.1, 0.4, -0.6, 0.25],
    ];
    check_directional(
        pair_energy,
        |x: &[f64], v: &[f64]| pair_energy_fwd(x, v).1,
        &p,
        &dirs,
        1e-6,
    )
    .unwrap();
    // H·v (forward over reverse) against differences of the gradient.
    let v = [0.3, -0.2, 0.1, 0.4, -0.6, 0.25];
    let hv = autodiff_core::hvp::<pair_energy_rev>(&p, &v);
    let h = 1e-6;
    let at = |s: f64| -> Vec<f64> {
        let q: Vec<f64> = p.iter().zip(&v).map(|(a, b)| a + s * h * b).collect();
        grad(&q)
    };
    let (plus, minus) = (at(1.0), at(-1.0));
    for i in 0..p.len() {
        let fd = (plus[i] - minus[i]) / (2.0 * h);
        assert!(
            (hv[i] - fd).abs() < 1e-5 * (1.0 + fd.abs()),
            "{i}: {} vs {fd}",
            hv[i]
        );
    }
}

/// A forward companion of a function taking a struct behind `&mut` asked the struct for
/// `Clone`: the variants that differentiate the function again for nested callers copy
/// it. Those copies now ask only where they run.
pub struct Oscillator {
    pub p: f64,
    pub v: f64,
}

impl Oscillator {
    #[autodiff_forward(step_jvp, Dual, Dual)]
    pub fn step(&mut self, k: f64) {
        self.v -= k * self.p.sin();
        self.p += 0.1 * self.v;
    }
}

#[autodiff_forward(push_jvp, Dual, Dual, Dual)]
fn push(o: &mut Oscillator, k: f64) -> f64 {
    o.v = o.v * k + o.p.cos();
    o.p * o.v
}

#[test]
fn forward_companions_of_structs_behind_mut_without_clone() {
    let (p, v, k) = (0.3, -0.2, 0.7);
    let mut o = Oscillator { p, v };
    let mut d = Oscillator { p: 0.0, v: 0.0 };
    o.step_jvp(&mut d, k, 1.0);
    // v1 = v - k sin p, p1 = p + 0.1 v1: d/dk.
    let (v1, p1) = (v - k * p.sin(), p + 0.1 * (v - k * p.sin()));
    assert!((o.v - v1).abs() < 1e-15 && (o.p - p1).abs() < 1e-15);
    assert!((d.v + p.sin()).abs() < 1e-15, "{}", d.v);
    assert!((d.p + 0.1 * p.sin()).abs() < 1e-15, "{}", d.p);

    // The tangent of the initial state carried through: d/dp.
    let mut o = Oscillator { p, v };
    let mut d = Oscillator { p: 1.0, v: 0.0 };
    o.step_jvp(&mut d, k, 0.0);
    assert!((d.v + k * p.cos()).abs() < 1e-15, "{}", d.v);
    assert!((d.p - (1.0 - 0.1 * k * p.cos())).abs() < 1e-15, "{}", d.p);

    // r = p (v k + cos p): d/dk = p v, with the state's new velocity's tangent v.
    let mut o = Oscillator { p, v };
    let mut d = Oscillator { p: 0.0, v: 0.0 };
    let (r, dr) = push_jvp(&mut o, &mut d, k, 1.0);
    assert!((r - p * (v * k + p.cos())).abs() < 1e-15);
    assert!((dr - p * v).abs() < 1e-15, "{dr}");
    assert!((d.v - v).abs() < 1e-15 && d.p == 0.0);
}

/// A reverse companion of a `&mut self` method asked the struct for `Clone`, to keep its
/// final value while the reverse sweep put back what it overwrote. A body that changes
/// only members keeps those members instead.
pub struct Accumulator {
    pub s: f64,
    pub w: f64,
    pub hist: Vec<f64>,
    pub buf: [f64; 2],
}

impl Accumulator {
    #[autodiff_reverse(step_rev, Duplicated, Active, Active)]
    #[autodiff_forward(step_fwd, Dual, Dual, Dual)]
    pub fn step(&mut self, x: f64) -> f64 {
        let old = self.s;
        self.s = self.s * x + self.w * x.sin();
        self.buf[0] = self.buf[1] * x;
        self.buf[1] = old;
        self.hist[0] += self.s * self.s;
        self.s * self.buf[0] + self.hist[0]
    }

    fn start(s: f64, w: f64, b1: f64, h0: f64) -> Self {
        Accumulator {
            s,
            w,
            hist: vec![h0],
            buf: [0.3, b1],
        }
    }

    fn zero() -> Self {
        Accumulator {
            s: 0.0,
            w: 0.0,
            hist: vec![0.0],
            buf: [0.0; 2],
        }
    }
}

#[test]
fn reverse_companions_of_mut_self_methods_without_clone() {
    let (s, w, b1, h0, x) = (2.0, 0.5, -0.7, 0.25, 0.7);
    let value = |v: &[f64]| Accumulator::start(v[0], v[1], v[2], v[3]).step(v[4]);
    let p = [s, w, b1, h0, x];
    let mut a = Accumulator::start(s, w, b1, h0);
    let mut da = Accumulator::zero();
    let (y, dx) = a.step_rev(&mut da, x, 1.0);
    assert_eq!(y, value(&p));
    // The struct holds its final value, as after the primal.
    let mut b = Accumulator::start(s, w, b1, h0);
    b.step(x);
    assert_eq!((a.s, a.hist, a.buf), (b.s, b.hist, b.buf));
    // Adjoints of the initial members and of `x`, against central differences.
    let h = 1e-6;
    let central = |i: usize| {
        let (mut up, mut down) = (p, p);
        up[i] += h;
        down[i] -= h;
        (value(&up) - value(&down)) / (2.0 * h)
    };
    let ours = [da.s, da.w, da.buf[1], da.hist[0], dx];
    for (i, g) in ours.iter().enumerate() {
        assert!((g - central(i)).abs() < 1e-6, "{i}: {g} vs {}", central(i));
    }
    // The forward companion agrees with the reverse one.
    let mut c = Accumulator::start(s, w, b1, h0);
    let mut dc = Accumulator::zero();
    let (_, t) = c.step_fwd(&mut dc, x, 1.0);
    assert!((t - dx).abs() < 1e-12);
}

/// A particle stepped in place by its own method, kept in a local vector of struct
/// values (`Clone`, not `Copy`).
#[differentiable]
#[derive(Clone)]
pub struct Swinger {
    pub x: f64,
    pub v: f64,
    pub trail: [f64; 2],
}

impl Swinger {
    #[differentiable]
    fn step(&mut self, dt: f64, k: f64) {
        self.v -= dt * k * self.x.sin();
        self.x += dt * self.v;
        self.trail[1] = self.trail[0];
        self.trail[0] = self.x;
    }
}

/// `vec![Swinger { .. }, ..]` stepped by `iter_mut`: the nested variants that every
/// annotated function carries copied an element out of the vector and moved a saved
/// element back twice (rustc's "cannot move out of index", "use of moved value"), and the
/// forward companion's tangent vector read struct values the primal vector had moved.
#[autodiff_reverse(d_oscillators, Active, Active)]
#[autodiff_forward(f_oscillators, Dual, Dual)]
fn oscillators(k: f64) -> f64 {
    let first = Swinger {
        x: 1.0,
        v: 0.0,
        trail: [0.0; 2],
    };
    let second = Swinger {
        x: 0.5,
        v: 0.3,
        trail: [0.0; 2],
    };
    let mut os = vec![first, second];
    let mut more = vec![Swinger {
        x: -0.2,
        v: 0.1,
        trail: [0.0; 2],
    }];
    for _ in 0..40 {
        for o in os.iter_mut() {
            o.step(0.05, k);
        }
        more[0].step(0.05, k);
    }
    os.iter().map(|o| o.x * o.v + o.trail[1]).sum::<f64>() + more[0].trail[1] * k
}

#[autodiff_forward(oscillators_hvp, Dual, Dual)]
fn oscillators_grad(k: &[f64], g: &mut [f64]) {
    g[0] = d_oscillators(k[0], 1.0).1;
}

#[test]
fn vectors_of_clone_structs_stepped_by_their_methods() {
    let f = |p: &[f64]| oscillators(p[0]);
    let grad = |p: &[f64]| vec![d_oscillators(p[0], 1.0).1];
    let jvp = |p: &[f64], v: &[f64]| f_oscillators(p[0], v[0]).1;
    let grad_value = |p: &[f64]| d_oscillators(p[0], 1.0).1;
    for k in [0.3, 0.8, 1.7] {
        assert_eq!(d_oscillators(k, 1.0).0, oscillators(k));
        check_gradient(f, grad, &[k], 1e-6).unwrap();
        check_directional(f, jvp, &[k], &[&[1.0], &[-0.5]], 1e-6).unwrap();
        // H·v (forward over reverse) against differences of the gradient.
        let (mut g, mut hv) = ([0.0], [0.0]);
        oscillators_hvp(&[k], &[1.0], &mut g, &mut hv);
        assert_eq!(g[0], grad_value(&[k]));
        check_directional(grad_value, |_, v| hv[0] * v[0], &[k], &[&[1.0]], 1e-5).unwrap();
    }
}

#[differentiable]
fn product_of_first_two(x: &[f64]) -> f64 {
    x[0] * x[1]
}

/// `let mut s = acc;` of a call's value inside a block, changed in a loop while `acc`
/// changes after it: the companion copies the float (`__ad::copy_of(&acc)`), and the
/// nested variants lowered that copy as a buffer, whose `s.powi(2)` and `s.sin()` became
/// calls of user methods (rustc's "no method named `__ad_fwd_powi` found for type
/// `f64`"; differential test, seed 7001, function 171).
#[autodiff_reverse(d_copied_call_value, Duplicated, Active)]
fn copied_call_value(x: &[f64]) -> f64 {
    let mut acc = product_of_first_two(x);
    if acc + x[0] < 5.0 {
        let mut s = acc;
        let mut k = 0;
        loop {
            if k >= 2 {
                break;
            }
            k += 1;
            s += (s.powi(2) + 1.0).powi(-2) * x[k - 1];
        }
        acc += s.sin();
    }
    acc * x[1]
}

#[autodiff_forward(copied_call_value_hvp, Dual, Dual)]
fn copied_call_value_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    d_copied_call_value(x, g, 1.0);
}

#[test]
fn copies_of_a_call_value_differentiated_again() {
    let x = [0.3, 0.7];
    check_gradient(copied_call_value, grad_of(d_copied_call_value), &x, 1e-6).unwrap();
    let gradient = |x: &[f64]| {
        let mut g = vec![0.0; 2];
        copied_call_value_grad(x, &mut g);
        g
    };
    for v in [[1.0, 0.0], [0.4, -0.9]] {
        let (mut g, mut hv) = ([0.0; 2], [0.0; 2]);
        copied_call_value_hvp(&x, &v, &mut g, &mut hv);
        for k in 0..2 {
            let component = |y: &[f64]| gradient(y)[k];
            let want = autodiff_core::testing::central_directional(component, &x, &v, 1e-5);
            assert!((hv[k] - want).abs() < 1e-6, "{k}: {} vs {want}", hv[k]);
        }
    }
}

/// A sum read before the loop that adds into it (`let scaled = a * acc;`), in a loop with
/// a scratch buffer: the loop's iterations were reversed in place (`fused.rs`), and the
/// reverse of `scaled` then read the sum's final value instead of its value before the
/// loop, a wrong gradient (differential test, seed 7001, function 4).
#[autodiff_reverse(d_sum_read_before_its_loop, Active, Const, Active)]
#[autodiff_forward(f_sum_read_before_its_loop, Dual, Const, Dual)]
fn sum_read_before_its_loop(a: f64, y: &[f64]) -> f64 {
    let n = y.len();
    let mut acc = 0.3 + y[0];
    let scaled = a * acc;
    let squared = a * a;
    let mut scratch = vec![0.0; n];
    for i in 0..n {
        for j in 0..n {
            scratch[j] = (y[j] - y[i] * 0.5).sin();
        }
        acc += scaled * squared * 0.25 + scratch[(i + 1) % n] * a;
    }
    acc * 0.3 + a
}

#[test]
fn sums_read_before_their_loop() {
    let y = [0.1, 0.5, -0.3];
    let f = |p: &[f64]| sum_read_before_its_loop(p[0], &y);
    let grad = |p: &[f64]| vec![d_sum_read_before_its_loop(p[0], &y, 1.0).1];
    let jvp = |p: &[f64], v: &[f64]| f_sum_read_before_its_loop(p[0], v[0], &y).1;
    for a in [-0.45, 0.8] {
        check_gradient(f, grad, &[a], 1e-7).unwrap();
        check_directional(f, jvp, &[a], &[&[1.0]], 1e-7).unwrap();
    }
}

/// `match b.last() { Some(v) => .., None => .. }` of a local vector filled in a loop: the
/// element bound by reference, `&b[b.len().wrapping_sub(1)]`, kept its index by copying
/// the `let mut` locals it reads, the vector among them, which moved it (rustc's "borrow
/// of moved value"; differential test, seed 7001, function 287, and seed 7003, function
/// 378).
#[autodiff_reverse(d_last_of_local_vector, Duplicated, Const, Active)]
#[autodiff_forward(f_last_of_local_vector, Dual, Const, Dual)]
fn last_of_local_vector(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len();
    let mut acc = 0.0;
    let mut b = vec![0.0; n];
    for i in 0..n {
        for j in 0..n {
            b[j] = x[j] * x[i];
        }
        let v = match b.last() {
            Some(v) => *v * y[i],
            None => b[0] * 0.5,
        };
        acc += v;
    }
    acc
}

#[autodiff_forward(last_of_local_vector_hvp, Dual, Dual)]
fn last_of_local_vector_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    d_last_of_local_vector(x, g, &[1.0, 2.0, 3.0], 1.0);
}

#[test]
fn last_element_of_a_local_vector_matched() {
    let y = [1.0, 2.0, 3.0];
    let x = [0.3, 0.7, -0.2];
    let f = |p: &[f64]| last_of_local_vector(p, &y);
    let grad = |p: &[f64]| {
        let mut g = vec![0.0; 3];
        d_last_of_local_vector(p, &mut g, &y, 1.0);
        g
    };
    let jvp = |p: &[f64], v: &[f64]| f_last_of_local_vector(p, v, &y).1;
    check_gradient(f, grad, &x, 1e-7).unwrap();
    check_directional(f, jvp, &x, &[&[1.0, -0.5, 0.25]], 1e-7).unwrap();
    let v = [0.4, -0.9, 0.2];
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    last_of_local_vector_hvp(&x, &v, &mut g, &mut hv);
    for k in 0..3 {
        let component = |p: &[f64]| grad(p)[k];
        let want = autodiff_core::testing::central_directional(component, &x, &v, 1e-5);
        assert!((hv[k] - want).abs() < 1e-6, "{k}: {} vs {want}", hv[k]);
    }
}

/// A local copied from a sum (`let t = s;` in the lowered code of `(i as f64) + s`, where
/// `s` changes in an inner loop after it) lent the sum's adjoint its shape in the reverse
/// of a nested block, where the copy is computed again only further down: the code
/// differentiated again read it outside its scope (rustc's "cannot find value"; differential
/// test, seed 7008, function 146, whose forward companion returns only the tangent, as here:
/// with `Dual` the copy is laid out otherwise).
#[autodiff_reverse(d_sum_changed_in_inner_loop, Duplicated, Active)]
#[autodiff_forward(f_sum_changed_in_inner_loop, Dual, DualOnly)]
fn sum_changed_in_inner_loop(x: &[f64]) -> f64 {
    let n = x.len();
    let mut acc = x[1].atan().powi(2);
    let (sn, _) = (acc * x[0]).sin_cos();
    for i in 0..n {
        let mut s = sn + x[1];
        let q = x[n - 1 - i] / (((i as f64) + s).sin().powi(2) + 1.0);
        for j in 0..3 {
            let t = x.iter().fold(1.5, |a, v| a * 0.25 + (*v + j as f64));
            s += t * 0.5;
        }
        acc += (s + q) * 0.9;
    }
    acc * 0.5
}

#[autodiff_forward(sum_changed_in_inner_loop_hvp, Dual, Dual)]
fn sum_changed_in_inner_loop_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    d_sum_changed_in_inner_loop(x, g, 1.0);
}

#[test]
fn sums_changed_in_an_inner_loop_differentiated_again() {
    let x = [0.3, 0.7, -0.2];
    let grad = grad_of(d_sum_changed_in_inner_loop);
    let jvp = |p: &[f64], v: &[f64]| f_sum_changed_in_inner_loop(p, v);
    check_gradient(sum_changed_in_inner_loop, &grad, &x, 1e-7).unwrap();
    check_directional(
        sum_changed_in_inner_loop,
        jvp,
        &x,
        &[&[1.0, -0.5, 0.25]],
        1e-7,
    )
    .unwrap();
    let v = [0.4, -0.9, 0.2];
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    sum_changed_in_inner_loop_hvp(&x, &v, &mut g, &mut hv);
    for k in 0..3 {
        let component = |p: &[f64]| grad(p)[k];
        let want = autodiff_core::testing::central_directional(component, &x, &v, 1e-5);
        assert!((hv[k] - want).abs() < 1e-6, "{k}: {} vs {want}", hv[k]);
    }
}
