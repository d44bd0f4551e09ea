//! How a custom rule is differentiated again: a reverse rule under forward over reverse, a
//! forward rule under forward over forward.
//!
//! A reverse rule marked `#[differentiable]` has its value and its pullback closure
//! differentiated in forward mode at compile time, like any function; a forward rule is
//! differentiated as any function is. The function with the rule reaches
//! those derivatives through the rule itself, since it only knows the rule's path and a
//! path that might not exist cannot be written: it calls the rule once in "request" mode,
//! and the rule hands over its derivatives (plain function pointers) before it runs.
//!
//! Whether a reverse rule can do so is decided at compile time: a `#[differentiable]`
//! rule's pullback captures a [`PullbackMarker`], which makes it `!Unpin`, and
//! [`RuleProbe`] picks, by method resolution, either an error that names the rule (an
//! `Unpin` pullback) or nothing. The error is a constant evaluated only where nested code
//! is instantiated, so a rule without the attribute still works in every other mode. A
//! forward rule returns plain values, which say nothing: a forward rule without the
//! attribute is found out when nested code first runs, by a panic that names it.

use core::any::Any;
use core::cell::{Cell, RefCell};
use core::marker::{PhantomData, PhantomPinned};

/// Captured by the pullback of a `#[differentiable]` reverse rule, which it makes `!Unpin`:
/// an auto trait, which the rule's `impl FnOnce(..)` type cannot hide, so that the
/// function with the rule can tell, at compile time, that its rule is differentiable.
pub struct PullbackMarker(PhantomPinned);

impl PullbackMarker {
    /// The marker.
    #[inline(always)]
    pub fn new() -> Self {
        PullbackMarker(PhantomPinned)
    }
}

impl Default for PullbackMarker {
    fn default() -> Self {
        Self::new()
    }
}

std::thread_local! {
    static REQUESTED: Cell<bool> = const { Cell::new(false) };
    static OFFERED: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// Called first thing by a `#[differentiable]` rule (and by every `#[differentiable]`
/// function shaped like a forward rule): hands over its derivatives when a caller asked
/// for them. Every call of the rule runs it, so the common case is one read.
#[inline]
pub fn offer_nested_rule<T: 'static>(derivatives: T) {
    if REQUESTED.with(Cell::get) {
        REQUESTED.with(|r| r.set(false));
        OFFERED.with(|o| *o.borrow_mut() = Some(Box::new(derivatives)));
    }
}

/// Runs `call` (a call of a `#[differentiable]` rule) and returns its result with the
/// rule's derivatives, of the type the macros derive from the rule's signature. Panics
/// with `missing` when the rule handed over nothing: a forward rule's function cannot
/// tell at compile time whether its rule is `#[differentiable]` (a reverse rule's can,
/// see [`RuleProbe`]).
pub fn request_nested_rule<T: 'static, Y>(call: impl FnOnce() -> Y, missing: &str) -> (Y, T) {
    REQUESTED.with(|r| r.set(true));
    let y = call();
    REQUESTED.with(|r| r.set(false));
    let offered = OFFERED.with(|o| o.borrow_mut().take());
    let Some(derivatives) = offered else {
        panic!("{missing}");
    };
    let derivatives = derivatives
        .downcast::<T>()
        .expect("the derivatives a rule handed over do not match its function's signature");
    (y, *derivatives)
}

/// Where the function with a rule keeps the derivatives its rule handed over (plain
/// function pointers): asked once, so that the rule does not run an extra time per call.
pub type NestedRuleCache<T> = std::sync::OnceLock<T>;

/// The derivatives in `cache`, or those `request` gets (see [`request_nested_rule`]),
/// kept in `cache`.
#[inline]
pub fn cached_nested_rule<T: Copy>(cache: &NestedRuleCache<T>, request: impl FnOnce() -> T) -> T {
    if let Some(d) = cache.get() {
        return *d;
    }
    // (Not `get_or_init`: the rule may run nested code that asks the same cache.)
    let d = request();
    let _ = cache.set(d);
    d
}

/// Probes whether the pullback `P` of a reverse rule comes from a `#[differentiable]`
/// rule; `E` raises the error otherwise.
pub struct RuleProbe<'a, P, E>(pub &'a P, pub PhantomData<E>);

/// The error of a reverse rule used under nested differentiation without
/// `#[differentiable]`: a constant that fails to evaluate, generic over the caller's mode
/// marker `M` so that it is evaluated only where nested code is instantiated.
pub trait MissingNestedRule {
    /// Fails to compile once instantiated.
    fn error<M>();
}

/// The rule is not `#[differentiable]`: its pullback is `Unpin`.
pub trait NestedRuleMissing {
    /// Fails to compile once instantiated.
    fn check<M>(&self, mark: M);
}

impl<P: Unpin, E: MissingNestedRule> NestedRuleMissing for RuleProbe<'_, P, E> {
    #[inline(always)]
    fn check<M>(&self, _mark: M) {
        E::error::<M>();
    }
}

/// The rule is `#[differentiable]` (chosen, by auto-reference, only when
/// [`NestedRuleMissing`] does not apply).
pub trait NestedRuleFound {
    /// Nothing to check.
    fn check<M>(&self, mark: M);
}

impl<P, E> NestedRuleFound for &RuleProbe<'_, P, E> {
    #[inline(always)]
    fn check<M>(&self, _mark: M) {}
}
