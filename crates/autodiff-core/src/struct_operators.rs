//! The checks that an operator on struct values (`a * b` of a user's struct, in a
//! differentiated function) has a derivative.
//!
//! Such an operator is differentiated as a call of the method that `#[differentiable]`
//! on its `impl` block adds (`impl Mul for C` adds `C::autodiff_op_mul`, `impl Mul<C> for
//! f64` adds `C::autodiff_op_scalar_mul`), and the block implements the matching trait
//! below for the struct. Differentiated code calls the
//! check of each operator it meets on a struct value: where the block is not marked, the
//! trait is missing and rustc's error says what to mark, at the operator.

/// A marker trait per operator and kind of right-hand side, with a check that asks for
/// it.
macro_rules! operator_traits {
    ($($trait_:ident, $check:ident, $op:literal, $block:literal;)*) => {$(
        #[doc = concat!("Implemented by `#[differentiable]` on `", $block, "`: `", $op, "` of such values has a derivative.")]
        #[diagnostic::on_unimplemented(
            message = "an operator on `{Self}` values in differentiated code has no derivative",
            label = "the operator's `impl` block for `{Self}` is not marked `#[differentiable]`",
            note = "mark the block `#[differentiable]` (`#[differentiable] impl Add for V2 {{ .. }}`, `#[differentiable] impl Mul<V2> for f64 {{ .. }}` for `2.0 * v`): it then differentiates the operator's code"
        )]
        pub trait $trait_ {}

        // (A struct's operand read through a reference: `*self` bound to a local.)
        #[diagnostic::do_not_recommend]
        impl<T: $trait_ + ?Sized> $trait_ for &T {}

        #[doc = concat!("Compiles only where `", $op, "` of such values has a derivative.")]
        #[inline(always)]
        pub fn $check<T: $trait_ + ?Sized>(_: &T) {}
    )*};
}

operator_traits! {
    DifferentiableAdd, add, "a + b", "impl Add for S";
    DifferentiableAddScalar, add_scalar, "a + x", "impl Add<f64> for S";
    DifferentiableSub, sub, "a - b", "impl Sub for S";
    DifferentiableSubScalar, sub_scalar, "a - x", "impl Sub<f64> for S";
    DifferentiableMul, mul, "a * b", "impl Mul for S";
    DifferentiableMulScalar, mul_scalar, "a * x", "impl Mul<f64> for S";
    DifferentiableDiv, div, "a / b", "impl Div for S";
    DifferentiableDivScalar, div_scalar, "a / x", "impl Div<f64> for S";
    DifferentiableNeg, neg, "-a", "impl Neg for S";
    DifferentiableAddAssign, add_assign, "a += b", "impl AddAssign for S";
    DifferentiableAddAssignScalar, add_assign_scalar, "a += x", "impl AddAssign<f64> for S";
    DifferentiableSubAssign, sub_assign, "a -= b", "impl SubAssign for S";
    DifferentiableSubAssignScalar, sub_assign_scalar, "a -= x", "impl SubAssign<f64> for S";
    DifferentiableMulAssign, mul_assign, "a *= b", "impl MulAssign for S";
    DifferentiableMulAssignScalar, mul_assign_scalar, "a *= x", "impl MulAssign<f64> for S";
    DifferentiableDivAssign, div_assign, "a /= b", "impl DivAssign for S";
    DifferentiableDivAssignScalar, div_assign_scalar, "a /= x", "impl DivAssign<f64> for S";
    DifferentiableScalarAdd, scalar_add, "x + a", "impl Add<S> for f64";
    DifferentiableScalarSub, scalar_sub, "x - a", "impl Sub<S> for f64";
    DifferentiableScalarMul, scalar_mul, "x * a", "impl Mul<S> for f64";
    DifferentiableScalarDiv, scalar_div, "x / a", "impl Div<S> for f64";
}
