//! Partial derivatives of the builtin float methods.
//!
//! Each function takes the method's inputs followed by its output `v` (already computed by
//! the primal) and returns the partial derivative of `v` with respect to each
//! differentiable input. Forward code multiplies them by the input tangents; reverse code
//! multiplies them by the output adjoint. One table serves both modes.

use crate::Real;

macro_rules! unary {
    ($($(#[$m:meta])* $name:ident($a:ident, $v:ident) => $e:expr;)*) => {$(
        $(#[$m])*
        #[inline(always)]
        #[allow(unused_variables)]
        pub fn $name<T: Real>($a: T, $v: T) -> T { $e }
    )*};
}

unary! {
    /// `d sin(a) / da`
    sin(a, v) => a.cos();
    /// `d cos(a) / da`
    cos(a, v) => -a.sin();
    /// `d tan(a) / da = 1 + tan²(a)`
    tan(a, v) => T::one() + v * v;
    /// `d asin(a) / da`
    asin(a, v) => (T::one() - a * a).sqrt().recip();
    /// `d acos(a) / da`
    acos(a, v) => -(T::one() - a * a).sqrt().recip();
    /// `d atan(a) / da`
    atan(a, v) => (T::one() + a * a).recip();
    /// `d sinh(a) / da`
    sinh(a, v) => a.cosh();
    /// `d cosh(a) / da`
    cosh(a, v) => a.sinh();
    /// `d tanh(a) / da = 1 - tanh²(a)`
    tanh(a, v) => T::one() - v * v;
    /// `d asinh(a) / da`
    asinh(a, v) => (a * a + T::one()).sqrt().recip();
    /// `d acosh(a) / da`
    acosh(a, v) => (a * a - T::one()).sqrt().recip();
    /// `d atanh(a) / da`
    atanh(a, v) => (T::one() - a * a).recip();
    /// `d exp(a) / da`
    exp(a, v) => v;
    /// `d exp2(a) / da`
    exp2(a, v) => v * T::LN_2();
    /// `d exp_m1(a) / da`
    exp_m1(a, v) => v + T::one();
    /// `d ln(a) / da`
    ln(a, v) => a.recip();
    /// `d ln_1p(a) / da`
    ln_1p(a, v) => (T::one() + a).recip();
    /// `d log2(a) / da`
    log2(a, v) => (a * T::LN_2()).recip();
    /// `d log10(a) / da`
    log10(a, v) => (a * T::LN_10()).recip();
    /// `d sqrt(a) / da`
    sqrt(a, v) => T::lit(0.5) / v;
    /// `d cbrt(a) / da`
    cbrt(a, v) => (T::lit(3.0) * v * v).recip();
    /// `d |a| / da`: the sign of `a`, and 0 at 0.
    abs(a, v) => if a > T::zero() { T::one() } else if a < T::zero() { -T::one() } else { T::zero() };
    /// `d signum(a) / da = 0`
    signum(a, v) => T::zero();
    /// `d (1/a) / da = -1/a²`
    recip(a, v) => -(v * v);
    /// `d to_degrees(a) / da`
    to_degrees(a, v) => T::lit(180.0) / T::PI();
    /// `d to_radians(a) / da`
    to_radians(a, v) => T::PI() / T::lit(180.0);
    /// Piecewise constant: zero almost everywhere.
    floor(a, v) => T::zero();
    /// Piecewise constant: zero almost everywhere.
    ceil(a, v) => T::zero();
    /// Piecewise constant: zero almost everywhere.
    round(a, v) => T::zero();
    /// Piecewise constant: zero almost everywhere.
    trunc(a, v) => T::zero();
    /// `d fract(a) / da = 1` almost everywhere.
    fract(a, v) => T::one();
}

/// `d a^n / da` for an integer power.
#[inline(always)]
pub fn powi<T: Real>(a: T, n: i32, _v: T) -> T {
    if n == 0 {
        T::zero()
    } else {
        T::from_i32(n) * a.powi(n - 1)
    }
}

/// Partials of `a.powf(b)` with respect to `a` and `b`.
#[inline(always)]
pub fn powf<T: Real>(a: T, b: T, v: T) -> (T, T) {
    // `0 · 0^-1` is not a number; elsewhere `b · a^(b-1)`, also at `b = 0`, whose
    // derivative in `b` (a second derivative, `1/a`) the companion differentiated again
    // must see.
    let da = if b == T::zero() && a == T::zero() {
        T::zero()
    } else {
        b * a.powf(b - T::one())
    };
    let db = if a > T::zero() { v * a.ln() } else { T::zero() };
    (da, db)
}

/// Partials of `a.log(base)` with respect to `a` and `base`.
#[inline(always)]
pub fn log<T: Real>(a: T, base: T, _v: T) -> (T, T) {
    let lb = base.ln();
    ((a * lb).recip(), -a.ln() / (base * lb * lb))
}

/// Partials of `y.atan2(x)` with respect to `y` and `x`.
#[inline(always)]
pub fn atan2<T: Real>(y: T, x: T, _v: T) -> (T, T) {
    let r2 = x * x + y * y;
    (x / r2, -y / r2)
}

/// Partials of `a.hypot(b)`.
#[inline(always)]
pub fn hypot<T: Real>(a: T, b: T, v: T) -> (T, T) {
    if v == T::zero() {
        (T::zero(), T::zero())
    } else {
        (a / v, b / v)
    }
}

/// Partials of `a.copysign(b)`, `|a|` with the sign of `b`: the sign of `a` times the
/// sign `b` gives (0 at `a = 0`, as for `abs`), and none in `b`, which gives only a sign.
#[inline(always)]
pub fn copysign<T: Real>(a: T, b: T, _v: T) -> (T, T) {
    let s = T::one().copysign(b);
    let da = if a > T::zero() {
        s
    } else if a < T::zero() {
        -s
    } else {
        T::zero()
    };
    (da, T::zero())
}

/// Partials of `a.max(b)`: the derivative follows the argument that was chosen.
#[inline(always)]
pub fn max<T: Real>(a: T, b: T, _v: T) -> (T, T) {
    if a >= b || b.is_nan() {
        (T::one(), T::zero())
    } else {
        (T::zero(), T::one())
    }
}

/// Partials of `a.min(b)`: the derivative follows the argument that was chosen.
#[inline(always)]
pub fn min<T: Real>(a: T, b: T, _v: T) -> (T, T) {
    if a <= b || b.is_nan() {
        (T::one(), T::zero())
    } else {
        (T::zero(), T::one())
    }
}

/// Partials of `a.mul_add(b, c) = a·b + c`.
#[inline(always)]
pub fn mul_add<T: Real>(a: T, b: T, _c: T, _v: T) -> (T, T, T) {
    (b, a, T::one())
}

/// Partials of `a.clamp(lo, hi)` with respect to `a`, `lo` and `hi`.
#[inline(always)]
pub fn clamp<T: Real>(a: T, lo: T, hi: T, _v: T) -> (T, T, T) {
    if a < lo {
        (T::zero(), T::one(), T::zero())
    } else if a > hi {
        (T::zero(), T::zero(), T::one())
    } else {
        (T::one(), T::zero(), T::zero())
    }
}

/// Partials of `a.sin_cos() = (sin a, cos a)`: `(cos a, -sin a)`.
#[inline(always)]
pub fn sin_cos<T: Real>(_a: T, v: (T, T)) -> (T, T) {
    (v.1, -v.0)
}

/// A value of a number type that the macros cannot see: a float, or an integer (a count
/// in a struct, whose tangent and adjoint are the shadow's copy, or zero).
pub trait Number: Copy {
    /// `∂(self % divisor) / ∂divisor`: `-trunc(self / divisor)` for a float (the
    /// remainder is `self - trunc(self / divisor) · divisor`; its partial in `self` is 1),
    /// zero for an integer.
    fn rem_partial(self, divisor: Self) -> Self;
    /// Whether the value is not zero.
    fn is_nonzero(self) -> bool;
}

impl<T: Real> Number for T {
    #[inline(always)]
    fn rem_partial(self, divisor: T) -> T {
        -(self / divisor).trunc()
    }
    #[inline(always)]
    fn is_nonzero(self) -> bool {
        self != T::zero()
    }
}

macro_rules! integer_number {
    ($($t:ty),*) => {$(
        impl Number for $t {
            #[inline(always)]
            fn rem_partial(self, _divisor: $t) -> $t {
                0
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self != 0
            }
        }
    )*};
}
integer_number!(
    usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128
);

/// `∂(a % b) / ∂b` (see [`Number::rem_partial`]).
#[inline(always)]
pub fn rem_partial<T: Number>(a: T, b: T) -> T {
    a.rem_partial(b)
}

/// Whether an adjoint is not zero: the reverse sweep of an operation whose partials can be
/// infinite at a finite input (`sqrt` at 0, `x / 0`) propagates only then, so that a value
/// computed but not used on the path taken (`let r = d.sqrt(); if i != j { e += 1.0 / r }`)
/// gives its inputs nothing rather than `0 · ∞`, which is not a number.
#[inline(always)]
pub fn nonzero<T: Number>(adjoint: T) -> bool {
    adjoint.is_nonzero()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A method, its partial-derivative function, and where to check it.
    type UnaryCase = (&'static str, fn(f64) -> f64, fn(f64, f64) -> f64, f64);
    type BinaryCase = (
        &'static str,
        fn(f64, f64) -> f64,
        fn(f64, f64, f64) -> (f64, f64),
    );

    fn fd(f: impl Fn(f64) -> f64, x: f64) -> f64 {
        let h = 1e-6;
        (f(x + h) - f(x - h)) / (2.0 * h)
    }

    #[test]
    fn unary_partials_match_finite_differences() {
        let cases: &[UnaryCase] = &[
            ("sin", f64::sin, sin, 0.7),
            ("cos", f64::cos, cos, 0.7),
            ("tan", f64::tan, tan, 0.7),
            ("asin", f64::asin, asin, 0.3),
            ("acos", f64::acos, acos, 0.3),
            ("atan", f64::atan, atan, 0.3),
            ("sinh", f64::sinh, sinh, 0.3),
            ("cosh", f64::cosh, cosh, 0.3),
            ("tanh", f64::tanh, tanh, 0.3),
            ("asinh", f64::asinh, asinh, 0.3),
            ("acosh", f64::acosh, acosh, 1.3),
            ("atanh", f64::atanh, atanh, 0.3),
            ("exp", f64::exp, exp, 0.3),
            ("exp2", f64::exp2, exp2, 0.3),
            ("exp_m1", f64::exp_m1, exp_m1, 0.3),
            ("ln", f64::ln, ln, 1.3),
            ("ln_1p", f64::ln_1p, ln_1p, 1.3),
            ("log2", f64::log2, log2, 1.3),
            ("log10", f64::log10, log10, 1.3),
            ("sqrt", f64::sqrt, sqrt, 1.3),
            ("cbrt", f64::cbrt, cbrt, 1.3),
            ("abs", f64::abs, abs, -1.3),
            ("recip", f64::recip, recip, -1.3),
            ("to_degrees", f64::to_degrees, to_degrees, 0.4),
            ("to_radians", f64::to_radians, to_radians, 0.4),
        ];
        for (name, f, d, x) in cases {
            let got = d(*x, f(*x));
            let want = fd(f, *x);
            assert!(
                (got - want).abs() < 1e-6 * (1.0 + want.abs()),
                "{name}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn binary_partials_match_finite_differences() {
        let (a, b) = (1.7, 0.6);
        let checks: &[BinaryCase] = &[
            ("powf", f64::powf, powf),
            ("log", f64::log, log),
            ("atan2", f64::atan2, atan2),
            ("hypot", f64::hypot, hypot),
            ("copysign", f64::copysign, copysign),
            ("max", f64::max, max),
            ("min", f64::min, min),
        ];
        for (name, f, d) in checks {
            let (pa, pb) = d(a, b, f(a, b));
            let wa = fd(|t| f(t, b), a);
            let wb = fd(|t| f(a, t), b);
            assert!((pa - wa).abs() < 1e-6, "{name} d/da: {pa} vs {wa}");
            assert!((pb - wb).abs() < 1e-6, "{name} d/db: {pb} vs {wb}");
        }
        assert!((powi(1.7_f64, 3, 0.0) - 3.0 * 1.7 * 1.7).abs() < 1e-12);
        assert_eq!(clamp(0.5, 0.0, 1.0, 0.5), (1.0, 0.0, 0.0));
        assert_eq!(clamp(-0.5, 0.0, 1.0, 0.0), (0.0, 1.0, 0.0));
        assert_eq!(mul_add(2.0, 3.0, 4.0, 10.0), (3.0, 2.0, 1.0));
        assert_eq!(copysign(1.5, -2.0, -1.5), (-1.0, 0.0));
        assert_eq!(copysign(-1.5, -2.0, -1.5), (1.0, 0.0));
        assert_eq!(copysign(0.0, -2.0, -0.0), (0.0, 0.0));
    }
}
