//! The saved contents of buffers that calls in a loop overwrite, kept flat.
//!
//! A call that writes into a local buffer (`qtimesx(.., &mut out)` per data point) has the
//! buffer's old contents saved before it and put back in the reverse sweep. Saved as one
//! [`SavedSlice`](crate::buffers::SavedSlice) per call, each copy takes the size of its
//! inline part (96 bytes for two `f64`s) and a heap allocation beyond 8 values; here the
//! values of all the calls follow one another in one [`Tape`], with their lengths in
//! another: a copy takes its values and one length, and never allocates of its own.

use crate::buffers::{Restore, restore_vec};
use crate::tape::Tape;
use std::fmt;
use std::ops::Deref;

/// A LIFO store of copies of slices: [`SavedSlices::save`] records one, [`SavedSlices::pop`]
/// reads the last one back, as a [`SavedRun`] that borrows the store until it is dropped.
pub struct SavedSlices<T> {
    values: Tape<T>,
    lens: Tape<usize>,
}

impl<T> SavedSlices<T> {
    /// An empty store; it allocates at its first copy.
    #[inline(always)]
    pub fn new() -> Self {
        SavedSlices {
            values: Tape::new(),
            lens: Tape::new(),
        }
    }

    /// Records a copy of `v`.
    #[inline]
    pub fn save(&mut self, v: &[T])
    where
        T: Clone,
    {
        self.values.push_run(v);
        self.lens.push(v.len());
    }

    /// Records the values of `v` (a copy already made: a companion differentiated again
    /// saves its buffers with `to_vec`).
    #[inline]
    pub fn push(&mut self, v: Vec<T>)
    where
        T: Clone,
    {
        self.save(&v);
    }

    /// The last copy recorded, or `None` if there is none. Its values stay in the store
    /// until the returned run is dropped.
    #[inline]
    pub fn pop(&mut self) -> Option<SavedRun<'_, T>> {
        let n = self.lens.pop()?;
        self.values.prepare_run(n);
        Some(SavedRun {
            values: &mut self.values,
            n,
        })
    }

    /// Makes room for the lengths of `n` more copies.
    #[inline]
    pub fn reserve(&mut self, n: usize) {
        self.lens.reserve(n);
    }
}

impl<T> Default for SavedSlices<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for SavedSlices<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SavedSlices")
            .field("copies", &self.lens)
            .finish()
    }
}

/// The last copy of a [`SavedSlices`], read in place: a slice of its values, which are
/// dropped from the store with it.
pub struct SavedRun<'a, T> {
    values: &'a mut Tape<T>,
    n: usize,
}

impl<T> Deref for SavedRun<'_, T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        self.values.top(self.n)
    }
}

impl<T> Drop for SavedRun<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.values.drop_top(self.n);
    }
}

impl<T: fmt::Debug> fmt::Debug for SavedRun<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Clone> Restore<SavedRun<'_, T>> for [T] {
    #[inline]
    fn restore(&mut self, saved: SavedRun<'_, T>) {
        self.clone_from_slice(&saved);
    }
    #[inline]
    fn restore_from(&mut self, saved: &SavedRun<'_, T>) {
        self.clone_from_slice(saved);
    }
}

impl<T: Clone, const N: usize> Restore<SavedRun<'_, T>> for [T; N] {
    #[inline]
    fn restore(&mut self, saved: SavedRun<'_, T>) {
        self[..].restore(saved);
    }
    #[inline]
    fn restore_from(&mut self, saved: &SavedRun<'_, T>) {
        self[..].restore_from(saved);
    }
}

impl<T: Clone> Restore<SavedRun<'_, T>> for Vec<T> {
    #[inline]
    fn restore(&mut self, saved: SavedRun<'_, T>) {
        restore_vec(self, &saved);
    }
    #[inline]
    fn restore_from(&mut self, saved: &SavedRun<'_, T>) {
        restore_vec(self, saved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffers::restore_from;
    use std::rc::Rc;

    #[test]
    fn copies_come_back_last_first_across_blocks() {
        let mut s = SavedSlices::new();
        // Enough values to fill several blocks, in runs of varying lengths (0 included).
        let runs: Vec<Vec<f64>> = (0..300)
            .map(|i| (0..i % 13).map(|j| (i * 100 + j) as f64).collect())
            .collect();
        for r in &runs {
            s.save(r);
        }
        for r in runs.iter().rev() {
            let got = s.pop().expect("a saved copy");
            assert_eq!(&*got, r.as_slice());
        }
        assert!(s.pop().is_none());
    }

    #[test]
    fn interleaved_saves_and_pops() {
        let mut s = SavedSlices::new();
        s.save(&[1.0, 2.0]);
        s.save(&[3.0; 40]);
        assert_eq!(&*s.pop().unwrap(), &[3.0; 40][..]);
        s.push(vec![4.0, 5.0, 6.0]);
        assert_eq!(&*s.pop().unwrap(), &[4.0, 5.0, 6.0][..]);
        assert_eq!(&*s.pop().unwrap(), &[1.0, 2.0][..]);
        assert!(s.pop().is_none());
    }

    #[test]
    fn restores_into_slices_arrays_and_vectors() {
        let mut s = SavedSlices::new();
        s.save(&[1.0, 2.0, 3.0]);
        s.save(&[4.0, 5.0]);
        s.save(&[6.0]);
        let mut v = vec![0.0; 4];
        let run = s.pop().unwrap();
        restore_from(&mut v, &run);
        assert_eq!(v, [6.0]);
        drop(run);
        let mut a = [0.0; 2];
        crate::buffers::restore(&mut a, s.pop().unwrap());
        assert_eq!(a, [4.0, 5.0]);
        let mut x = [0.0; 3];
        crate::buffers::restore(&mut x[..], s.pop().unwrap());
        assert_eq!(x, [1.0, 2.0, 3.0]);
    }

    #[test]
    fn values_are_dropped_once() {
        let item = Rc::new(());
        {
            let mut s = SavedSlices::new();
            for n in 0..50 {
                s.save(&vec![Rc::clone(&item); n % 7]);
            }
            assert_eq!(
                Rc::strong_count(&item),
                1 + (0..50).map(|n| n % 7).sum::<usize>()
            );
            for _ in 0..20 {
                drop(s.pop().unwrap());
            }
            // The rest are dropped with the store.
        }
        assert_eq!(Rc::strong_count(&item), 1);
    }
}
