//! The scalar types that derivative code computes with.

use core::fmt::Debug;
use core::ops::{AddAssign, DivAssign, MulAssign, SubAssign};

/// A differentiable floating-point scalar: `f32` or `f64`.
///
/// Generated companions of a function generic over `T: num_traits::Float` add the bound
/// `T: Real` themselves, so users never need to name this trait. It is public so that
/// helpers and custom rules can be written generically.
///
/// ```
/// use autodiff_core::Real;
/// fn half<T: Real>(x: T) -> T { x * T::lit(0.5) }
/// assert_eq!(half(3.0f32), 1.5);
/// ```
pub trait Real:
    num_traits::Float
    + num_traits::FloatConst
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Default
    + core::iter::Sum
    + Debug
    + Send
    + Sync
    + 'static
{
    /// Converts an `f64` literal to this type (rounding for `f32`).
    fn lit(v: f64) -> Self;
    /// Converts an integer (such as a `powi` exponent) to this type.
    fn from_i32(v: i32) -> Self;
}

impl Real for f64 {
    #[inline(always)]
    fn lit(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn from_i32(v: i32) -> Self {
        v as f64
    }
}

impl Real for f32 {
    #[inline(always)]
    fn lit(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn from_i32(v: i32) -> Self {
        v as f32
    }
}
