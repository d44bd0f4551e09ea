//! Copies of a struct behind `&mut` in companions differentiated again.
//!
//! A reverse companion keeps the final value of a `&mut S` parameter (`self` of a
//! `&mut self` method included) while its reverse sweep puts back the values it
//! overwrote, and writes that copy back at the end. Its own code asks for `S: Clone`
//! through [`Snapshot`](crate::__private::Snapshot), so that a missing `Clone` is a
//! compile error naming the struct. The forward-over-reverse variants that every
//! annotated function carries (so that callers can be differentiated again) make the
//! same copy, but they exist whether or not anybody nests: a forward companion of a
//! `&mut self` method on a struct that is not `Clone` must still compile. There the copy
//! is chosen by method resolution on a concrete type (`nested_copy_of(&*s).nested_copy()`):
//! [`NestedCopy`]'s methods where `S: Clone`, and otherwise those of [`WithoutClone`],
//! which panic with the fix if such a variant ever runs.

/// A struct to be copied or written in a companion differentiated again
/// ([`nested_copy_of`]). Its own methods need `T: Clone`; where the struct is not `Clone`,
/// method resolution goes on through `Deref` to [`WithoutClone`]'s, which panic.
pub struct NestedCopy<'a, T>(WithoutClone<'a, T>);

/// The struct of a [`NestedCopy`] seen as one that is not `Clone`.
pub struct WithoutClone<'a, T>(&'a T);

/// The struct behind `v`, to copy (`.nested_copy()`) or to write into another
/// (`.nested_copy_into(dst)`), called where its type is concrete.
#[inline(always)]
pub fn nested_copy_of<T>(v: &T) -> NestedCopy<'_, T> {
    NestedCopy(WithoutClone(v))
}

impl<T: Clone> NestedCopy<'_, T> {
    /// A clone of the struct.
    #[inline]
    pub fn nested_copy(&self) -> T {
        self.0.0.clone()
    }

    /// Writes the struct into `dst` (`clone_from`, which keeps `dst`'s buffers).
    #[inline]
    pub fn nested_copy_into(&self, dst: &mut T) {
        dst.clone_from(self.0.0);
    }
}

impl<'a, T> ::core::ops::Deref for NestedCopy<'a, T> {
    type Target = WithoutClone<'a, T>;
    #[inline(always)]
    fn deref(&self) -> &WithoutClone<'a, T> {
        &self.0
    }
}

impl<T> WithoutClone<'_, T> {
    /// Panics: the struct is not `Clone`.
    #[cold]
    pub fn nested_copy(&self) -> T {
        not_clone::<T>()
    }

    /// Panics: the struct is not `Clone`.
    #[cold]
    pub fn nested_copy_into(&self, _dst: &mut T) {
        not_clone::<T>()
    }
}

#[cold]
#[inline(never)]
fn not_clone<T>() -> ! {
    panic!(
        "differentiating again through a function that takes a `&mut {}` saves a copy of it, \
         and `{0}` is not `Clone`: add `#[derive(Clone)]` to its declaration",
        ::core::any::type_name::<T>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, PartialEq, Debug)]
    struct Cloned {
        v: Vec<f64>,
    }

    struct NotCloned {
        _v: f64,
    }

    #[test]
    fn a_clone_struct_is_copied_and_written_back() {
        let a = Cloned { v: vec![1.0, 2.0] };
        let copy = nested_copy_of(&a).nested_copy();
        assert_eq!(copy, a);
        let mut b = Cloned { v: vec![] };
        nested_copy_of(&a).nested_copy_into(&mut b);
        assert_eq!(b, a);
    }

    #[test]
    #[should_panic(expected = "is not `Clone`: add `#[derive(Clone)]`")]
    fn a_struct_without_clone_panics_with_the_fix() {
        let a = NotCloned { _v: 1.0 };
        let _copy: NotCloned = nested_copy_of(&a).nested_copy();
    }
}
