//! The scalar part of the supported language, in both modes, at random points, against a
//! num-dual oracle: bindings, arithmetic, casts, float methods, constants, `f32`, generic
//! floats, conditions, `if`, `match` and `no_grad`.

// `!(a >= b)` on floats is one of the constructs under test.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;
use std::f64::consts::{E, PI};

/// `max` and `min` of the oracle, following the same argument as `f64::max`/`f64::min`.
fn dmax<D: Num>(a: D, b: D) -> D {
    if a.re() >= b.re() { a } else { b }
}
fn dmin<D: Num>(a: D, b: D) -> D {
    if a.re() <= b.re() { a } else { b }
}

/// `a.copysign(b)` in the oracle: `±a`, the sign chosen by the signs of both values.
fn copysign<D: Num>(a: D, b: D) -> D {
    if (a.re() < 0.0) == (b.re() < 0.0) {
        a
    } else {
        -a
    }
}

/// `x as f32 as f64` in the oracle: the rounded value, with derivative 1.
fn round32<D: Num>(x: D) -> D {
    x - c::<D>(x.re() - x.re() as f32 as f64)
}

// ---------------------------------------------------------------- bindings

#[autodiff_forward(lets_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(lets_rev, Active, Active, Active)]
fn lets(x: f64, y: f64) -> f64 {
    let a: f64 = x * y;
    let b = a + x;
    let (c, d) = (b * y, a - y);
    let (e, f): (f64, f64) = (c.sin(), d * 0.5);
    let x = x * c; // shadows a parameter
    let b = b * b + x; // shadows a local, reading the old one
    let mut m = e;
    m = m * f + b;
    m += x;
    m -= a * d;
    m *= y;
    m /= 2.0 + x * x;
    m
}

fn lets_o<D: Num>(x: D, y: D) -> D {
    let a = x * y;
    let b = a + x;
    let (c, d) = (b * y, a - y);
    let (e, f) = (c.sin(), d * 0.5);
    let x = x * c;
    let b = b * b + x;
    let mut m = e;
    m = m * f + b;
    m += x;
    m -= a * d;
    m *= y;
    m /= x * x + 2.0;
    m
}

#[autodiff_forward(tuples_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(tuples_rev, Active, Active, Active)]
fn tuples(x: f64, y: f64) -> f64 {
    let t = (x * y, x - y);
    let (p, q) = t;
    let (r, _) = (p + q, x.exp());
    let (_, s) = (r, q * q);
    let (u, (v, w)) = (s, (r * 2.0, y));
    let (mut g, h) = (u, v);
    g *= h;
    g + w * t.0 - t.1
}

fn tuples_o<D: Num>(x: D, y: D) -> D {
    let (p, q) = (x * y, x - y);
    let r = p + q;
    let s = q * q;
    let (u, v, w) = (s, r * 2.0, y);
    let mut g = u;
    g *= v;
    g + w * p - q
}

#[autodiff_forward(reassign_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(reassign_rev, Active, Active, Active)]
fn reassign(x: f64, y: f64) -> f64 {
    let mut a = x;
    a = a * a; // reads the old value
    a = y - a;
    let mut b = y;
    let yb = b * 2.0;
    b = x; // overwritten: only `yb` still depends on the old value
    b *= a;
    a = b - a;
    a /= 1.5;
    b -= a;
    b += a * x;
    a * b + yb * yb
}

fn reassign_o<D: Num>(x: D, y: D) -> D {
    let mut a = y - x * x;
    let mut b = x;
    b *= a;
    a = (b - a) / 1.5;
    b -= a;
    b += a * x;
    a * b + y * y * 4.0
}

/// Shadowing inside loops and branches ends with their block.
#[autodiff_forward(scopes_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(scopes_rev, Active, Active, Active)]
fn scopes(x: f64, y: f64) -> f64 {
    let a = x * 2.0;
    let mut s = a + a * y;
    s += a;
    for i in 0..3 {
        let a = s * 0.5;
        let y = a + i as f64;
        s += a * y * 0.1;
    }
    if x > 0.0 {
        let x = y;
        let a = x * 4.0;
        s *= x + a * 0.0;
    } else {
        let s = s * 10.0; // a branch-local `s`: the outer one is unchanged
        let _ = s;
    }
    s * a + x
}

/// A bare block statement ends the scope of its bindings.
#[autodiff_forward(bare_block_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(bare_block_rev, Active, Active, Active)]
fn bare_block(x: f64, y: f64) -> f64 {
    let a = x * y;
    {
        let a = a * 10.0;
        let _ = a;
    }
    a
}

fn scopes_o<D: Num>(x: D, y: D) -> D {
    let a = x * 2.0;
    let mut s = a + a * y + a;
    for i in 0..3 {
        let h = s * 0.5;
        s += h * (h + i as f64) * 0.1;
    }
    if x > 0.0 {
        s *= y;
    }
    s * a + x
}

// ---------------------------------------------------------------- arithmetic

#[autodiff_forward(arith_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(arith_rev, Active, Active, Active, Active)]
fn arith(x: f64, y: f64, z: f64) -> f64 {
    let a = -x + y * z - (x - y) / (z + 3.0);
    let b = -(a * a) + 2.5e-1 * x - 3. * y + 1_000.0e-3 * z + 2f64 * x / 4.0_f64;
    let c = -(-y) - -z;
    (a + b) * (x - (y - z)) / (1.0 + a * a) + c / 2.0 - 1.0 / (2.0 + x * x)
}

fn arith_o<D: Num>(x: D, y: D, z: D) -> D {
    let a = -x + y * z - (x - y) / (z + 3.0);
    let b = -(a * a) + x * 0.25 - y * 3.0 + z + x * 2.0 / 4.0;
    let c = y + z;
    (a + b) * (x - (y - z)) / (a * a + 1.0) + c / 2.0 - (x * x + 2.0).recip()
}

// ---------------------------------------------------------------- casts

#[autodiff_forward(casts_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(casts_rev, Active, Const, Const, Active)]
fn casts(x: f64, n: usize, k: i32) -> f64 {
    let nf = n as f64;
    let kf: f64 = k as f64;
    let h = (x as f32) as f64; // rounds, derivative 1
    let m = (n * 2 + 1) as f64;
    x * nf + kf * x * x + h * 0.5 + m * x.sin() + (k as f32) as f64
}

fn casts_o<D: Num>(x: D, n: usize, k: i32) -> D {
    let nf = n as f64;
    let kf = k as f64;
    let m = (n * 2 + 1) as f64;
    x * nf + x * x * kf + round32(x) * 0.5 + x.sin() * m + k as f64
}

/// f32 <-> f64 conversions inside one function (`as`, `f64::from`).
#[autodiff_forward(mixed_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(mixed_rev, Active, Active, Active)]
fn mixed(x: f32, y: f64) -> f64 {
    let a = x as f64 * y;
    let b = (y as f32) * x; // f32 arithmetic
    let c: f32 = x.sin();
    a + b as f64 + (c as f64) * y.exp() + f64::from(x) * 0.5
}

fn mixed_o<D: Num>(x: D, y: D) -> D {
    x * y + round32(y) * x + x.sin() * y.exp() + x * 0.5
}

// ---------------------------------------------------------------- float methods

/// Methods defined everywhere, both as methods and as `f64::name(..)`.
#[autodiff_forward(unary_a_fwd, Dual, Dual)]
#[autodiff_reverse(unary_a_rev, Active, Active)]
fn unary_a(x: f64) -> f64 {
    let s = x.sin() + 2.0 * f64::sin(x * 0.5);
    let c = x.cos() - 3.0 * f64::cos(x * x);
    let t = x.tan() + f64::tan(0.5 * x);
    let at = x.atan() * 1.5 + f64::atan(x * x);
    let h = x.sinh() + x.cosh() * 0.5 + x.tanh() * 0.25;
    let hh = f64::sinh(x * 0.3) + f64::cosh(x * 0.7) + f64::tanh(x * 1.1);
    let ash = x.asinh() + f64::asinh(2.0 * x);
    let e = x.exp() + f64::exp(-x) * 0.5 + x.exp2() + f64::exp2(0.3 * x);
    let em = x.exp_m1() + f64::exp_m1(x * 0.1);
    let a = x.abs() + f64::abs(x - 0.25) * 0.5;
    let sg = x.signum() * x + f64::signum(x - 0.5);
    s + c + t + at + h + hh + ash + e + em + a + sg
}

fn unary_a_o<D: Num>(x: D) -> D {
    let s = x.sin() + (x * 0.5).sin() * 2.0;
    let c = x.cos() - (x * x).cos() * 3.0;
    let t = x.tan() + (x * 0.5).tan();
    let at = x.atan() * 1.5 + (x * x).atan();
    let h = x.sinh() + x.cosh() * 0.5 + x.tanh() * 0.25;
    let hh = (x * 0.3).sinh() + (x * 0.7).cosh() + (x * 1.1).tanh();
    let ash = x.asinh() + (x * 2.0).asinh();
    let e = x.exp() + (-x).exp() * 0.5 + x.exp2() + (x * 0.3).exp2();
    let em = x.exp_m1() + (x * 0.1).exp_m1();
    let a = x.abs() + (x - 0.25).abs() * 0.5;
    let sg = x * x.re().signum() + (x.re() - 0.5).signum();
    s + c + t + at + h + hh + ash + e + em + a + sg
}

/// Methods defined on (-1, 1).
#[autodiff_forward(unary_b_fwd, Dual, Dual)]
#[autodiff_reverse(unary_b_rev, Active, Active)]
fn unary_b(x: f64) -> f64 {
    let a = x.asin() + 0.5 * f64::asin(x * 0.5);
    let b = x.acos() * 2.0 - f64::acos(x * x);
    let c = x.atanh() + f64::atanh(-0.5 * x);
    a * b + c
}

fn unary_b_o<D: Num>(x: D) -> D {
    let a = x.asin() + (x * 0.5).asin() * 0.5;
    let b = x.acos() * 2.0 - (x * x).acos();
    let c = x.atanh() + (x * -0.5).atanh();
    a * b + c
}

/// Methods defined for positive arguments.
#[autodiff_forward(unary_c_fwd, Dual, Dual)]
#[autodiff_reverse(unary_c_rev, Active, Active)]
fn unary_c(x: f64) -> f64 {
    let a = (x + 1.0).acosh() + f64::acosh(x * x + 1.5);
    let l = x.ln() + f64::ln(2.0 * x) * 0.5 + x.ln_1p() + f64::ln_1p(x * x);
    let l2 = x.log2() - f64::log2(x + 3.0) + x.log10() * 2.0 + f64::log10(x * 7.0);
    let r = x.sqrt() + f64::sqrt(x * x + 1.0) + x.cbrt() + f64::cbrt(-x) * 0.5;
    let inv = x.recip() + f64::recip(x + 1.0) * 3.0;
    let p = x.powi(3) + f64::powi(x, -2) + x.powi(0) + x.powi(1) * 0.5 + x.powi(2);
    let pf = x.powf(2.5) + f64::powf(x, -0.5) + x.powf(1.0);
    let lg = x.log(3.0) + f64::log(x * 2.0, 10.0);
    a + l + l2 + r + inv + p + pf + lg
}

fn unary_c_o<D: Num>(x: D) -> D {
    let a = (x + 1.0).acosh() + (x * x + 1.5).acosh();
    let l = x.ln() + (x * 2.0).ln() * 0.5 + x.ln_1p() + (x * x).ln_1p();
    let l2 = x.log2() - (x + 3.0).log2() + x.log10() * 2.0 + (x * 7.0).log10();
    let r = x.sqrt() + (x * x + 1.0).sqrt() + x.cbrt() + (-x).cbrt() * 0.5;
    let inv = x.recip() + (x + 1.0).recip() * 3.0;
    let p = x.powi(3) + x.powi(-2) + D::one() + x * 0.5 + x * x;
    let pf = x.powf(2.5) + x.powf(-0.5) + x;
    let lg = x.log(3.0) + (x * 2.0).log(10.0);
    a + l + l2 + r + inv + p + pf + lg
}

/// Methods of two or three floats, each argument active.
#[autodiff_forward(binary_fwd, Dual, Dual, Dual, Dual)]
#[autodiff_reverse(binary_rev, Active, Active, Active, Active)]
fn binary(x: f64, y: f64, z: f64) -> f64 {
    let a = y.atan2(x) + f64::atan2(x, -y) * 0.5;
    let p = x.powf(y) + f64::powf(y, x * 0.5);
    let l = x.log(y) + f64::log(y * 2.0, x + 1.0);
    let h = x.hypot(y) + f64::hypot(z, x) * 0.5;
    let m = x.max(y) * 2.0 + f64::max(z, y) - x.min(z) + f64::min(y, x) * 3.0;
    let ma = x.mul_add(y, z) + f64::mul_add(z, x, y * y);
    let cl = z.clamp(x, y + 2.0) + f64::clamp(x, z - 0.5, z + 0.5) * 2.0;
    let cs = x.copysign(y - z) * y + f64::copysign(z * z, -x);
    a + p + l + h + m + ma + cl + cs
}

fn binary_o<D: Num>(x: D, y: D, z: D) -> D {
    let a = y.atan2(x) + x.atan2(-y) * 0.5;
    let p = x.powd(y) + y.powd(x * 0.5);
    let l = x.ln() / y.ln() + (y * 2.0).ln() / (x + 1.0).ln();
    let h = (x * x + y * y).sqrt() + (z * z + x * x).sqrt() * 0.5;
    let m = dmax(x, y) * 2.0 + dmax(z, y) - dmin(x, z) + dmin(y, x) * 3.0;
    let ma = x * y + z + z * x + y * y;
    let cl = dmin(dmax(z, x), y + 2.0) + dmin(dmax(x, z - 0.5), z + 0.5) * 2.0;
    let cs = copysign(x, y - z) * y + copysign(z * z, -x);
    a + p + l + h + m + ma + cl + cs
}

#[autodiff_forward(sincos_fwd, Dual, Dual)]
#[autodiff_reverse(sincos_rev, Active, Active)]
fn sincos(x: f64) -> f64 {
    let (s, c) = x.sin_cos();
    let (s2, c2) = f64::sin_cos(x * 3.0);
    s * c + s * 2.0 - c * c2 + s2
}

fn sincos_o<D: Num>(x: D) -> D {
    let (s, c) = x.sin_cos();
    let (s2, c2) = (x * 3.0).sin_cos();
    s * c + s * 2.0 - c * c2 + s2
}

// ---------------------------------------------------------------- constants

#[autodiff_forward(consts_fwd, Dual, Dual)]
#[autodiff_reverse(consts_rev, Active, Active)]
fn consts(x: f64) -> f64 {
    let a = PI * x * x + E * x;
    let b = std::f64::consts::FRAC_PI_4.sin() * x + core::f64::consts::LN_2 / (x + 3.0);
    let c = std::f64::consts::SQRT_2 * std::f64::consts::TAU.cos() * x.exp();
    a + b + c * f64::EPSILON.sqrt()
}

fn consts_o<D: Num>(x: D) -> D {
    let a = x * x * PI + x * E;
    let b = x * std::f64::consts::FRAC_PI_4.sin() + (x + 3.0).recip() * std::f64::consts::LN_2;
    let c = x.exp() * (std::f64::consts::SQRT_2 * std::f64::consts::TAU.cos());
    a + b + c * f64::EPSILON.sqrt()
}

// ---------------------------------------------------------------- f32 and generic floats

#[autodiff_forward(f32s_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(f32s_rev, Active, Active, Active)]
fn f32s(x: f32, y: f32) -> f32 {
    let a = x.sin() * y + f32::exp(x * 0.5);
    let b = y.sqrt() * x.powi(2) - std::f32::consts::PI * x / y;
    let mut c = x.tanh() + x.atan2(y) + x.max(y) + f32::hypot(x, y);
    c *= y.ln() + 2.0;
    a * b + c
}

fn f32s_o<D: Num32>(x: D, y: D) -> D {
    let a = x.sin() * y + (x * 0.5).exp();
    let b = y.sqrt() * x * x - x * std::f32::consts::PI / y;
    let m = if x.re() >= y.re() { x } else { y };
    let mut c = x.tanh() + x.atan2(y) + m + (x * x + y * y).sqrt();
    c *= y.ln() + 2.0;
    a * b + c
}

#[autodiff_forward(generic_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(generic_rev, Active, Active, Active)]
fn generic<T: num_traits::Float>(x: T, y: T) -> T {
    let two = T::one() + T::one();
    let a = x.sin() * y + (x * y).exp();
    let b = a * a / (two + y * y) - x.powi(3) + y.sqrt();
    let m = x.max(y) - x.abs();
    if x > y { a - b + m } else { b * x + m }
}

fn generic_o<D: DualNum + Copy>(x: D, y: D) -> D {
    let two = D::one() + D::one();
    let a = x.sin() * y + (x * y).exp();
    let b = a * a / (two + y * y) - x.powi(3) + y.sqrt();
    let m = if x >= y { x } else { y } - num_traits::Signed::abs(&x);
    if x > y { a - b + m } else { b * x + m }
}

#[autodiff_forward(generic_lit_fwd, Dual, Dual)]
#[autodiff_reverse(generic_lit_rev, Active, Active)]
fn generic_lit<T>(x: T) -> T
where
    T: num_traits::Float,
{
    let c = T::from(2.5).unwrap();
    c * x * x + x.sin()
}

// ---------------------------------------------------------------- conditions

#[autodiff_forward(branches_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(branches_rev, Active, Active, Active)]
fn branches(x: f64, y: f64) -> f64 {
    let mut r = x * 0.5;
    if x > 0.0 && y < 0.5 {
        r = x * y;
    } else if x <= -0.5 || !(y >= 0.0) {
        r -= y * y;
    } else {
        r += x.exp();
    }
    if x != y && (x < y || y > 1.0) {
        r *= 2.0 + y;
    }
    let s = if x * y > 0.3 {
        r.sin()
    } else if x == y {
        0.0
    } else if !(x >= -1.0) {
        -r
    } else {
        r * 2.0 + y
    };
    let t = if s > r { s } else { r };
    s + r * t
}

fn branches_o<D: Num>(x: D, y: D) -> D {
    let mut r = x * 0.5;
    if x > 0.0 && y < 0.5 {
        r = x * y;
    } else if x <= -0.5 || y < 0.0 {
        r -= y * y;
    } else {
        r += x.exp();
    }
    if x.re() != y.re() && (x < y || y > 1.0) {
        r *= y + 2.0;
    }
    let s = if x * y > 0.3 {
        r.sin()
    } else if x.re() == y.re() {
        D::zero()
    } else if x.re() < -1.0 {
        -r
    } else {
        r * 2.0 + y
    };
    let t = if s > r { s } else { r };
    s + r * t
}

#[autodiff_forward(matches_fwd, Dual, Const, Const, Dual)]
#[autodiff_reverse(matches_rev, Active, Const, Const, Active)]
fn matches(x: f64, k: usize, flag: bool) -> f64 {
    let a = match k {
        0 => x,
        1 => x * x,
        2 | 3 => x.sin(),
        _ => 1.0,
    };
    let b = match flag {
        true => a * 2.0,
        false => -a,
    };
    let c = match k {
        0..=1 => b + x,
        2..4 => b * x,
        _ => b,
    };
    let i = (x * 3.0) as i32;
    match i {
        i32::MIN..=-1 => c * 0.5,
        0 => c,
        _ => c + x.exp(),
    }
}

fn matches_o<D: Num>(x: D, k: usize, flag: bool) -> D {
    let a = match k {
        0 => x,
        1 => x * x,
        2 | 3 => x.sin(),
        _ => D::one(),
    };
    let b = if flag { a * 2.0 } else { -a };
    let c = match k {
        0..=1 => b + x,
        2..4 => b * x,
        _ => b,
    };
    match (x.re() * 3.0) as i32 {
        i32::MIN..=-1 => c * 0.5,
        0 => c,
        _ => c + x.exp(),
    }
}

#[autodiff_forward(blocks_fwd, Dual, Dual, Const, Dual)]
#[autodiff_reverse(blocks_rev, Active, Active, Const, Active)]
fn blocks(x: f64, y: f64, k: usize) -> f64 {
    let a = {
        let t = x * y;
        t * t + 1.0
    };
    let b = 2.0 * if x > y { a } else { a * x } + 1.0;
    let c = match k {
        _ if k.is_multiple_of(2) => {
            let u = b * x;
            u + a
        }
        1 | 3 => b - y,
        _ => b * b,
    };
    let d = match x > 0.0 {
        true => c * x,
        false => c - x,
    };
    if y > 0.0 {
        if x > 0.0 { d * 2.0 } else { d * 3.0 }
    } else {
        d
    }
}

fn blocks_o<D: Num>(x: D, y: D, k: usize) -> D {
    let t = x * y;
    let a = t * t + 1.0;
    let b = if x > y { a } else { a * x } * 2.0 + 1.0;
    let c = if k.is_multiple_of(2) {
        b * x + a
    } else if k == 1 || k == 3 {
        b - y
    } else {
        b * b
    };
    let d = if x > 0.0 { c * x } else { c - x };
    if y > 0.0 {
        if x > 0.0 { d * 2.0 } else { d * 3.0 }
    } else {
        d
    }
}

#[autodiff_forward(stop_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(stop_rev, Active, Active, Active)]
fn stop(x: f64, y: f64) -> f64 {
    let a = x * no_grad(x);
    let b = no_grad(y * y) * y + no_grad(x.sin());
    let n = no_grad(a + b);
    a + b * n
}

fn stop_o<D: Num>(x: D, y: D) -> D {
    let a = x * x.re();
    let b = y * (y.re() * y.re()) + x.re().sin();
    let n = a.re() + b.re();
    a + b * n
}

// ---------------------------------------------------------------- return activities

#[autodiff_forward(act_fwd_only, Dual, Const, DualOnly)]
#[autodiff_forward(act_fwd_const, Dual, Dual, Const)]
#[autodiff_forward(act_fwd_inputs_only, DualOnly, DualOnly, Dual)]
#[autodiff_reverse(act_rev_only, Active, Const, ActiveOnly)]
#[autodiff_reverse(act_rev_const, Active, Active, Const)]
fn act(x: f64, y: f64) -> f64 {
    x * x * y + y.sin()
}

// ---------------------------------------------------------------- properties

/// A local float updated through a `&mut` reference bound with `let`.
#[autodiff_forward(through_local_ref_fwd, Dual, Dual)]
#[autodiff_reverse(through_local_ref_rev, Active, Active)]
fn through_local_ref(x: f64) -> f64 {
    let mut y = x;
    let r = &mut y;
    *r *= 3.0;
    *r += x.sin();
    y * x
}

fn through_local_ref_o<D: Num>(x: D) -> D {
    (x * 3.0 + x.sin()) * x
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn let_bindings_shadowing_and_compound_assignment(
        x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed(),
    ) {
        check2("lets", (x, v, s), lets, lets_fwd, lets_rev, lets_o::<Dual64>);
    }

    #[test]
    fn tuple_patterns(x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed()) {
        check2("tuples", (x, v, s), tuples, tuples_fwd, tuples_rev, tuples_o::<Dual64>);
    }

    #[test]
    fn mutable_reassignment(x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed()) {
        check2("reassign", (x, v, s), reassign, reassign_fwd, reassign_rev, reassign_o::<Dual64>);
    }

    #[test]
    fn block_and_loop_scopes(x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed()) {
        check2("scopes", (x, v, s), scopes, scopes_fwd, scopes_rev, scopes_o::<Dual64>);
    }

    #[test]
    fn bare_block_scope(x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed()) {
        check2("bare_block", (x, v, s), bare_block, bare_block_fwd, bare_block_rev, |x, y| x * y);
    }

    #[test]
    fn arithmetic_operators_and_literals(
        x in [float(-2.0, 2.0), float(-2.0, 2.0), float(-1.0, 1.0)],
        v in [dir(), dir(), dir()],
        s in seed(),
    ) {
        check3("arith", (x, v, s), arith, arith_fwd, arith_rev, arith_o::<Dual64>);
    }

    #[test]
    fn integer_and_f32_casts(x in float(-2.0, 2.0), v in dir(), s in seed(), n in 0usize..5, k in -3i32..4) {
        // The tangent and adjoint of `x as f32` are f32: compare at f32 precision.
        let (r, g) = casts_rev(x, n, k, s);
        let got = Got { primal: casts(x, n, k), fwd: casts_fwd(x, v, n, k), rev: r, grad: vec![g] };
        check_scalar_tol("casts", &[x], &[v], s, got, |d| casts_o(d[0], n, k), 1e-6);
    }

    #[test]
    fn f32_f64_conversions(x in -2.0f32..2.0, y in -2.0f64..2.0, v in [dir(), dir()], s in seed()) {
        // The f32 parts round, so this compares at f32 precision.
        let tol = 1e-5;
        let xf = x as f64;
        let (value, grad) = oracle_grad(|d| mixed_o(d[0], d[1]), &[xf, y]);
        check_tol("primal", mixed(x, y), value, tol);
        let (f, df) = mixed_fwd(x, v[0] as f32, y, v[1]);
        check_tol("forward primal", f, value, tol);
        check_tol("tangent", df, (v[0] as f32) as f64 * grad[0] + v[1] * grad[1], tol);
        let (f, gx, gy) = mixed_rev(x, y, s);
        check_tol("reverse primal", f, value, tol);
        check_tol("d/dx", gx as f64, s * grad[0], tol);
        check_tol("d/dy", gy, s * grad[1], tol);
    }

    #[test]
    fn local_updated_through_a_reference(x in float(-2.0, 2.0), v in dir(), s in seed()) {
        check1(
            "through_local_ref",
            (x, v, s),
            through_local_ref,
            through_local_ref_fwd,
            through_local_ref_rev,
            through_local_ref_o::<Dual64>,
        );
    }

    #[test]
    fn float_methods_defined_everywhere(x in float(-1.2, 1.2), v in dir(), s in seed()) {
        prop_assume!((x - 0.5).abs() > 1e-9 && x.abs() > 1e-9 && (x - 0.25).abs() > 1e-9);
        check1("unary_a", (x, v, s), unary_a, unary_a_fwd, unary_a_rev, unary_a_o::<Dual64>);
    }

    #[test]
    fn float_methods_on_the_unit_interval(x in float(-0.9, 0.9), v in dir(), s in seed()) {
        check1("unary_b", (x, v, s), unary_b, unary_b_fwd, unary_b_rev, unary_b_o::<Dual64>);
    }

    #[test]
    fn float_methods_on_positive_numbers(x in float(0.2, 3.0), v in dir(), s in seed()) {
        check1("unary_c", (x, v, s), unary_c, unary_c_fwd, unary_c_rev, unary_c_o::<Dual64>);
    }

    #[test]
    fn float_methods_of_several_arguments(
        x in [float(0.2, 3.0), float(1.3, 3.0), float(0.2, 3.0)],
        v in [dir(), dir(), dir()],
        s in seed(),
    ) {
        check3("binary", (x, v, s), binary, binary_fwd, binary_rev, binary_o::<Dual64>);
    }

    #[test]
    fn sin_cos_pairs(x in float(-3.0, 3.0), v in dir(), s in seed()) {
        check1("sincos", (x, v, s), sincos, sincos_fwd, sincos_rev, sincos_o::<Dual64>);
    }

    #[test]
    fn std_constants(x in float(-2.0, 2.0), v in dir(), s in seed()) {
        check1("consts", (x, v, s), consts, consts_fwd, consts_rev, consts_o::<Dual64>);
    }

    #[test]
    fn f32_functions(x in -2.0f32..2.0, y in 0.3f32..2.0, v in [-1.0f32..1.0, -1.0f32..1.0], s in 0.25f32..2.0) {
        let tol = 1e-5;
        let ox = f32s_o(Dual32::new(x, v[0]), Dual32::new(y, v[1]));
        let gx = f32s_o(Dual32::new(x, 1.0), Dual32::from_re(y)).eps;
        let gy = f32s_o(Dual32::from_re(x), Dual32::new(y, 1.0)).eps;
        check_tol("primal", f32s(x, y) as f64, ox.re as f64, tol);
        let (f, df) = f32s_fwd(x, v[0], y, v[1]);
        check_tol("forward primal", f as f64, ox.re as f64, tol);
        check_tol("tangent", df as f64, ox.eps as f64, tol);
        let (f, rx, ry) = f32s_rev(x, y, s);
        check_tol("reverse primal", f as f64, ox.re as f64, tol);
        check_tol("d/dx", rx as f64, (s * gx) as f64, tol);
        check_tol("d/dy", ry as f64, (s * gy) as f64, tol);
    }

    #[test]
    fn generic_float_at_f64(x in [float(-1.5, 1.5), float(0.2, 1.5)], v in [dir(), dir()], s in seed()) {
        check2(
            "generic::<f64>",
            (x, v, s),
            generic::<f64>,
            generic_fwd::<f64>,
            generic_rev::<f64>,
            generic_o::<Dual64>,
        );
    }

    #[test]
    fn generic_float_at_f32(x in -1.5f32..1.5, y in 0.2f32..1.5, v in [-1.0f32..1.0, -1.0f32..1.0], s in 0.25f32..2.0) {
        let tol = 1e-5;
        let ox = generic_o(Dual32::new(x, v[0]), Dual32::new(y, v[1]));
        let gx = generic_o(Dual32::new(x, 1.0), Dual32::from_re(y)).eps;
        let gy = generic_o(Dual32::from_re(x), Dual32::new(y, 1.0)).eps;
        check_tol("primal", generic::<f32>(x, y) as f64, ox.re as f64, tol);
        let (f, df) = generic_fwd::<f32>(x, v[0], y, v[1]);
        check_tol("forward primal", f as f64, ox.re as f64, tol);
        check_tol("tangent", df as f64, ox.eps as f64, tol);
        let (f, rx, ry) = generic_rev::<f32>(x, y, s);
        check_tol("reverse primal", f as f64, ox.re as f64, tol);
        check_tol("d/dx", rx as f64, (s * gx) as f64, tol);
        check_tol("d/dy", ry as f64, (s * gy) as f64, tol);
    }

    #[test]
    fn generic_float_with_converted_literal(x in float(-2.0, 2.0), v in dir(), s in seed()) {
        check1(
            "generic_lit::<f64>",
            (x, v, s),
            generic_lit::<f64>,
            generic_lit_fwd::<f64>,
            generic_lit_rev::<f64>,
            |x: Dual64| x * x * 2.5 + x.sin(),
        );
        let (f, df) = generic_lit_fwd::<f32>(x as f32, v as f32);
        let xf = (x as f32) as f64;
        check_tol("f32 value", f as f64, 2.5 * xf * xf + xf.sin(), 1e-5);
        check_tol("f32 tangent", df as f64, (5.0 * xf + xf.cos()) * (v as f32) as f64, 1e-5);
    }

    #[test]
    fn comparisons_logic_and_if_else(
        x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed(),
    ) {
        check2("branches", (x, v, s), branches, branches_fwd, branches_rev, branches_o::<Dual64>);
    }

    #[test]
    fn if_else_on_equal_arguments(x in float(-2.0, 2.0), v in [dir(), dir()], s in seed()) {
        // `x == y` selects the branch with a constant value (where `x * y <= 0.3`).
        check2("branches", ([x, x], v, s), branches, branches_fwd, branches_rev, branches_o::<Dual64>);
    }

    #[test]
    fn match_on_integers_bools_and_ranges(
        x in float(-1.0, 1.0), v in dir(), s in seed(), k in 0usize..6, flag in any::<bool>(),
    ) {
        check1(
            "matches",
            (x, v, s),
            |x| matches(x, k, flag),
            |x, dx| matches_fwd(x, dx, k, flag),
            |x, s| matches_rev(x, k, flag, s),
            |x| matches_o(x, k, flag),
        );
    }

    #[test]
    fn block_expressions_nested_ifs_and_match_guards(
        x in float(-1.5, 1.5), y in float(-1.5, 1.5), v in [dir(), dir()], s in seed(), k in 0usize..6,
    ) {
        check2(
            "blocks",
            ([x, y], v, s),
            |x, y| blocks(x, y, k),
            |x, dx, y, dy| blocks_fwd(x, dx, y, dy, k),
            |x, y, s| blocks_rev(x, y, k, s),
            |x, y| blocks_o(x, y, k),
        );
    }

    #[test]
    fn no_grad_stops_derivatives(x in [float(-2.0, 2.0), float(-2.0, 2.0)], v in [dir(), dir()], s in seed()) {
        check2("stop", (x, v, s), stop, stop_fwd, stop_rev, stop_o::<Dual64>);
    }

    #[test]
    fn return_activities(x in float(-2.0, 2.0), y in float(-2.0, 2.0), v in [dir(), dir()], s in seed()) {
        let f = x * x * y + y.sin();
        check("primal", act(x, y), f);
        check("DualOnly", act_fwd_only(x, v[0], y), 2.0 * x * y * v[0]);
        check("Const return", act_fwd_const(x, v[0], y, v[1]), f);
        // `DualOnly` inputs (`std::autodiff`'s) take their tangents as `Dual` ones do.
        let (f3, t3) = act_fwd_inputs_only(x, v[0], y, v[1]);
        check("DualOnly inputs: primal", f3, f);
        check("DualOnly inputs: tangent", t3, 2.0 * x * y * v[0] + (x * x + y.cos()) * v[1]);
        check("ActiveOnly", act_rev_only(x, y, s), s * 2.0 * x * y);
        let (f2, gx, gy) = act_rev_const(x, y);
        check("Const return: primal", f2, f);
        check("Const return: d/dx", gx, 0.0);
        check("Const return: d/dy", gy, 0.0);
    }
}

/// A `let mut` tuple: its elements updated (`acc.0 += ..`, `acc.1 *= ..`), the whole
/// tuple assigned from its own elements (`acc = (acc.1, acc.0 + v)`: all read before any
/// is written), copied whole before a change (`let before = acc;`) and destructured.
#[autodiff_forward(tuple_acc_fwd, Dual, Dual)]
#[autodiff_reverse(tuple_acc_rev, Duplicated, Active)]
fn tuple_acc(x: &[f64]) -> f64 {
    let mut acc = (0.5, x[0]);
    for v in x {
        acc.0 += v * acc.1;
        acc.1 *= 0.5;
        acc = (acc.1 + v.sin(), acc.0);
    }
    let before = acc;
    acc.0 = x[0] * 3.0;
    let (a, b) = acc;
    a * b + before.0 * before.1
}

fn tuple_acc_o<D: Num>(x: &[D]) -> D {
    let (mut a0, mut a1) = (c::<D>(0.5), x[0]);
    for v in x {
        a0 += *v * a1;
        a1 *= 0.5;
        (a0, a1) = (a1 + v.sin(), a0);
    }
    let before = (a0, a1);
    a0 = x[0] * 3.0;
    a0 * a1 + before.0 * before.1
}

#[autodiff_forward(tuple_acc_hvp, Dual, Dual)]
fn tuple_acc_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    tuple_acc_rev(x, g, 1.0);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutable_tuples((x, v, s0) in slice_case(-1.0, 1.0, 1..6, 0), s in seed()) {
        check_slice("tuple_acc", (&x, &v, &s0, s), tuple_acc, tuple_acc_fwd, tuple_acc_rev, tuple_acc_o::<Dual64>);
        let (mut g, mut hv) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        tuple_acc_hvp(&x, &v, &mut g, &mut hv);
        check_hvp(&hv, &x, &v, tuple_acc_o);
    }
}

/// A square root at 0 whose value is multiplied by 0: its derivative along a direction
/// that keeps the root's argument at 0 is that of the rest.
#[autodiff_forward(root_at_zero_fwd, Dual, Dual)]
#[autodiff_reverse(root_at_zero_rev, Duplicated, Active)]
fn root_at_zero(x: &[f64]) -> f64 {
    let u = x[0] - x[1];
    0.0 * u.sqrt() + x[0] * x[1].ln()
}

#[test]
fn a_zero_tangent_through_an_infinite_partial() {
    let e2 = 2.0f64.exp();
    let x = [e2, e2];
    // f = x0 ln x1 where the root's argument is 0: ∇f = (ln x1, x0 / x1) = (2, 1).
    let mut g = [0.0; 2];
    root_at_zero_rev(&x, &mut g, 1.0);
    check_all("gradient", &g, &[2.0, 1.0]);
    let (_, t) = root_at_zero_fwd(&x, &[1.0, 1.0]);
    check("tangent along (1, 1)", t, 3.0);
}
