//! Differentiable closures: what a custom rule (or a differentiated higher-order function)
//! receives for a closure argument.

use crate::buffers::{AddInto, ZeroLike, zero_like};
use core::cell::{Cell, RefCell, RefMut};

/// A closure together with its derivatives.
///
/// When differentiated code passes a closure (or a local closure variable) to a function
/// with a custom rule, the rule receives a value implementing `DiffFn<X, Y>` in place of
/// the `Fn(X) -> Y`. `X` and `Y` are float scalars, or tuples of them for closures of
/// several arguments; `()` for no argument (`Fn() -> f64` gives `DiffFn<(), f64>`).
///
/// The derivatives include those of the variables the closure captured from the caller:
/// `jvp` adds their tangents, and `vjp` adds their cotangents into the caller's adjoints.
/// A closure built by forward-mode code provides `call` and `jvp`; one built by
/// reverse-mode code provides `call` and `vjp`.
///
/// ```
/// use autodiff_core::DiffFn;
///
/// // A rule of a one-dimensional integral, ∫₀¹ f(x) dx by the midpoint rule.
/// fn integral_fwd<F: DiffFn<f64, f64>>(f: F, n: usize) -> (f64, f64) {
///     let h = 1.0 / n as f64;
///     (0..n).fold((0.0, 0.0), |(s, ds), i| {
///         let (y, dy) = f.jvp((i as f64 + 0.5) * h, 0.0);
///         (s + h * y, ds + h * dy)
///     })
/// }
/// # let _ = integral_fwd::<autodiff_core::__private::ForwardFn<fn(f64) -> f64, fn(f64, f64) -> (f64, f64)>>;
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a differentiable closure (`DiffFn<{X}, {Y}>`)",
    label = "a closure here must carry its derivatives",
    note = "a plain closure has no derivative: a function that takes a closure is differentiated where differentiated code calls it with a closure written there (its companions' closure parameters take `DiffFn`s, which that code builds); call such a function from a `#[differentiable]` function or a companion's function, or pass a type of yours that implements `DiffFn`"
)]
pub trait DiffFn<X, Y> {
    /// The closure's value.
    fn call(&self, x: X) -> Y;
    /// Output and output tangent for input tangent `dx`, including the tangents of the
    /// variables the closure captured from the caller.
    fn jvp(&self, x: X, dx: X) -> (Y, Y);
    /// Output and input cotangent for output cotangent `ybar`; the cotangents of the
    /// captured variables are added into the caller's adjoints.
    fn vjp(&self, x: X, ybar: Y) -> (Y, X);
}

impl<X, Y, F: DiffFn<X, Y> + ?Sized> DiffFn<X, Y> for &F {
    #[inline(always)]
    fn call(&self, x: X) -> Y {
        (**self).call(x)
    }
    #[inline(always)]
    fn jvp(&self, x: X, dx: X) -> (Y, Y) {
        (**self).jvp(x, dx)
    }
    #[inline(always)]
    fn vjp(&self, x: X, ybar: Y) -> (Y, X) {
        (**self).vjp(x, ybar)
    }
}

/// A closure built by forward-mode code: its value and its tangent map.
#[derive(Clone, Copy)]
pub struct ForwardFn<C, J> {
    call: C,
    jvp: J,
}

impl<C, J> ForwardFn<C, J> {
    /// Pairs a closure with its tangent map.
    #[inline(always)]
    pub fn new(call: C, jvp: J) -> Self {
        ForwardFn { call, jvp }
    }
}

impl<X, Y, C: Fn(X) -> Y, J: Fn(X, X) -> (Y, Y)> DiffFn<X, Y> for ForwardFn<C, J> {
    #[inline(always)]
    fn call(&self, x: X) -> Y {
        (self.call)(x)
    }
    #[inline(always)]
    fn jvp(&self, x: X, dx: X) -> (Y, Y) {
        (self.jvp)(x, dx)
    }
    fn vjp(&self, _x: X, _ybar: Y) -> (Y, X) {
        panic!(
            "autodiff: `DiffFn::vjp` called on a closure passed by forward-mode code; a forward rule uses `call` and `jvp`"
        )
    }
}

/// A closure built by reverse-mode code: its value and its cotangent map.
#[derive(Clone, Copy)]
pub struct ReverseFn<C, V> {
    call: C,
    vjp: V,
}

impl<C, V> ReverseFn<C, V> {
    /// Pairs a closure with its cotangent map.
    #[inline(always)]
    pub fn new(call: C, vjp: V) -> Self {
        ReverseFn { call, vjp }
    }
}

impl<X, Y, C: Fn(X) -> Y, V: Fn(X, Y) -> (Y, X)> DiffFn<X, Y> for ReverseFn<C, V> {
    #[inline(always)]
    fn call(&self, x: X) -> Y {
        (self.call)(x)
    }
    fn jvp(&self, _x: X, _dx: X) -> (Y, Y) {
        panic!(
            "autodiff: `DiffFn::jvp` called on a closure passed by reverse-mode code; a reverse rule uses `call` and `vjp`"
        )
    }
    #[inline(always)]
    fn vjp(&self, x: X, ybar: Y) -> (Y, X) {
        (self.vjp)(x, ybar)
    }
}

/// Adds `v` into an adjoint accumulator shared with a closure's cotangent map.
#[inline(always)]
pub fn cell_add<T: crate::Real>(c: &Cell<T>, v: T) {
    c.set(c.get() + v);
}

/// Takes the accumulated adjoint out of a closure's accumulator.
#[inline(always)]
pub fn cell_take<T: crate::Real>(c: &Cell<T>) -> T {
    c.replace(T::zero())
}

/// A float buffer that a closure passed to a differentiated call may capture with its
/// derivatives: a slice, a `Vec` or an array of floats (or of such buffers: rows of a
/// matrix). Its adjoint accumulator (see [`BufferCell`]) is a buffer of zeros of the same
/// shape.
#[diagnostic::on_unimplemented(
    message = "a closure passed to a differentiated call captures `{Self}` with derivatives: only scalars and float buffers (slices, `Vec`s, arrays) may be captured",
    label = "captured by this closure"
)]
pub trait CapturedBuffer {
    /// The adjoint accumulator's type.
    type Shadow;
    /// A zero accumulator shaped like `self`.
    fn zero_shadow(&self) -> Self::Shadow;
}

impl<T: ZeroLike> CapturedBuffer for [T] {
    type Shadow = Vec<T::Out>;
    fn zero_shadow(&self) -> Self::Shadow {
        zero_like(self)
    }
}

impl<T: ZeroLike> CapturedBuffer for Vec<T> {
    type Shadow = Vec<T::Out>;
    fn zero_shadow(&self) -> Self::Shadow {
        zero_like(self)
    }
}

impl<T: ZeroLike, const N: usize> CapturedBuffer for [T; N] {
    type Shadow = [T::Out; N];
    fn zero_shadow(&self) -> Self::Shadow {
        zero_like(self)
    }
}

/// The adjoint accumulator of a float buffer captured by a closure passed to a
/// differentiated call, shared by the closure's cotangent map (which may run many times)
/// and the caller, which drains it into the buffer's adjoint after the call's pullback.
/// It is allocated on first use, so a closure whose cotangent map never runs costs
/// nothing.
pub struct BufferCell<S>(RefCell<Option<S>>);

impl<S> Default for BufferCell<S> {
    fn default() -> Self {
        BufferCell(RefCell::new(None))
    }
}

impl<S> BufferCell<S> {
    /// The accumulator, zeroed to the shape of `buffer` if nothing was added yet.
    #[inline]
    pub fn borrow<B: CapturedBuffer<Shadow = S> + ?Sized>(&self, buffer: &B) -> RefMut<'_, S> {
        RefMut::map(self.0.borrow_mut(), |s| {
            s.get_or_insert_with(|| buffer.zero_shadow())
        })
    }

    /// Adds what was accumulated into `adjoint` (elementwise) and empties the accumulator.
    #[inline]
    pub fn drain_into<A: AddInto<[E]> + ?Sized, E>(&self, adjoint: &mut A)
    where
        S: AsRef<[E]>,
    {
        if let Some(s) = self.0.borrow_mut().take() {
            adjoint.add_into(s.as_ref());
        }
    }
}
