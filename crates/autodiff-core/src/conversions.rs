//! Conversions with `as` in differentiated code. A conversion of a float carries its
//! derivative; one of an integer (a count kept in a struct, `let n = cfg.n; n as f64`)
//! carries none. The macros cannot see a value's type, so the type decides here, at
//! compile time: the tangent and the adjoint of an integer are dropped, whatever the
//! shadow of the integer holds (a struct's shadow keeps copies of its counts).

use crate::Real;
use crate::protocol::{ScalarTangent, Zero};

/// The target of a conversion with `as` to a type named by an alias (`v as Idx` with
/// `type Idx = usize;`), which the macros cannot see: an integer, whose value carries no
/// derivative. A float alias is refused at compile time, since its derivative would be
/// dropped.
#[diagnostic::on_unimplemented(
    message = "a conversion with `as` to another name of `{Self}` in differentiated code",
    label = "this names `{Self}`, which the macros cannot see from the name: its derivative would be dropped",
    note = "write `as {Self}` so that the conversion carries its derivative"
)]
pub trait IntegerTarget: Copy + 'static {}

macro_rules! integer_target {
    ($($t:ty),*) => {$( impl IntegerTarget for $t {} )*};
}
integer_target!(
    usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128
);

/// `v as T` for a type `T` named by an alias, which must be an integer type (see
/// [`IntegerTarget`]).
#[inline(always)]
pub fn integer_as<T: IntegerTarget, S: num_traits::AsPrimitive<T>>(v: S) -> T {
    v.as_()
}

/// `v` converted to the float type `T` (`T::from(v).unwrap()`): the primal and the tangent
/// of a conversion to a float type parameter, where `v as T` is not Rust.
#[inline(always)]
pub fn cast_to<T: num_traits::NumCast, S: num_traits::ToPrimitive>(v: S) -> T {
    match T::from(v) {
        Some(t) => t,
        None => panic!("autodiff: a value does not convert to the float type"),
    }
}

/// A value that differentiated code converts to a float with `as`: a float, whose
/// derivative is converted with it, or an integer or a `bool`, which has none.
pub trait Convertible: Copy {
    /// The tangent of `self as T`, for the tangent `self` of the converted value.
    fn cast_tangent<T: Real>(self) -> T;
    /// Adds the adjoint `g` of `value as F` into `self`, the adjoint of `value`.
    fn add_cast<F: Real>(&mut self, g: F);
}

impl<S: Real> Convertible for S {
    #[inline(always)]
    fn cast_tangent<T: Real>(self) -> T {
        T::from(self).unwrap_or_else(T::nan)
    }
    #[inline(always)]
    fn add_cast<F: Real>(&mut self, g: F) {
        *self += S::from(g).unwrap_or_else(S::nan);
    }
}

macro_rules! convertible_integer {
    ($($t:ty),*) => {$(
        impl Convertible for $t {
            #[inline(always)]
            fn cast_tangent<T: Real>(self) -> T {
                T::zero()
            }
            #[inline(always)]
            fn add_cast<F: Real>(&mut self, _g: F) {}
        }
    )*};
}
convertible_integer!(
    bool, usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128
);

/// The tangent of `v as T`, for the tangent `t` of `v`: converted when `v` is a float,
/// zero when it is an integer.
#[inline(always)]
pub fn cast_tangent<T: Real, S: Convertible>(t: S) -> T {
    t.cast_tangent()
}

/// `*acc += g` converted back to the type of `acc`, the adjoint of a value converted with
/// `as` (the reverse of the conversion); nothing for the adjoint of an integer.
#[inline(always)]
pub fn add_cast<A: Convertible, F: Real>(acc: &mut A, g: F) {
    acc.add_cast(g);
}

/// The forward protocol of [`add_cast()`], which a reverse sweep differentiated again
/// calls: the tangents are converted and added as the values are.
pub mod add_cast {
    use super::{Convertible, Real, ScalarTangent, Zero};

    /// Where the tangent of `g` goes: the tangent of the adjoint, or nowhere when the
    /// adjoint is constant.
    pub trait TangentOfCast<A> {
        /// Adds the tangent `t_g`, converted.
        fn add<F: Real>(self, t_g: F);
    }

    impl<A: Convertible> TangentOfCast<A> for &mut A {
        #[inline(always)]
        fn add<F: Real>(self, t_g: F) {
            self.add_cast(t_g);
        }
    }

    impl<A> TangentOfCast<A> for Zero {
        #[inline(always)]
        fn add<F: Real>(self, _t_g: F) {}
    }

    /// `add_cast(acc, g)` and `add_cast(t_acc, t_g)`.
    #[inline(always)]
    pub fn __ad_fwd<A: Convertible, F: Real>(
        acc: &mut A,
        t_acc: impl TangentOfCast<A>,
        g: F,
        t_g: impl ScalarTangent<F>,
        _mark: impl Copy,
    ) -> ((), ()) {
        acc.add_cast(g);
        t_acc.add(t_g.tangent());
        ((), ())
    }
}
