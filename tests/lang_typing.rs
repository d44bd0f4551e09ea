//! Types that the written code fixes and the lowered code must keep: a closure's typed
//! parameter called with an untyped float local, `fold` from a literal with `f64::max`,
//! and `T::from(v).unwrap()` conversions in generic code (from an integer index and from
//! a float). Each against the num-dual oracle in both modes; the conversion also under
//! forward over reverse. Parameters that refer to a value of a generic type that is not
//! a float (`&impl Backend`, `&B`) carry no derivative and are passed on.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::{Dual64, Num, c, check, check_hvp, check_slice, config, seed, slice_case};
use num_traits::Float;
use proptest::prelude::*;

/// `let t = 0.5; g(t)` with `g = |t: f64| ..`: the call makes `t` an `f64`.
#[autodiff_forward(closure_typed_fwd, Dual, Dual)]
#[autodiff_reverse(closure_typed_rev, Duplicated, Active)]
fn closure_typed(x: &[f64]) -> f64 {
    let g = |t: f64| x[0] * t.sin() + t.exp() * x[1];
    let t = 0.5;
    let mut s = g(t);
    let mut u = 0.0;
    for i in 0..x.len() {
        u += 0.25;
        s += g(u) * x[i];
    }
    s
}

fn closure_typed_o<D: Num>(x: &[D]) -> D {
    let g = |t: f64| x[0] * t.sin() + x[1] * t.exp();
    let mut s = g(0.5);
    let mut u = 0.0;
    for i in 0..x.len() {
        u += 0.25;
        s += g(u) * x[i];
    }
    s
}

/// `fold(0.0, f64::max)` and `fold(1.0, f64::min)`: the path types the literal.
#[autodiff_forward(fold_paths_fwd, Dual, Dual)]
#[autodiff_reverse(fold_paths_rev, Duplicated, Active)]
fn fold_paths(x: &[f64]) -> f64 {
    let hi = x.iter().map(|v| v * v).fold(0.0, f64::max);
    let lo = x.iter().copied().fold(1.0, f64::min);
    hi * lo + hi.sqrt()
}

fn fold_paths_o<D: Num>(x: &[D]) -> D {
    let pick = |a: D, b: D, greater: bool| {
        if (b.re() > a.re()) == greater && b.re() != a.re() {
            b
        } else {
            a
        }
    };
    let mut hi = c::<D>(0.0);
    let mut lo = c::<D>(1.0);
    for v in x {
        hi = pick(hi, *v * *v, true);
        lo = pick(lo, *v, false);
    }
    hi * lo + hi.sqrt()
}

/// `T::from(i).unwrap()` (an integer: a constant) and `T::from(x[0]).unwrap()` (a float:
/// carries its derivative), in a closure with a typed generic parameter.
#[autodiff_forward(conversions_fwd, Dual, Dual)]
#[autodiff_reverse(conversions_rev, Duplicated, Active)]
fn conversions<T: Float>(x: &[T]) -> T {
    let mut out = T::zero();
    for i in 0..x.len() {
        let w = T::from(i).unwrap();
        let f = |t: T| t * w + T::from(x[0]).unwrap().sin();
        out = out + x[i] * f(x[i]);
    }
    out
}

fn conversions_o<D: Num>(x: &[D]) -> D {
    let mut out = c::<D>(0.0);
    for i in 0..x.len() {
        out += x[i] * (x[i] * (i as f64) + x[0].sin());
    }
    out
}

/// Constant buffers of integers beside the active one: indexed, iterated by reference
/// (`for &k in ks`, `for u in us.iter()` with `*u`), through `map(|&j| ..)`, and their
/// lengths.
// A `&Vec` parameter is one of the constructs under test.
#[allow(clippy::ptr_arg)]
#[autodiff_forward(counted_fwd, Dual, Const, Const, Const, Dual)]
#[autodiff_reverse(counted_rev, Duplicated, Const, Const, Const, Active)]
fn counted(x: &[f64], ks: &[usize], us: &Vec<u32>, is: &[i32]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * ks[i % ks.len()] as f64;
    }
    for &k in ks {
        s += x[k % x.len()].sin();
    }
    for u in us.iter() {
        s += x[0] * x[0] * *u as f64;
    }
    let t: f64 = is.iter().map(|&j| x[x.len() - 1] * j as f64).sum();
    s + t * x[0] + (us.len() + is.len()) as f64
}

fn counted_o<D: Num>(x: &[D], ks: &[usize], us: &[u32], is: &[i32]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        s += x[i] * ks[i % ks.len()] as f64;
    }
    for &k in ks {
        s += x[k % n].sin();
    }
    for &u in us {
        s += x[0] * x[0] * u as f64;
    }
    let mut t = c::<D>(0.0);
    for &j in is {
        t += x[n - 1] * j as f64;
    }
    s + t * x[0] + (us.len() + is.len()) as f64
}

const KS: [usize; 3] = [2, 0, 3];
const IS: [i32; 3] = [-2, 5, 1];

/// The gradient of [`counted`], whose forward companion is its H·v.
#[allow(clippy::ptr_arg)]
#[autodiff_forward(counted_hvp, Dual, Dual, Const, Const, Const)]
fn counted_grad(x: &[f64], g: &mut [f64], ks: &[usize], us: &Vec<u32>, is: &[i32]) {
    g.fill(0.0);
    counted_rev(x, g, ks, us, is, 1.0);
}

/// The gradient of [`conversions`], whose forward companion is its H·v.
#[autodiff_forward(conversions_hvp, Dual, Dual)]
fn conversions_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    conversions_rev(x, g, 1.0);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn closure_parameter_types((x, v, s0) in slice_case(-1.0, 1.0, 2..6, 0), s in seed()) {
        check_slice(
            "closure_typed",
            (&x, &v, &s0, s),
            closure_typed,
            closure_typed_fwd,
            closure_typed_rev,
            closure_typed_o::<Dual64>,
        );
    }

    #[test]
    fn fold_with_float_paths((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice(
            "fold_paths",
            (&x, &v, &s0, s),
            fold_paths,
            fold_paths_fwd,
            fold_paths_rev,
            fold_paths_o::<Dual64>,
        );
    }

    #[test]
    fn constant_buffers_of_integers((x, v, s0) in slice_case(-1.0, 1.0, 2..6, 0), s in seed()) {
        let us = vec![1u32, 4];
        check_slice(
            "counted",
            (&x, &v, &s0, s),
            |x| counted(x, &KS, &us, &IS),
            |x, v| counted_fwd(x, v, &KS, &us, &IS),
            |x, b, s| counted_rev(x, b, &KS, &us, &IS, s),
            |x| counted_o::<Dual64>(x, &KS, &us, &IS),
        );
        let n = x.len();
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        counted_hvp(&x, &v[..n], &mut g, &mut hv, &KS, &us, &IS);
        check_hvp(&hv, &x, &v[..n], |d| counted_o(d, &KS, &us, &IS));
    }

    #[test]
    fn generic_conversions((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice(
            "conversions",
            (&x, &v, &s0, s),
            conversions,
            conversions_fwd,
            conversions_rev,
            conversions_o::<Dual64>,
        );
        // H·v of Σ i x_i² + sin(x_0) Σ x_i: H = diag(2i) + cos(x_0) (e_0 1ᵀ + 1 e_0ᵀ)
        // - sin(x_0) Σx e_0 e_0ᵀ.
        let n = x.len();
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        conversions_hvp(&x, &v[..n], &mut g, &mut hv);
        let sum_x: f64 = x.iter().sum();
        let sum_v: f64 = v[..n].iter().sum();
        for i in 0..n {
            let mut want = 2.0 * i as f64 * v[i] + x[0].cos() * v[0];
            if i == 0 {
                want += x[0].cos() * sum_v - x[0].sin() * sum_x * v[0];
            }
            check(&format!("H·v[{i}]"), hv[i], want);
        }
    }
}

/// An array parameter whose length is a const parameter, read with it.
#[autodiff_forward(fixed_fwd, Dual, Dual)]
#[autodiff_reverse(fixed_rev, Duplicated, Active)]
fn fixed<const N: usize>(x: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += x[i] * x[(i + 1) % N].sin();
    }
    s
}

#[test]
fn arrays_of_const_generic_length() {
    let x = [0.4, -1.2, 0.9];
    let v = [1.0, 0.5, -0.25];
    // ∂/∂x_j: sin(x_{j+1}) + x_{j-1} cos(x_j).
    let want: Vec<f64> = (0..3)
        .map(|j| x[(j + 1) % 3].sin() + x[(j + 2) % 3] * x[j].cos())
        .collect();
    let mut g = [0.0; 3];
    fixed_rev(&x, &mut g, 1.0);
    for j in 0..3 {
        check(&format!("grad[{j}]"), g[j], want[j]);
    }
    let (_, t) = fixed_fwd(&x, &v);
    check("tangent", t, (0..3).map(|j| want[j] * v[j]).sum());
}

/// A helper generic over its arrays' length.
#[differentiable]
fn fixed_dot<const N: usize>(a: &[f64; N], b: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += a[i] * b[i].sin();
    }
    s
}

/// Calls of the helper at one length, from a function that is not generic.
#[autodiff_forward(fixed_calls_fwd, Dual, Dual)]
#[autodiff_reverse(fixed_calls_rev, Duplicated, Active)]
fn fixed_calls(x: &[f64; 3]) -> f64 {
    fixed_dot(x, x) + fixed(x)
}

/// H·v through the const-generic function's reverse companion, at one length.
#[autodiff_forward(fixed_hvp, Dual, Dual)]
fn fixed_gradient(x: &[f64; 3], g: &mut [f64; 3]) {
    *g = [0.0; 3];
    fixed_rev(x, g, 1.0);
}

#[test]
fn const_generic_helpers_called_at_one_length() {
    let x = [0.4, -1.2, 0.9];
    let v = [1.0, 0.5, -0.25];
    // ∂/∂x_j of Σ x_i sin x_i and of `fixed`.
    let want: Vec<f64> = (0..3)
        .map(|j| {
            x[j].sin() + x[j] * x[j].cos() + x[(j + 1) % 3].sin() + x[(j + 2) % 3] * x[j].cos()
        })
        .collect();
    let mut g = [0.0; 3];
    fixed_calls_rev(&x, &mut g, 1.0);
    for j in 0..3 {
        check(&format!("grad[{j}]"), g[j], want[j]);
    }
    let (_, t) = fixed_calls_fwd(&x, &v);
    check("tangent", t, (0..3).map(|j| want[j] * v[j]).sum());

    // `fixed`'s Hessian: diagonal -x_{j-1} sin x_j, and cos x_{j+1} between j and j+1.
    let hess = |j: usize, k: usize| {
        if j == k {
            -x[(j + 2) % 3] * x[j].sin()
        } else if k == (j + 1) % 3 {
            x[k].cos()
        } else {
            x[j].cos()
        }
    };
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    fixed_hvp(&x, &v, &mut g, &mut hv);
    for j in 0..3 {
        let want: f64 = (0..3).map(|k| hess(j, k) * v[k]).sum();
        check(&format!("H·v[{j}]"), hv[j], want);
    }
}

/// Locals holding integers: a count cast to `i64` for `rem_euclid`, a `Vec` of indices
/// iterated (`for &k in &idx`, `idx.iter()`) and indexed.
#[autodiff_forward(constant_locals_fwd, Dual, Dual)]
#[autodiff_reverse(constant_locals_rev, Duplicated, Active)]
fn constant_locals(x: &[f64]) -> f64 {
    let n = x.len() as i64;
    let idx = vec![x.len() - 1, 0];
    let mut s = 0.0;
    for &k in &idx {
        s += x[k] * x[k];
    }
    for k in idx.iter() {
        s += x[*k].sin();
    }
    for i in 0..x.len() {
        let j = (i as i64 - 1).rem_euclid(n) as usize;
        s += x[i] * x[j] * idx[i % 2] as f64;
    }
    s
}

fn constant_locals_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let idx = [n - 1, 0];
    let mut s = c::<D>(0.0);
    for &k in &idx {
        s += x[k] * x[k] + x[k].sin();
    }
    for i in 0..n {
        let j = (i + n - 1) % n;
        s += x[i] * x[j] * idx[i % 2] as f64;
    }
    s
}

/// Constant buffers whose float type only the written type of their binding gives
/// (`vec![0.5; 3]`, an array of literals, `Vec::new()` filled with a literal, matrices of
/// a literal): methods called on their elements need it.
#[autodiff_forward(typed_buffers_fwd, Dual, Dual)]
#[autodiff_reverse(typed_buffers_rev, Duplicated, Active)]
fn typed_buffers(x: &[f64]) -> f64 {
    let b: Vec<f64> = vec![0.5; 3];
    let a: [f64; 2] = [0.25, -1.5];
    let h: Vec<f32> = vec![0.5, 1.5];
    let mut v: Vec<f64> = Vec::new();
    let mut w: Vec<f64> = Vec::with_capacity(2);
    let m: Vec<Vec<f64>> = vec![vec![0.5; 2]; 2];
    let q: [[f64; 2]; 2] = [[0.25; 2]; 2];
    v.push(0.75);
    w.push(1.25);
    w.push(x[0] * x[0]);
    x[0] * b[1].sin()
        + a[1].abs() * x[0].cos()
        + h[1].sqrt() as f64 * x[0]
        + v[0].cos() * x[x.len() - 1]
        + w[0].exp() * w[1]
        + m[1][0].tan() * x[0]
        + q[0][1].exp() * x[x.len() - 1]
}

fn typed_buffers_o<D: Num>(x: &[D]) -> D {
    let last = x[x.len() - 1];
    x[0] * 0.5f64.sin()
        + x[0].cos() * 1.5
        + x[0] * (1.5f32.sqrt() as f64)
        + last * 0.75f64.cos()
        + x[0] * x[0] * 1.25f64.exp()
        + x[0] * 0.5f64.tan()
        + last * 0.25f64.exp()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn buffers_typed_by_their_binding((x, v, s0) in slice_case(-1.0, 1.0, 1..5, 0), s in seed()) {
        check_slice(
            "typed_buffers",
            (&x, &v, &s0, s),
            typed_buffers,
            typed_buffers_fwd,
            typed_buffers_rev,
            typed_buffers_o::<Dual64>,
        );
    }

    #[test]
    fn locals_holding_integers((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice(
            "constant_locals",
            (&x, &v, &s0, s),
            constant_locals,
            constant_locals_fwd,
            constant_locals_rev,
            constant_locals_o::<Dual64>,
        );
    }
}

/// A backend the functions below are generic over: they only pass it on, or read a
/// constant from it under `no_grad`.
pub trait Backend {
    fn order(&self) -> usize;
}

pub struct Cpu;

impl Backend for Cpu {
    fn order(&self) -> usize {
        2
    }
}

#[autodiff_forward(on_backend_fwd, Dual, Const, Dual)]
#[autodiff_reverse(on_backend_rev, Duplicated, Const, Active)]
fn on_backend(x: &[f64], _b: &impl Backend) -> f64 {
    x[0] * x[0] * 2.0
}

#[differentiable]
fn scaled_by_order(x: &[f64], b: &impl Backend) -> f64 {
    x[0].sin() + x[1] * no_grad(b.order() as f64)
}

#[differentiable]
fn passed_on<B: Backend>(x: &[f64], b: &B) -> f64 {
    scaled_by_order(x, b) * x[1]
}

#[autodiff_forward(generic_backends_fwd, Dual, Dual)]
#[autodiff_reverse(generic_backends_rev, Duplicated, Active)]
fn generic_backends(x: &[f64]) -> f64 {
    scaled_by_order(x, &Cpu) * on_backend(x, &Cpu) + passed_on(x, &Cpu)
}

fn generic_backends_o<D: Num>(x: &[D]) -> D {
    let scaled = x[0].sin() + x[1] * 2.0;
    scaled * x[0] * x[0] * 2.0 + scaled * x[1]
}

#[autodiff_forward(generic_backends_hvp, Dual, Dual)]
fn generic_backends_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    generic_backends_rev(x, g, 1.0);
}

/// Float methods called by path on a local whose type only the literal gives (`let mut
/// peak = 1.0; peak = f64::max(peak, x[i]);`).
#[autodiff_forward(path_methods_fwd, Dual, Dual)]
#[autodiff_reverse(path_methods_rev, Duplicated, Active)]
fn path_methods(x: &[f64]) -> f64 {
    let mut peak = 0.25;
    let mut low = 2.0;
    for i in 0..x.len() {
        peak = f64::max(peak, x[i]);
        low = f64::min(low, x[i] * x[i]);
    }
    let h = 0.5;
    f64::powi(peak, 2) + f64::hypot(low, h) + f64::sin(h) * peak
}

fn path_methods_o<D: Num>(x: &[D]) -> D {
    let mut peak = c::<D>(0.25);
    let mut low = c::<D>(2.0);
    for &v in x {
        if v.re() > peak.re() {
            peak = v;
        }
        if (v * v).re() < low.re() {
            low = v * v;
        }
    }
    peak.powi(2) + (low * low + 0.25).sqrt() + peak * 0.5f64.sin()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn float_methods_called_by_path_on_untyped_locals((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice(
            "path_methods",
            (&x, &v, &s0, s),
            path_methods,
            path_methods_fwd,
            path_methods_rev,
            path_methods_o,
        );
    }

    #[test]
    fn references_to_generic_values((x, v, s0) in slice_case(-1.0, 1.0, 2..3, 0), s in seed()) {
        check_slice(
            "generic_backends",
            (&x, &v, &s0, s),
            generic_backends,
            generic_backends_fwd,
            generic_backends_rev,
            generic_backends_o::<Dual64>,
        );
        let (mut g, mut hv) = (vec![0.0; 2], vec![0.0; 2]);
        generic_backends_hvp(&x, &v, &mut g, &mut hv);
        check_hvp(&hv, &x, &v, generic_backends_o);
        let mut g = s0.clone();
        let y = on_backend_rev(&x, &mut g, &Cpu, s);
        check("on_backend", y, 2.0 * x[0] * x[0]);
        check("on_backend grad", (g[0] - s0[0]) / s, 4.0 * x[0]);
        let (_, t) = on_backend_fwd(&x, &v, &Cpu);
        check("on_backend tangent", t, 4.0 * x[0] * v[0]);
    }
}
