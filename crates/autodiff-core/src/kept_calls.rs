//! What a pullback that keeps its forward sweep (a closure owning its tapes) holds for
//! each call it made.
//!
//! Such a closure outlives its arguments, so it may hold a callee's state only where that
//! state borrows nothing: the state of a generated function that keeps nothing of its own
//! callees. The callee's `__ad_augk` says which, before anything runs:
//! - [`Ready`]: the augmented call ran in the forward sweep, and here is its state;
//! - [`Recompute`]: the forward sweep made the primal call, and the reverse sweep makes the
//!   augmented call right before the pullback (a custom rule, whose pullback may borrow
//!   its arguments, and a function whose own state holds other calls' states, which could
//!   otherwise contain itself through recursion).

/// The state of an augmented call that ran in the forward sweep.
#[derive(Clone, Copy, Debug)]
pub struct Ready<S>(pub S);

/// No state: the augmented call runs in the reverse sweep.
#[derive(Clone, Copy, Debug)]
pub struct Recompute;

/// What a caller kept for one call, turned into the state its pullback takes. `A` is the
/// augmented call's state: the pullback takes either (a kept callee's pullback takes any
/// closure of its reverse sweep's signature).
pub trait KeptCall<A> {
    /// The state the pullback is given.
    type State;
    /// The state, from `aug` (the augmented call) where nothing was kept, and whether
    /// `aug` ran: it overwrites the call's `&mut` arguments as the primal call did, and
    /// the caller puts them back.
    fn into_state(self, aug: impl FnOnce() -> A) -> (Self::State, bool);
}

impl<S, A> KeptCall<A> for Ready<S> {
    type State = S;
    #[inline(always)]
    fn into_state(self, _aug: impl FnOnce() -> A) -> (S, bool) {
        (self.0, false)
    }
}

impl<A> KeptCall<A> for Recompute {
    type State = A;
    #[inline(always)]
    fn into_state(self, aug: impl FnOnce() -> A) -> (A, bool) {
        (aug(), true)
    }
}
