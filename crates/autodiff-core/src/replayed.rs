//! Element accesses that a reverse sweep replays.
//!
//! The reverse sweep visits the forward sweep's statements backwards: it reads again the
//! elements the forward sweep read, and adds into the shadows of the elements it read or
//! wrote. Where the slice is one whose length cannot change during the call (a slice
//! parameter, its shadow cut to the parameter's length on entry, or a local buffer of
//! fixed length and its shadow made as long), the forward sweep's
//! bounds check of the same index already holds, and checking again only keeps the
//! compiler from vectorising the reverse loops (see BENCHMARKS.md). Only the generated
//! code calls these, and only at such an index; debug builds check it all the same.

/// `s[i]`, where the forward sweep of the same call indexed `s` (or the slice whose
/// shadow `s` is, as long as it) at `i` and `s` has kept its length since.
#[inline(always)]
pub fn at<T>(s: &[T], i: usize) -> &T {
    debug_assert!(
        i < s.len(),
        "a replayed index {i} out of bounds ({})",
        s.len()
    );
    // SAFETY: the forward sweep indexed this slice, or one of the same length, at `i`
    // (the caller's contract above), which panics unless `i < s.len()`.
    unsafe { s.get_unchecked(i) }
}

/// `&mut s[i]`, under the contract of [`at`].
#[inline(always)]
pub fn at_mut<T>(s: &mut [T], i: usize) -> &mut T {
    debug_assert!(
        i < s.len(),
        "a replayed index {i} out of bounds ({})",
        s.len()
    );
    // SAFETY: as in `at`.
    unsafe { s.get_unchecked_mut(i) }
}

/// The index `i` itself: it marks, in a reverse companion that is differentiated again
/// (which reads [`at`] and [`at_mut`] back as `s[replayed_index(i)]`), an index that the
/// companion replays, so that the forward transform of the companion can replay it too
/// where the tangent keeps the primal's length. Rendered as it is, it is an ordinary,
/// checked index.
#[inline(always)]
pub fn replayed_index(i: usize) -> usize {
    i
}

/// Checks that a pullback that keeps its forward sweep's state is given a slice as long
/// as its augmented call was (`then`): its reverse sweep reaches, unchecked, elements at
/// indices the augmented call checked. Generated callers pass the same slice to both.
#[inline(always)]
#[track_caller]
pub fn same_length(now: usize, then: usize) {
    assert!(
        now == then,
        "a pullback was given a slice of length {now}, its augmented call one of length {then}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_accesses_read_and_write_the_element() {
        let mut v = vec![1.0, 2.0, 3.0];
        assert_eq!(*at(&v[..], 2), 3.0);
        *at_mut(&mut v[..], 1) += 5.0;
        assert_eq!(v, [1.0, 7.0, 3.0]);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a replayed index 3 out of bounds (3)")]
    fn an_index_the_forward_sweep_could_not_have_read_panics_in_debug_builds() {
        let v = [1.0, 2.0, 3.0];
        let _ = at(&v[..], 3);
    }

    #[test]
    #[should_panic(
        expected = "a pullback was given a slice of length 2, its augmented call one of length 3"
    )]
    fn a_pullback_given_a_shorter_slice_panics() {
        same_length(3, 3);
        same_length(2, 3);
    }
}
