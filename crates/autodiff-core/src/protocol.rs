//! The calling protocol between differentiated code and the functions it calls.
//!
//! Every differentiable function `foo` has a same-named braced struct `foo {}` whose
//! associated functions `__ad_fwd` and `__ad_rev` are its derivative companions with every
//! differentiable parameter active. A caller passes, for each argument, either its real
//! tangent (forward) or adjoint sink (reverse), or the markers [`Zero`] and [`Discard`]
//! when its argument is constant. The traits below turn those into what the callee's body
//! needs, so the caller never has to know the callee's parameter types.

use crate::Real;
use crate::buffers::{AddInto, ZeroLike};
use core::mem::MaybeUninit;

/// Tangent marker passed for an argument that is constant at the call site.
#[derive(Clone, Copy, Debug, Default)]
pub struct Zero;

/// Adjoint sink passed for an argument that is constant at the call site: whatever the
/// callee computes for it is dropped.
#[derive(Debug, Default)]
pub struct Discard;

/// A forward tangent argument for a scalar parameter (or the cotangent of a result).
pub trait ScalarTangent<T> {
    /// The tangent value.
    fn tangent(self) -> T;
}

impl<T: Real> ScalarTangent<T> for T {
    #[inline(always)]
    fn tangent(self) -> T {
        self
    }
}

/// An array of floats, or of arrays of them (a matrix member copied whole).
impl<T: ScalarTangent<T>, const N: usize> ScalarTangent<[T; N]> for [T; N] {
    #[inline(always)]
    fn tangent(self) -> [T; N] {
        self
    }
}

impl<T, const N: usize> ScalarTangent<[T; N]> for Zero
where
    Zero: ScalarTangent<T>,
{
    #[inline(always)]
    fn tangent(self) -> [T; N] {
        core::array::from_fn(|_| Zero.tangent())
    }
}

/// The cotangent of a vector result (`-> Vec<f64>`): the caller's adjoint of it.
impl<T: Real> ScalarTangent<Vec<T>> for Vec<T> {
    #[inline(always)]
    fn tangent(self) -> Vec<T> {
        self
    }
}

/// A zero cotangent of a vector result: empty, so that adding it adds nothing.
impl<T: Real> ScalarTangent<Vec<T>> for Zero {
    #[inline(always)]
    fn tangent(self) -> Vec<T> {
        Vec::new()
    }
}

impl<T: Real> ScalarTangent<T> for Zero {
    #[inline(always)]
    fn tangent(self) -> T {
        T::zero()
    }
}

/// The cotangent of a struct result (`-> V2`, `-> Self`): the caller's adjoint of the
/// struct (by value from a caller, by reference in a named reverse companion), or
/// [`Zero`] where it has none. It is added into the adjoint of the struct the function
/// returns, member by member, which needs the struct's own [`AddInto`]: the one that
/// `#[differentiable]` on its declaration writes.
#[diagnostic::on_unimplemented(
    message = "a struct returned from differentiated code needs `#[differentiable]` on its declaration",
    label = "its adjoint is added here",
    note = "a struct that a differentiated function returns by value gets its zero and its sum from `#[differentiable]` on the struct's declaration"
)]
pub trait StructSeed<S> {
    /// `adjoint += self`.
    fn add_to(self, adjoint: &mut S);
}

impl<S: AddInto> StructSeed<S> for S {
    #[inline(always)]
    fn add_to(self, adjoint: &mut S) {
        adjoint.add_into(&self);
    }
}

impl<S: AddInto> StructSeed<S> for &S {
    #[inline(always)]
    fn add_to(self, adjoint: &mut S) {
        adjoint.add_into(self);
    }
}

impl<S> StructSeed<S> for Zero {
    #[inline(always)]
    fn add_to(self, _: &mut S) {}
}

/// A cotangent a pullback that keeps its forward state holds until it runs: `None` for
/// a zero one.
impl<S: AddInto> StructSeed<S> for Option<S> {
    #[inline(always)]
    fn add_to(self, adjoint: &mut S) {
        if let Some(g) = self {
            adjoint.add_into(&g);
        }
    }
}

/// What a caller passes for the cotangent of a struct result: its adjoint of the
/// struct, or [`Zero`].
#[diagnostic::on_unimplemented(
    message = "a struct returned from differentiated code needs `#[differentiable]` on its declaration",
    label = "its adjoint is added here",
    note = "a struct that a differentiated function returns by value gets its zero and its sum from `#[differentiable]` on the struct's declaration"
)]
pub trait StructCotangent<S>: StructSeed<S> {
    /// The cotangent as a value, `None` when it is zero.
    fn into_option(self) -> Option<S>;
}

impl<S: AddInto> StructCotangent<S> for S {
    #[inline(always)]
    fn into_option(self) -> Option<S> {
        Some(self)
    }
}

impl<S> StructCotangent<S> for Zero {
    #[inline(always)]
    fn into_option(self) -> Option<S> {
        None
    }
}

/// The tangent or adjoint sink a caller passes for a parameter that carries no
/// derivative (an integer, a `bool`, a tuple or an array taken by value): [`Zero`],
/// [`Discard`] or `()`. A value with a derivative passed there (an active tuple or array
/// by value) is a compile error, not a derivative silently dropped.
#[diagnostic::on_unimplemented(
    message = "a value that carries a derivative is passed to a parameter that has none",
    label = "its derivative would be lost here",
    note = "floats, references to float buffers (`&[f64]`, `&mut [f64; 3]`) and references to structs carry derivatives into a differentiated function; pass a struct, a tuple or an array by reference (`&P`, `&[f64; 3]`), or its elements one by one",
    note = "a value of a type that holds no float, read from a slice of them (`acts[i]` of `acts: &[Act]`), is taken for one that may: pass `no_grad(acts[i])`"
)]
pub trait NoDerivative {}

impl NoDerivative for Zero {}
impl NoDerivative for Discard {}
impl NoDerivative for () {}

// An integer or a `bool` carries no derivative, so none is lost where the shadow of a
// struct's integer member (which holds a copy of the count), or an adjoint of one, is
// passed for one. The "tangent" of an integer result (`fn locate(t: f64, grid: &[f64])
// -> usize`) is the integer's zero: a caller's derivative code computes with it as with
// any result's, and a conversion drops it (`conversions.rs`).
macro_rules! no_derivative {
    ($($t:ty),*) => {$(
        impl NoDerivative for $t {}
        impl NoDerivative for &mut $t {}
        impl ScalarTangent<$t> for $t {
            #[inline(always)]
            fn tangent(self) -> $t {
                self
            }
        }
        impl ScalarTangent<$t> for Zero {
            #[inline(always)]
            fn tangent(self) -> $t {
                <$t>::default()
            }
        }
    )*};
}
no_derivative!(
    bool, usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128
);

/// A forward tangent argument for a parameter that is a shared reference to floats
/// (`&[F]`, `&Vec<F>`, `&[F; N]`): a slice of the same length, or [`Zero`].
pub trait SliceTangent<T> {
    /// The tangent, or `None` for a zero tangent.
    fn as_tangent(&self) -> Option<&[T]>;
}

impl<T: Real> SliceTangent<T> for &[T] {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        Some(self)
    }
}
impl<T: Real> SliceTangent<T> for &mut [T] {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        Some(self)
    }
}
impl<T: Real> SliceTangent<T> for &Vec<T> {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        Some(self)
    }
}
impl<T: Real> SliceTangent<T> for &mut Vec<T> {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        Some(self)
    }
}
impl<T: Real, const N: usize> SliceTangent<T> for &[T; N] {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        Some(&self[..])
    }
}
impl<T: Real, const N: usize> SliceTangent<T> for &mut [T; N] {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        Some(&self[..])
    }
}
/// The tangent of a vector a call returned, or `None` where it is zero.
impl<T: Real> SliceTangent<T> for Option<&[T]> {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        *self
    }
}

/// The tangent `t` of a vector as a slice tangent: empty is zero (see
/// `ScalarTangent<Vec<T>> for Zero`).
#[inline(always)]
pub fn vec_tangent<T: Real>(t: &[T]) -> Option<&[T]> {
    (!t.is_empty()).then_some(t)
}

impl<T> SliceTangent<T> for Zero {
    #[inline(always)]
    fn as_tangent(&self) -> Option<&[T]> {
        None
    }
}

/// The tangent slice of `len` elements for `t`; zeros in `scratch` when `t` is [`Zero`].
#[inline(always)]
pub fn slice_tangent<'a, T: Real, A: SliceTangent<T>>(
    t: &'a A,
    scratch: &'a mut Scratch<T>,
    len: usize,
) -> &'a [T] {
    match t.as_tangent() {
        Some(s) => s,
        None => scratch.zeros(len),
    }
}

/// A mutable float buffer handed to a callee: the tangent of a `&mut` parameter in forward
/// mode, or the adjoint sink of a reference parameter in reverse mode; [`Zero`] or
/// [`Discard`] when the caller's argument is constant.
pub trait SliceShadow<T> {
    /// The shadow, or `None` when the caller has none.
    fn as_shadow(&mut self) -> Option<&mut [T]>;
    /// False when the caller has no shadow (known at compile time).
    #[inline(always)]
    fn is_active(&self) -> bool {
        true
    }
}

impl<T: Real> SliceShadow<T> for &mut [T] {
    #[inline(always)]
    fn as_shadow(&mut self) -> Option<&mut [T]> {
        Some(self)
    }
}
impl<T: Real> SliceShadow<T> for &mut Vec<T> {
    #[inline(always)]
    fn as_shadow(&mut self) -> Option<&mut [T]> {
        Some(self)
    }
}
impl<T: Real, const N: usize> SliceShadow<T> for &mut [T; N] {
    #[inline(always)]
    fn as_shadow(&mut self) -> Option<&mut [T]> {
        Some(&mut self[..])
    }
}
impl<T> SliceShadow<T> for Zero {
    #[inline(always)]
    fn as_shadow(&mut self) -> Option<&mut [T]> {
        None
    }
    #[inline(always)]
    fn is_active(&self) -> bool {
        false
    }
}
impl<T> SliceShadow<T> for Discard {
    #[inline(always)]
    fn as_shadow(&mut self) -> Option<&mut [T]> {
        None
    }
    #[inline(always)]
    fn is_active(&self) -> bool {
        false
    }
}

/// The shadow slice of `len` elements for `s`; a zeroed scratch buffer (whose contents are
/// dropped) when the caller has none.
#[inline(always)]
pub fn slice_shadow<'a, T: Real, A: SliceShadow<T>>(
    s: &'a mut A,
    scratch: &'a mut Scratch<T>,
    len: usize,
) -> &'a mut [T] {
    match s.as_shadow() {
        Some(s) => s,
        None => scratch.zeros(len),
    }
}

/// Zeros standing in for a shadow or tangent the caller does not have. Up to
/// [`Scratch::INLINE`] of them live in the scratch itself: a callee called once per
/// element of a loop with a constant argument (`subtract(x_i, mu_k, ..)` with `x`
/// constant) then allocates nothing per call.
pub struct Scratch<T> {
    inline: [MaybeUninit<T>; Scratch::<f64>::INLINE],
    heap: Vec<T>,
}

impl<T> Scratch<T> {
    /// How many values live inline.
    pub const INLINE: usize = 16;

    /// An empty scratch.
    #[inline(always)]
    pub fn new() -> Self {
        Scratch {
            inline: [const { MaybeUninit::uninit() }; Scratch::<f64>::INLINE],
            heap: Vec::new(),
        }
    }
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Real> Scratch<T> {
    /// `len` zeros.
    #[inline(always)]
    pub fn zeros(&mut self, len: usize) -> &mut [T] {
        if len <= self.inline.len() {
            let part = &mut self.inline[..len];
            for v in part.iter_mut() {
                v.write(T::zero());
            }
            // SAFETY: the first `len` values were just written, and `MaybeUninit<T>` has
            // the layout of `T`.
            unsafe { &mut *(part as *mut [MaybeUninit<T>] as *mut [T]) }
        } else {
            self.heap.clear();
            self.heap.resize(len, T::zero());
            &mut self.heap
        }
    }
}

/// Where a reverse-mode callee adds the adjoint of one of its scalar parameters.
pub trait ScalarSink<T> {
    /// Adds `v` into the caller's adjoint.
    fn add(self, v: T);
    /// False when the caller has no adjoint (known at compile time).
    #[inline(always)]
    fn is_active(&self) -> bool {
        true
    }
}

impl<T: Real> ScalarSink<T> for &mut T {
    #[inline(always)]
    fn add(self, v: T) {
        *self += v;
    }
}

/// The tangent of a constant adjoint sink, in the forward transform of a pullback.
impl<T> ScalarSink<T> for Zero {
    #[inline(always)]
    fn add(self, _v: T) {}
    #[inline(always)]
    fn is_active(&self) -> bool {
        false
    }
}

impl<T> ScalarSink<T> for Discard {
    #[inline(always)]
    fn add(self, _v: T) {}
    #[inline(always)]
    fn is_active(&self) -> bool {
        false
    }
}

/// The forward tangent of a parameter that is a shared reference to a user type (`&self`,
/// `m: &Model`): the shadow is a value of the same type. A constant argument whose type
/// has a zero (a matrix `&[Vec<f64>]`, a `&f64`, a struct marked `#[differentiable]`)
/// gets a zero made in `scratch`; a constant user struct has none otherwise, which is the
/// error below.
#[diagnostic::on_unimplemented(
    message = "a constant `{S}` is passed where the callee differentiates it",
    label = "this argument has no shadow here",
    note = "give the caller's value an activity (`Dual` or `Duplicated`) so that it has a shadow, mark the declaration of `{S}` with `#[differentiable]` so that a constant one has a zero, or wrap the call in `no_grad(..)`"
)]
pub trait StructShadow<S: ?Sized> {
    /// Storage for a shadow made by the callee.
    type Scratch: Default;
    /// The shadow of `primal`.
    fn shadow<'a>(&'a self, primal: &S, scratch: &'a mut Self::Scratch) -> &'a S;
    /// Whether the caller has no tangent here (its shadow would be a zero made for the
    /// call), so that a callee may skip the terms it would multiply.
    #[inline(always)]
    fn is_constant(&self) -> bool {
        false
    }
}

impl<S: ?Sized> StructShadow<S> for &S {
    type Scratch = ();
    #[inline(always)]
    fn shadow<'a>(&'a self, _primal: &S, _scratch: &'a mut ()) -> &'a S {
        self
    }
}

impl<S: ?Sized> StructShadow<S> for &mut S {
    type Scratch = ();
    #[inline(always)]
    fn shadow<'a>(&'a self, _primal: &S, _scratch: &'a mut ()) -> &'a S {
        self
    }
}

/// Mutable access to the shadow of a parameter that is a `&mut` reference to a user type,
/// or to the adjoint sink of any reference to a user type. A constant argument whose type
/// has a zero gets a scratch zero (whatever the callee adds to it is dropped).
#[diagnostic::on_unimplemented(
    message = "a constant `{S}` is passed where the callee differentiates it",
    label = "this argument has no shadow here",
    note = "give the caller's value an activity (`Dual` or `Duplicated`) so that it has a shadow, mark the declaration of `{S}` with `#[differentiable]` so that a constant one has a zero, or wrap the call in `no_grad(..)`"
)]
pub trait StructShadowMut<S: ?Sized> {
    /// Storage for a shadow made by the callee.
    type Scratch: Default;
    /// The shadow of `primal`.
    fn shadow_mut<'a>(&'a mut self, primal: &S, scratch: &'a mut Self::Scratch) -> &'a mut S;
    /// Whether the caller has no shadow here (its shadow would be a zero made for the
    /// call, and what is added to it dropped), so that a callee may skip computing it.
    #[inline(always)]
    fn is_constant(&self) -> bool {
        false
    }
}

impl<S: ?Sized> StructShadowMut<S> for &mut S {
    type Scratch = ();
    #[inline(always)]
    fn shadow_mut<'a>(&'a mut self, _primal: &S, _scratch: &'a mut ()) -> &'a mut S {
        self
    }
}

// The shadow of a `Vec` or an array of structs, given where the callee takes a slice of
// them (`spread(ps)` with `ps: &Vec<Pt>` and `fn spread(ps: &[Pt])`).
macro_rules! slice_of_shadows {
    ($(impl[$($g:tt)*] $c:ty;)*) => {$(
        impl<$($g)*> StructShadow<[T]> for &$c {
            type Scratch = ();
            #[inline(always)]
            fn shadow<'a>(&'a self, _primal: &[T], _scratch: &'a mut ()) -> &'a [T] {
                &self[..]
            }
        }

        impl<$($g)*> StructShadow<[T]> for &mut $c {
            type Scratch = ();
            #[inline(always)]
            fn shadow<'a>(&'a self, _primal: &[T], _scratch: &'a mut ()) -> &'a [T] {
                &self[..]
            }
        }

        impl<$($g)*> StructShadowMut<[T]> for &mut $c {
            type Scratch = ();
            #[inline(always)]
            fn shadow_mut<'a>(&'a mut self, _primal: &[T], _scratch: &'a mut ()) -> &'a mut [T] {
                &mut self[..]
            }
        }
    )*};
}
slice_of_shadows! {
    impl[T] Vec<T>;
    impl[T, const N: usize] [T; N];
}

// A constant float, or a constant buffer of floats or of rows (a matrix `&[Vec<f64>]`):
// a zero shadow of the same shape. A user struct gets these impls from `#[differentiable]`
// on its declaration; without it, no impl, the error above.
macro_rules! zero_shadow {
    ($(impl[$($g:tt)*] $s:ty => $scratch:ty;)*) => {$(
        impl<$($g)*> StructShadow<$s> for Zero {
            type Scratch = Option<$scratch>;
            #[inline]
            fn shadow<'a>(&'a self, primal: &$s, scratch: &'a mut Self::Scratch) -> &'a $s {
                scratch.insert(primal.zero_like())
            }
            #[inline(always)]
            fn is_constant(&self) -> bool {
                true
            }
        }
        impl<$($g)*> StructShadowMut<$s> for Zero {
            type Scratch = Option<$scratch>;
            #[inline]
            fn shadow_mut<'a>(&'a mut self, primal: &$s, scratch: &'a mut Self::Scratch) -> &'a mut $s {
                scratch.insert(primal.zero_like())
            }
            #[inline(always)]
            fn is_constant(&self) -> bool {
                true
            }
        }
        impl<$($g)*> StructShadowMut<$s> for Discard {
            type Scratch = Option<$scratch>;
            #[inline]
            fn shadow_mut<'a>(&'a mut self, primal: &$s, scratch: &'a mut Self::Scratch) -> &'a mut $s {
                scratch.insert(primal.zero_like())
            }
            #[inline(always)]
            fn is_constant(&self) -> bool {
                true
            }
        }
    )*};
}
zero_shadow! {
    impl[] f64 => f64;
    impl[] f32 => f32;
    impl[T: ZeroLike<Out = T>] [T] => Vec<T>;
    impl[T: ZeroLike<Out = T>] Vec<T> => Vec<T>;
    impl[T: ZeroLike<Out = T>, const N: usize] [T; N] => [T; N];
}
#[cfg(feature = "ndarray")]
zero_shadow! {
    impl[A: ZeroLike<Out = A> + Clone, D: ndarray::Dimension] ndarray::Array<A, D> => ndarray::Array<A, D>;
}

// Tuples of tangents, nested too: the result of a function that returns a tuple, paired
// with its tangent by a forward companion.
macro_rules! tuple_tangent {
    ($(($($t:ident),*)),*) => {$(
        impl<$($t: ScalarTangent<$t>),*> ScalarTangent<($($t,)*)> for ($($t,)*) {
            #[inline(always)]
            fn tangent(self) -> ($($t,)*) { self }
        }
        impl<$($t),*> ScalarTangent<($($t,)*)> for Zero
        where
            $(Zero: ScalarTangent<$t>),*
        {
            #[inline(always)]
            fn tangent(self) -> ($($t,)*) { ($(<Zero as ScalarTangent<$t>>::tangent(Zero),)*) }
        }
    )*};
}
tuple_tangent!(
    (A, B),
    (A, B, C),
    (A, B, C, D),
    (A, B, C, D, E),
    (A, B, C, D, E, F),
    (A, B, C, D, E, F, G),
    (A, B, C, D, E, F, G, H),
    (A, B, C, D, E, F, G, H, I),
    (A, B, C, D, E, F, G, H, I, J),
    (A, B, C, D, E, F, G, H, I, J, K),
    (A, B, C, D, E, F, G, H, I, J, K, L)
);

/// What the forward rule of a function that returns `()` returns: `()`, as the forward
/// companion of such a function does (`#[autodiff_forward]` gives it no result), or the
/// pair `((), ())` of a value and its tangent.
#[diagnostic::on_unimplemented(
    message = "a forward rule of a function that returns `()` must return `()`, not `{Self}`",
    label = "the forward rule's result",
    note = "the forward rule has the signature `#[autodiff_forward]` gives the function: no result when the function has none"
)]
pub trait UnitForward {}

impl UnitForward for () {}

impl UnitForward for ((), ()) {}

/// The value and tangent, `((), ())`, of a call of the forward rule `r` of a function that
/// returns `()`.
#[inline(always)]
pub fn unit_forward<R: UnitForward>(r: R) -> ((), ()) {
    let _ = r;
    ((), ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_hands_out_zeros_of_any_length() {
        let mut s = Scratch::<f64>::new();
        for n in [
            0,
            3,
            Scratch::<f64>::INLINE,
            Scratch::<f64>::INLINE + 1,
            50,
            2,
        ] {
            let mut sink = Discard;
            let z = slice_shadow(&mut sink, &mut s, n);
            assert_eq!(z.len(), n);
            assert!(z.iter().all(|v| *v == 0.0));
            // Written by a callee, then handed out again: zeros again.
            z.fill(4.0);
            let z = slice_tangent(&Zero, &mut s, n);
            assert!(z.len() == n && z.iter().all(|v| *v == 0.0));
        }
    }
}
