//! The states of callees kept for their pullbacks, recorded only when they hold
//! something, and callees' results recorded only when the reverse sweep may read them.
//!
//! A callee whose pullback needs nothing from its forward sweep (a scalar helper
//! `sq(z) = z * z`, which computes again what it reads) returns the state `()`. Recorded
//! in a loop, even a zero-sized value costs a count per iteration and a check per pop,
//! and that check's panic path keeps the loop from being vectorised. The caller cannot
//! see the callee's state type, but rustc can: [`Pick`] has an inherent method for `()`,
//! which method resolution takes before the trait method that records any other state.
//!
//! Likewise a call's result that the reverse sweep never reads (`s += sq(z)`) is recorded
//! only for its shape, which a float does not need: [`Pick`]'s inherent `keep_dead` for
//! `f64` and `f32` records nothing and gives back a zero, where a vector, whose adjoint
//! takes its length, is recorded ([`PickAny`]).

use crate::tape::{Slot, Spill, Stack, Tape, take};
use std::marker::PhantomData;

/// A store of recorded values: a [`Slot`], a [`Stack`] or a [`Tape`].
pub trait Record<T> {
    /// Records `v`.
    fn record(&mut self, v: T);
    /// Takes the last recorded value back.
    fn recall(&mut self) -> T;
}

/// `Record` for the stores, through their own `push` and `pop`.
macro_rules! record_by_push_and_pop {
    ($([$($generics:tt)*] $store:ty),* $(,)?) => {$(
        impl<$($generics)*> Record<T> for $store {
            #[inline(always)]
            fn record(&mut self, v: T) {
                self.push(v)
            }
            #[inline(always)]
            fn recall(&mut self) -> T {
                take(self.pop())
            }
        }
    )*};
}

record_by_push_and_pop!(
    [T] Slot<T>,
    [T, const N: usize, S: Spill<T>] Stack<T, N, S>,
    [T] Tape<T>,
);

/// Chooses how a state of type `T` is kept: not at all for `()` (its inherent methods),
/// in the store otherwise ([`PickAny`]).
pub struct Pick<T>(PhantomData<fn(T) -> T>);

/// The [`Pick`] for the state `v`.
#[inline(always)]
pub fn pick<T>(_v: &T) -> Pick<T> {
    Pick(PhantomData)
}

/// The [`Pick`] for the states of the store `st`.
#[inline(always)]
pub fn pick_from<T, St: Record<T>>(_st: &St) -> Pick<T> {
    Pick(PhantomData)
}

impl Pick<()> {
    /// Records nothing: there is nothing to record.
    #[inline(always)]
    pub fn keep<St: Record<()>>(self, _st: &mut St, _v: ()) {}

    /// The state `()`, which was not recorded.
    #[inline(always)]
    pub fn take_back<St: Record<()>>(self, _st: &mut St) {}
}

/// Keeps a callee's state other than `()`, and a dead call result other than a float, in
/// its store: what the inherent methods of [`Pick`] do not cover.
pub trait PickAny<T> {
    /// Records the state `v` in `st`.
    fn keep<St: Record<T>>(self, st: &mut St, v: T);
    /// Takes the last state back from `st`.
    fn take_back<St: Record<T>>(self, st: &mut St) -> T;
    /// Records the dead result `v` in `st` (its shape may matter: a vector's adjoint takes
    /// its length).
    fn keep_dead<St: Record<T>>(self, st: &mut St, v: T);
    /// Takes the last dead result back from `st`.
    fn take_back_dead<St: Record<T>>(self, st: &mut St) -> T;
}

impl<T> PickAny<T> for Pick<T> {
    #[inline(always)]
    fn keep<St: Record<T>>(self, st: &mut St, v: T) {
        st.record(v)
    }
    #[inline(always)]
    fn take_back<St: Record<T>>(self, st: &mut St) -> T {
        st.recall()
    }
    #[inline(always)]
    fn keep_dead<St: Record<T>>(self, st: &mut St, v: T) {
        st.record(v)
    }
    #[inline(always)]
    fn take_back_dead<St: Record<T>>(self, st: &mut St) -> T {
        st.recall()
    }
}

/// The floats whose dead values are not recorded (one generic impl rather than one per
/// type, so that a value of a type not yet known is not ambiguous between them).
pub trait DeadFloat: Copy {
    /// The value given back in place of one not recorded.
    const ZERO: Self;
}

impl DeadFloat for f32 {
    const ZERO: Self = 0.0;
}

impl DeadFloat for f64 {
    const ZERO: Self = 0.0;
}

impl<T: DeadFloat> Pick<T> {
    /// Records nothing: the value is never read.
    #[inline(always)]
    pub fn keep_dead<St: Record<T>>(self, _st: &mut St, _v: T) {}

    /// A zero in place of the value, which shapes an adjoint and nothing else.
    #[inline(always)]
    pub fn take_back_dead<St: Record<T>>(self, _st: &mut St) -> T {
        T::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::{PickAny, pick, pick_from};
    use crate::tape::Stack;

    /// `()` is not recorded; other states are, last first.
    #[test]
    fn only_states_that_hold_something_are_recorded() {
        let mut units = Stack::new();
        for _ in 0..100 {
            pick(&()).keep(&mut units, ());
        }
        for _ in 0..100 {
            pick_from(&units).take_back(&mut units);
        }
        assert_eq!(units.pop(), None, "no unit was recorded");

        let mut pairs = Stack::new();
        for i in 0..100 {
            pick(&(i, 0.5)).keep(&mut pairs, (i, 0.5));
        }
        let back: Vec<(i32, f64)> = (0..100)
            .map(|_| pick_from(&pairs).take_back(&mut pairs))
            .collect();
        assert_eq!(back[0], (99, 0.5));
        assert_eq!(back[99], (0, 0.5));
    }

    /// Dead floats are not recorded (a zero comes back); dead vectors are.
    #[test]
    fn only_dead_values_with_a_shape_are_recorded() {
        let mut floats = Stack::new();
        pick(&2.5f64).keep_dead(&mut floats, 2.5);
        assert_eq!(pick_from(&floats).take_back_dead(&mut floats), 0.0);
        assert_eq!(floats.pop(), None, "no float was recorded");

        let mut vectors = Stack::new();
        pick(&vec![1.0f32; 3]).keep_dead(&mut vectors, vec![1.0; 3]);
        assert_eq!(
            pick_from(&vectors).take_back_dead(&mut vectors),
            vec![1.0; 3]
        );
    }
}
