//! The check behind an integer that the macros inferred from how a value is used.
//!
//! `let i = locate(xs, t);` without a written type, followed by `ys[i + 1]`, is lowered as
//! `let i = integer_use::no_grad(locate(xs, t));`: the call needs no derivative because
//! the value is an integer. The macros read that from the code after the `let`, not from
//! the type; this `no_grad` asks rustc to confirm it, so that a wrong reading is a
//! compile error naming the value's type, never a derivative silently dropped.

/// An integer type: what a value used as an index, a count or a range's bound is.
#[diagnostic::on_unimplemented(
    message = "this value was taken for an integer from how the code after its `let` uses it, but it is a `{Self}`",
    label = "a `{Self}`, which may carry a derivative",
    note = "write the value's type in the `let` (`let i: usize = ..`), or give the function that computes it `#[differentiable]`"
)]
pub trait InferredInteger {}

macro_rules! inferred_integer {
    ($($t:ty),*) => {$( impl InferredInteger for $t {} )*};
}
inferred_integer!(
    usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128
);

/// `no_grad` of a value inferred to be an integer: the value unchanged, where it is one.
/// (Named as `autodiff_core::no_grad` is, so that code lowered again reads it as that.)
#[inline(always)]
pub fn no_grad<T: InferredInteger>(value: T) -> T {
    value
}

#[cfg(test)]
mod tests {
    #[test]
    fn integers_pass_through() {
        assert_eq!(super::no_grad(3usize), 3);
        assert_eq!(super::no_grad(-2i32), -2);
    }
}
