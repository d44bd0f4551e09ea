//! The shape of an `ndarray` array that is a struct member (`l.w.dim()`).
//!
//! The macros read a member's type nowhere, so they cannot tell `l.w.dim()` of an array,
//! which gives integers, from a user's own method `dim` that might carry a derivative.
//! They write `array_shape(&l.w).dim()`: the shape is then a constant, and a receiver that
//! is not an `ndarray` array is a compile error rather than a silently lost derivative.

/// The `ndarray` arrays (feature `ndarray`), whose shape methods carry no derivative.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an `ndarray` array: its method is taken for an array's shape",
    label = "a shape method (`dim`, `nrows`, `ncols`, ..) of a struct member",
    note = "differentiated code reads `dim()`, `nrows()`, `ncols()`, `ndim()`, `raw_dim()`, `len_of()` and `is_square()` of a struct member as the shape of an `ndarray` array (feature `ndarray` of autodiff-core); call a method of your own type by another name"
)]
pub trait ArrayShape {}

#[cfg(feature = "ndarray")]
impl<S: ndarray::RawData, D: ndarray::Dimension> ArrayShape for ndarray::ArrayBase<S, D> {}

/// `array` itself, once its type is known to be an `ndarray` array.
#[inline(always)]
pub fn array_shape<A: ArrayShape>(array: &A) -> &A {
    array
}
