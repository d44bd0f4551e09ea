//! The index of the `k`-th element of a buffer that is a struct member, in the order its
//! `iter()` yields them (`for v in self.w.iter()`, `m.w.get(k)`).
//!
//! The macros do not see a member's type: a `Vec`, an array or a one-dimensional
//! `ndarray` array is indexed by `k`, a matrix by `[k / ncols, k % ncols]` (its
//! elements row after row). Both the value and its shadow are read at that index.

/// A buffer whose elements generated code reads by position (see the module).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a buffer of floats: differentiated code reads this struct member by position",
    label = "`iter()`, `get(i)`, `first()` or `last()` of a struct member",
    note = "differentiated code reads `iter()`, `get(i)`, `first()` and `last()` of a struct member as those of a `Vec`, an array or an `ndarray` array; call a method of your own type by another name"
)]
pub trait FlatIndex {
    /// What indexes the buffer.
    type Index;
    /// The index of the element at position `k` of `iter()`.
    fn flat_index(&self, k: usize) -> Self::Index;
}

impl<T> FlatIndex for [T] {
    type Index = usize;
    #[inline(always)]
    fn flat_index(&self, k: usize) -> usize {
        k
    }
}

impl<T> FlatIndex for Vec<T> {
    type Index = usize;
    #[inline(always)]
    fn flat_index(&self, k: usize) -> usize {
        k
    }
}

impl<T, const N: usize> FlatIndex for [T; N] {
    type Index = usize;
    #[inline(always)]
    fn flat_index(&self, k: usize) -> usize {
        k
    }
}

#[cfg(feature = "ndarray")]
impl<S: ndarray::RawData> FlatIndex for ndarray::ArrayBase<S, ndarray::Ix1> {
    type Index = usize;
    #[inline(always)]
    fn flat_index(&self, k: usize) -> usize {
        k
    }
}

#[cfg(feature = "ndarray")]
impl<S: ndarray::RawData> FlatIndex for ndarray::ArrayBase<S, ndarray::Ix2> {
    type Index = [usize; 2];
    #[inline(always)]
    fn flat_index(&self, k: usize) -> [usize; 2] {
        let cols = self.ncols();
        [k / cols, k % cols]
    }
}

/// [`FlatIndex::flat_index`] of `buffer`.
#[inline(always)]
pub fn flat_index<B: FlatIndex + ?Sized>(buffer: &B, k: usize) -> B::Index {
    buffer.flat_index(k)
}
