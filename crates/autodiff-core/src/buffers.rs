//! Shadows of local values: zero tangents and adjoints shaped like a primal value, and
//! elementwise accumulation between shadows.

use crate::Real;
use core::mem::{MaybeUninit, needs_drop};

/// A value with a zero shadow of the same shape: `0.0` for a float, a vector of zeros for
/// a `Vec`, and so on. Integers and `bool`s have themselves as (ignored) shadows.
#[diagnostic::on_unimplemented(
    message = "differentiated code needs a zero shadow of a `{Self}` here, and it has none",
    label = "a zero `{Self}` is needed here",
    note = "floats, buffers of floats and integers have zeros; a user struct has one when its declaration is marked `#[differentiable]`. Derivative code needs one for a struct that a differentiated function returns by value, for a `Const` struct behind `&mut` that the function lends to a callee or stores values with derivatives in (its scratch shadow; mark the struct's declaration), and where one struct, or two parts of one struct (`s.ps[i]` and `s.ps[j]`), is passed twice to one call: pass the parts as separate parameters, or copy the values out first"
)]
pub trait ZeroLike {
    /// The shadow type.
    type Out;
    /// A zero shadow shaped like `self`.
    fn zero_like(&self) -> Self::Out;
    /// The starting value of an adjoint that only receives `+=` (see
    /// [`accumulator_zero`]): negative zero in its floats.
    #[inline(always)]
    fn accumulator_zero(&self) -> Self::Out {
        self.zero_like()
    }
}

impl<T: Real> ZeroLike for T {
    type Out = T;
    #[inline(always)]
    fn zero_like(&self) -> T {
        T::zero()
    }
    #[inline(always)]
    fn accumulator_zero(&self) -> T {
        -T::zero()
    }
}

macro_rules! inert_zero_like {
    ($($t:ty),*) => {$(
        impl ZeroLike for $t {
            type Out = $t;
            #[inline(always)]
            fn zero_like(&self) -> $t { <$t>::default() }
        }
    )*};
}
inert_zero_like!(usize, isize, u8, u16, u32, u64, i8, i16, i32, i64, bool, ());

impl<T: ZeroLike> ZeroLike for Vec<T> {
    type Out = Vec<T::Out>;
    fn zero_like(&self) -> Self::Out {
        self.iter().map(ZeroLike::zero_like).collect()
    }
}

impl<T: ZeroLike> ZeroLike for [T] {
    type Out = Vec<T::Out>;
    fn zero_like(&self) -> Self::Out {
        self.iter().map(ZeroLike::zero_like).collect()
    }
}

impl<T: ZeroLike, const N: usize> ZeroLike for [T; N] {
    type Out = [T::Out; N];
    #[inline(always)]
    fn zero_like(&self) -> Self::Out {
        core::array::from_fn(|i| self[i].zero_like())
    }
}

macro_rules! tuple_zero_like {
    ($(($($n:tt $t:ident),*)),*) => {$(
        impl<$($t: ZeroLike),*> ZeroLike for ($($t,)*) {
            type Out = ($($t::Out,)*);
            #[inline(always)]
            fn zero_like(&self) -> Self::Out { ($(self.$n.zero_like(),)*) }
            #[inline(always)]
            fn accumulator_zero(&self) -> Self::Out { ($(self.$n.accumulator_zero(),)*) }
        }
    )*};
}
// Tuples of up to twelve values, as the standard library's traits go.
tuple_zero_like!(
    (0 A, 1 B),
    (0 A, 1 B, 2 C),
    (0 A, 1 B, 2 C, 3 D),
    (0 A, 1 B, 2 C, 3 D, 4 E),
    (0 A, 1 B, 2 C, 3 D, 4 E, 5 F),
    (0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G),
    (0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H),
    (0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I),
    (0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J),
    (0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K),
    (0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L)
);

/// A member of a struct marked `#[differentiable]`, while the struct's zero is built:
/// `(&Member(&s.m)).zero_member()` is a copy of the member when its type carries no
/// derivatives ([`CopyMember`] of an [`Inert`] type: a count, a name, a list of indices;
/// such a member of a shadow is not read for derivatives, and a copy keeps it consistent
/// with the primal) and its zero otherwise ([`ZeroMember`]: floats, buffers of floats,
/// marked structs).
pub struct Member<'a, T>(pub &'a T);

/// The zero of a member that carries derivatives. Method resolution tries it after
/// [`CopyMember`], whose receiver needs one reference less.
pub trait ZeroMember<T> {
    /// The member's zero.
    fn zero_member(&self) -> T;
}

impl<T: ZeroLike<Out = T> + AddInto> ZeroMember<T> for &Member<'_, T> {
    #[inline(always)]
    fn zero_member(&self) -> T {
        self.0.zero_like()
    }
}

/// A copy of a member that carries no derivatives.
pub trait CopyMember<T> {
    /// The member itself.
    fn zero_member(&self) -> T;
}

/// A type whose values carry no derivatives, copied as they are into a zero shadow:
/// integers, `bool`, `char`, strings. A user struct or enum is not one of them, even one
/// without floats: it is marked `#[differentiable]` and gets a zero, so that a float
/// member cannot be copied into a shadow by mistake.
pub trait Inert: Clone {}

macro_rules! inert {
    ($($t:ty),*) => {$(impl Inert for $t {})*};
}
inert!(
    usize,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    i8,
    i16,
    i32,
    i64,
    i128,
    bool,
    char,
    (),
    String
);
impl Inert for &str {}
// Containers of such values (a model's index lists, `Vec<usize>`).
impl<T: Inert> Inert for Vec<T> {}
impl<T: Inert, const N: usize> Inert for [T; N] {}
impl<T: Inert> Inert for Option<T> {}
impl<T: Inert> Inert for Box<T> {}

impl<T: Inert> CopyMember<T> for Member<'_, T> {
    #[inline(always)]
    fn zero_member(&self) -> T {
        self.0.clone()
    }
}

/// A member of a shadow of a struct marked `#[differentiable]`, while another shadow is
/// added into it: `MemberSum(&mut a.m, &b.m).add_member()` adds the member when it
/// carries derivatives ([`AddMember`]) and leaves it otherwise ([`SkipMember`]).
pub struct MemberSum<'a, T>(pub &'a mut T, pub &'a T);

/// Adds a member that carries derivatives. Method resolution tries it before
/// [`SkipMember`], whose receiver is a reference.
pub trait AddMember {
    /// `target += rhs`.
    fn add_member(self);
}

impl<T: AddInto> AddMember for MemberSum<'_, T> {
    #[inline(always)]
    fn add_member(self) {
        self.0.add_into(self.1);
    }
}

/// Leaves a member that carries no derivatives.
pub trait SkipMember {
    /// Nothing.
    fn add_member(self);
}

impl<T> SkipMember for &MemberSum<'_, T> {
    #[inline(always)]
    fn add_member(self) {}
}

/// A zero shadow shaped like `v`.
#[inline(always)]
pub fn zero_like<V: ZeroLike + ?Sized>(v: &V) -> V::Out {
    v.zero_like()
}

/// The starting value of an accumulator that only receives `+=`: negative zero.
///
/// `-0.0 + x` is `x` for every `x` (`+0.0 + -0.0` is `+0.0`), so the optimiser can drop
/// the first addition into it, which it cannot do from `+0.0`. The sum of any
/// contributions is the same as from `+0.0`, except that an accumulator that receives
/// nothing, or only `-0.0`, stays `-0.0`; generated code uses it only for intermediate
/// adjoints, which reach the caller by being added into one that starts at `+0.0`.
#[inline(always)]
pub fn accumulator_zero<V: ZeroLike + ?Sized>(v: &V) -> V::Out {
    v.accumulator_zero()
}

/// Shadows that can be added elementwise into another of the same shape.
pub trait AddInto<Rhs: ?Sized = Self> {
    /// `self += rhs`, elementwise.
    fn add_into(&mut self, rhs: &Rhs);
}

impl<T: Real> AddInto for T {
    #[inline(always)]
    fn add_into(&mut self, rhs: &T) {
        *self += *rhs;
    }
}

impl<A: AddInto<B>, B> AddInto<[B]> for [A] {
    #[inline]
    fn add_into(&mut self, rhs: &[B]) {
        for (a, b) in self.iter_mut().zip(rhs) {
            a.add_into(b);
        }
    }
}

impl<A: AddInto<B>, B> AddInto<Vec<B>> for Vec<A> {
    #[inline]
    fn add_into(&mut self, rhs: &Vec<B>) {
        self.as_mut_slice().add_into(rhs.as_slice());
    }
}

impl<A: AddInto<B>, B, const N: usize> AddInto<[B; N]> for [A; N] {
    #[inline]
    fn add_into(&mut self, rhs: &[B; N]) {
        self.as_mut_slice().add_into(rhs.as_slice());
    }
}

/// The unit value (the result of a call that returns nothing) has nothing to add.
impl AddInto for () {
    #[inline(always)]
    fn add_into(&mut self, _rhs: &()) {}
}

/// Integers and `bool`s carry no derivatives: adding the "adjoint" of one (a shadow of a
/// list of indices that a function overwrites, `s.ids.clear()`) leaves it as it is.
macro_rules! inert_add_into {
    ($($t:ty),*) => {$(
        impl AddInto for $t {
            #[inline(always)]
            fn add_into(&mut self, _rhs: &$t) {}
        }
    )*};
}
inert_add_into!(
    usize, isize, u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, bool
);

macro_rules! tuple_add_into {
    ($(($($n:tt $a:ident $b:ident),*)),*) => {$(
        impl<$($a: AddInto<$b>, $b),*> AddInto<($($b,)*)> for ($($a,)*) {
            #[inline(always)]
            fn add_into(&mut self, rhs: &($($b,)*)) { $(self.$n.add_into(&rhs.$n);)* }
        }
    )*};
}
tuple_add_into!(
    (0 A0 B0, 1 A1 B1),
    (0 A0 B0, 1 A1 B1, 2 A2 B2),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4, 5 A5 B5),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4, 5 A5 B5, 6 A6 B6),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4, 5 A5 B5, 6 A6 B6, 7 A7 B7),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4, 5 A5 B5, 6 A6 B6, 7 A7 B7, 8 A8 B8),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4, 5 A5 B5, 6 A6 B6, 7 A7 B7, 8 A8 B8, 9 A9 B9),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4, 5 A5 B5, 6 A6 B6, 7 A7 B7, 8 A8 B8, 9 A9 B9, 10 A10 B10),
    (0 A0 B0, 1 A1 B1, 2 A2 B2, 3 A3 B3, 4 A4 B4, 5 A5 B5, 6 A6 B6, 7 A7 B7, 8 A8 B8, 9 A9 B9, 10 A10 B10, 11 A11 B11)
);

/// An adjoint that [`add_to()`] adds into: one that sums ([`AddInto`]), the adjoint of an
/// integer (an integer a call returned, `let (root, steps) = solve(a);`) among them, which
/// carries nothing, so adding into it does nothing.
pub trait Accumulate {
    /// `*self += g`.
    fn accumulate(&mut self, g: &Self);
}

impl<T: AddInto> Accumulate for T {
    #[inline(always)]
    fn accumulate(&mut self, g: &T) {
        self.add_into(g);
    }
}

/// `*acc += g` for an adjoint that may be a tuple or an array (the result of a call that
/// returns one, such as a forward companion's `(value, tangent)`), which has no `+=`.
#[inline(always)]
pub fn add_to<T: Accumulate>(acc: &mut T, g: T) {
    acc.accumulate(&g);
}

/// The forward protocol of [`add_to()`], which a reverse sweep differentiated again calls:
/// the tangents add up as the values do.
pub mod add_to {
    use super::Accumulate;
    use crate::protocol::{ScalarTangent, Zero};

    /// Where the tangent of `g` goes: the tangent of the adjoint, or nowhere when the
    /// adjoint is constant (then so is `g`).
    pub trait TangentOfSum<T> {
        /// Adds `t_g`.
        fn add(self, t_g: T);
    }

    impl<T: Accumulate> TangentOfSum<T> for &mut T {
        #[inline(always)]
        fn add(self, t_g: T) {
            self.accumulate(&t_g);
        }
    }

    impl<T> TangentOfSum<T> for Zero {
        #[inline(always)]
        fn add(self, _t_g: T) {}
    }

    /// `add_to(acc, g)` and `add_to(t_acc, t_g)`.
    #[inline(always)]
    pub fn __ad_fwd<T: Accumulate>(
        acc: &mut T,
        t_acc: impl TangentOfSum<T>,
        g: T,
        t_g: impl ScalarTangent<T>,
        _mark: impl Copy,
    ) -> ((), ()) {
        acc.accumulate(&g);
        t_acc.add(t_g.tangent());
        ((), ())
    }
}

/// `dst += src` elementwise, for shadows of any supported shape.
#[inline(always)]
pub fn add_into<A: AddInto<B> + ?Sized, B: ?Sized>(dst: &mut A, src: &B) {
    dst.add_into(src);
}

/// The forward protocol of [`add_into()`] (of a function's code differentiated again,
/// where a struct's adjoint is added into another's whole): the tangents are added as the
/// values are.
pub mod add_into {
    use super::AddInto;
    use crate::protocol::Zero;

    /// The tangent of the destination: a shadow written through, or [`Zero`] where the
    /// destination carries no derivative.
    pub trait DestinationTangent<'a, A: ?Sized> {
        /// The shadow, if any.
        fn shadow(self) -> Option<&'a mut A>;
    }

    impl<'a, A: ?Sized> DestinationTangent<'a, A> for &'a mut A {
        #[inline(always)]
        fn shadow(self) -> Option<&'a mut A> {
            Some(self)
        }
    }

    impl<'a, A: ?Sized> DestinationTangent<'a, A> for Zero {
        #[inline(always)]
        fn shadow(self) -> Option<&'a mut A> {
            None
        }
    }

    /// The tangent of the source: a shadow, or [`Zero`].
    pub trait SourceTangent<'a, B: ?Sized> {
        /// The shadow, if any.
        fn shadow(self) -> Option<&'a B>;
    }

    impl<'a, B: ?Sized> SourceTangent<'a, B> for &'a B {
        #[inline(always)]
        fn shadow(self) -> Option<&'a B> {
            Some(self)
        }
    }

    impl<'a, B: ?Sized> SourceTangent<'a, B> for Zero {
        #[inline(always)]
        fn shadow(self) -> Option<&'a B> {
            None
        }
    }

    /// `add_into(dst, src)` and `add_into(t_dst, t_src)`.
    #[inline(always)]
    pub fn __ad_fwd<'a, A: AddInto<B> + ?Sized + 'a, B: ?Sized + 'a>(
        dst: &mut A,
        t_dst: impl DestinationTangent<'a, A>,
        src: &B,
        t_src: impl SourceTangent<'a, B>,
        _mark: impl Copy,
    ) -> ((), ()) {
        dst.add_into(src);
        if let (Some(td), Some(ts)) = (t_dst.shadow(), t_src.shadow()) {
            td.add_into(ts);
        }
        ((), ())
    }
}

/// A buffer whose length can be made that of another: a `Vec` resizes; an array or a
/// slice must already have it.
pub trait ResizeLike<T> {
    /// Gives `self` the length of `like` (new elements are copies of `like`'s).
    fn resize_like(&mut self, like: &[T]);
}

impl<T: Clone> ResizeLike<T> for Vec<T> {
    #[inline]
    fn resize_like(&mut self, like: &[T]) {
        self.truncate(like.len());
        let n = self.len();
        self.extend_from_slice(&like[n..]);
    }
}

impl<T> ResizeLike<T> for [T] {
    #[inline]
    fn resize_like(&mut self, like: &[T]) {
        assert_eq!(
            self.len(),
            like.len(),
            "assigning a buffer of another length"
        );
    }
}

impl<T, const N: usize> ResizeLike<T> for [T; N] {
    #[inline]
    fn resize_like(&mut self, like: &[T]) {
        assert_eq!(N, like.len(), "assigning a buffer of another length");
    }
}

/// `v` given the length of `like` (`dst = src;` between whole buffers, whose lengths may
/// differ: the layers of a network).
#[inline]
pub fn resize_like<V: ResizeLike<T> + ?Sized, T>(v: &mut V, like: &[T]) {
    v.resize_like(like);
}

/// `v` put back to `saved`, length included.
#[inline]
pub fn restore_resized<
    V: ResizeLike<T> + core::ops::IndexMut<core::ops::RangeFull, Output = [T]> + ?Sized,
    T: Copy,
>(
    v: &mut V,
    saved: &[T],
) {
    v.resize_like(saved);
    v[..].copy_from_slice(saved);
}

/// The sum of a float slice: the adjoint of a value broadcast into every element.
#[inline]
pub fn sum<T: Real>(v: &[T]) -> T {
    v.iter().fold(-T::zero(), |a, &b| a + b)
}

/// The size of `windows(n)`, which panics on zero as `windows` does.
#[inline(always)]
pub fn window_size(n: usize) -> usize {
    assert!(n != 0, "window size must be non-zero");
    n
}

/// A copy of `v` of its own type: `let p = s;` of a local array, or a row of a local
/// matrix copied whole, stays on the stack in derivative code, as in the primal.
#[inline(always)]
pub fn copy_of<T: Clone>(v: &T) -> T {
    v.clone()
}

/// Checks that `m[i] = vec![..]` (or a copy of another row) keeps the length of the row
/// it replaces, which the derivative code writes element by element; the length.
#[inline(always)]
#[track_caller]
pub fn same_row_length(row: usize, written: usize) -> usize {
    assert!(
        row == written,
        "differentiated code assigns {written} values to a row of {row}: rows keep their length"
    );
    written
}

/// Checks that `m = vec![..]` (or `m = q;`) of a local matrix keeps its number of rows,
/// which the derivative code writes row by row; the number.
#[inline(always)]
#[track_caller]
pub fn same_row_count(rows: usize, written: usize) -> usize {
    assert!(
        rows == written,
        "differentiated code assigns {written} rows to a matrix of {rows}: a matrix assigned \
         whole keeps its number of rows (assign its rows one by one, or bind a new matrix)"
    );
    written
}

/// The position of the element that `split_first()` splits off a slice of `len`
/// elements: `0`. Differentiated code reads the parts by indexing, after this check that
/// they exist, which panics with `msg` as the `unwrap` or `expect` it stands for.
#[inline(always)]
#[track_caller]
pub fn first_of(len: usize, msg: &str) -> usize {
    found_at(len > 0, 0, msg)
}

/// The position of the element that `split_last()` splits off a slice of `len`
/// elements: `len - 1` (see [`first_of`]).
#[inline(always)]
#[track_caller]
pub fn last_of(len: usize, msg: &str) -> usize {
    found_at(len > 0, len.wrapping_sub(1), msg)
}

/// `index`, where `x.first()`, `x.last()` or `x.get(i)` found an element (`holds`), read
/// by indexing; otherwise a panic with `msg`, as the `unwrap` or `expect` that took the
/// `Option` apart.
#[inline(always)]
#[track_caller]
pub fn found_at(holds: bool, index: usize, msg: &str) -> usize {
    if !holds {
        nothing_found(msg);
    }
    index
}

#[cold]
#[track_caller]
fn nothing_found(msg: &str) -> ! {
    panic!("{msg}")
}

/// The slice length `min(a, b)`: the trip count of a `zip`.
#[inline(always)]
pub fn min_len(a: usize, b: usize) -> usize {
    a.min(b)
}

/// Whether `item` passes the predicate `p`: a `filter` on an element, in a loop over
/// indices (the closure's parameter type is inferred from `item`, as `filter` infers it).
#[inline(always)]
pub fn holds<T>(p: impl FnOnce(T) -> bool, item: T) -> bool {
    p(item)
}

/// `cmp(a, b)`: a `max_by`/`min_by` comparison of two elements (the closure's parameter
/// types are inferred from theirs, as `max_by` infers them).
#[inline(always)]
pub fn compare<A, B>(
    cmp: impl FnOnce(A, B) -> core::cmp::Ordering,
    a: A,
    b: B,
) -> core::cmp::Ordering {
    cmp(a, b)
}

/// The permutation that sorts `v` stably by `cmp`: `sorted[k] = v[perm[k]]`, as
/// `v.sort_by(cmp)` orders it (`sort_unstable_by` too, up to the order of equal values).
pub fn sort_permutation<T>(
    v: &[T],
    mut cmp: impl FnMut(&T, &T) -> core::cmp::Ordering,
) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..v.len()).collect();
    perm.sort_by(|&a, &b| cmp(&v[a], &v[b]));
    perm
}

/// Sets every element of a slice to zero: a float buffer's, or an integer buffer's shadow.
#[inline]
pub fn fill_zero<T: ZeroLike<Out = T>>(v: &mut [T]) {
    for x in v {
        *x = x.zero_like();
    }
}

/// The zero of a slice's element type, float or integer: what zeroing a shadow writes, as
/// derivative companions write it when they are differentiated again.
#[inline(always)]
pub fn elem_zero<T: Default>(_like: &[T]) -> T {
    T::default()
}

/// An integer as a float of the type of `like`: the factor `n` in the partial of
/// `a.powi(n)`, written so that it fits `f32`, `f64` and generic code alike.
#[inline(always)]
pub fn int_like<T: Real>(n: i32, _like: &T) -> T {
    T::from_i32(n)
}

/// A float constant of the type of `like`: the constants of builtin partials, as
/// derivative companions write them when they are differentiated again.
#[inline(always)]
pub fn lit_like<T: Real>(v: f64, _like: &T) -> T {
    T::lit(v)
}

/// A float constant of a slice's element type: where a sum of its elements starts
/// (`-0.0`), what zeroing it writes (`0.0`).
#[inline(always)]
pub fn elem_lit<T: Real>(v: f64, _like: &[T]) -> T {
    T::lit(v)
}

/// Values whose contents can be saved: what a call through a `&mut` argument may
/// overwrite. [`Restore`] puts them back.
#[diagnostic::on_unimplemented(
    message = "differentiated code saves a copy of a `{Self}` behind `&mut`, and `{Self}` is not `Clone`",
    label = "a copy of a `{Self}` is saved here",
    note = "a struct behind `&mut` is saved where it may change (a `&mut` parameter on entry, a struct before each call of its methods) and put back for the reverse sweep: add `#[derive(Clone)]` to its declaration"
)]
pub trait Snapshot {
    /// The saved contents.
    type Saved;
    /// Saves the contents.
    fn snapshot(&self) -> Self::Saved;
}

impl<T: Clone> Snapshot for [T] {
    type Saved = SavedSlice<T>;
    #[inline]
    fn snapshot(&self) -> SavedSlice<T> {
        SavedSlice::new(self)
    }
}

impl<T: Clone> Snapshot for T {
    type Saved = T;
    #[inline]
    fn snapshot(&self) -> T {
        self.clone()
    }
}

/// Values that saved contents `S` can be put back into: the value itself from its copy,
/// and a slice, a vector or an array from the [`SavedSlice`] of its elements (a local
/// vector passed to a call is saved as a slice, without an allocation when it is short;
/// a call that changed its length has it put back too).
pub trait Restore<S> {
    /// Puts saved contents back.
    fn restore(&mut self, saved: S);
    /// Puts saved contents back, keeping them.
    fn restore_from(&mut self, saved: &S);
}

impl<T: Clone> Restore<T> for T {
    #[inline]
    fn restore(&mut self, saved: T) {
        *self = saved;
    }
    #[inline]
    fn restore_from(&mut self, saved: &T) {
        self.clone_from(saved);
    }
}

impl<T: Clone> Restore<SavedSlice<T>> for [T] {
    #[inline]
    fn restore(&mut self, saved: SavedSlice<T>) {
        self.clone_from_slice(saved.as_slice());
    }
    #[inline]
    fn restore_from(&mut self, saved: &SavedSlice<T>) {
        self.clone_from_slice(saved.as_slice());
    }
}

impl<T: Clone, const N: usize> Restore<SavedSlice<T>> for [T; N] {
    #[inline]
    fn restore(&mut self, saved: SavedSlice<T>) {
        self[..].restore(saved);
    }
    #[inline]
    fn restore_from(&mut self, saved: &SavedSlice<T>) {
        self[..].restore_from(saved);
    }
}

impl<T: Clone> Restore<SavedSlice<T>> for Vec<T> {
    #[inline]
    fn restore(&mut self, saved: SavedSlice<T>) {
        self.restore_from(&saved);
    }
    #[inline]
    fn restore_from(&mut self, saved: &SavedSlice<T>) {
        restore_vec(self, saved.as_slice());
    }
}

/// Puts saved values back into a vector, with their length: a call may have resized it.
#[inline]
pub(crate) fn restore_vec<T: Clone>(v: &mut Vec<T>, saved: &[T]) {
    if v.len() == saved.len() {
        v.clone_from_slice(saved);
    } else {
        v.clear();
        v.extend_from_slice(saved);
    }
}

/// Saves the contents of `v`.
#[inline]
pub fn snapshot<V: Snapshot + ?Sized>(v: &V) -> V::Saved {
    v.snapshot()
}

/// Puts saved contents back into `v`.
#[inline]
pub fn restore<V: Restore<S> + ?Sized, S>(v: &mut V, saved: S) {
    v.restore(saved)
}

/// Puts saved contents back into `v`, keeping them for another restore.
#[inline]
pub fn restore_from<V: Restore<S> + ?Sized, S>(v: &mut V, saved: &S) {
    v.restore_from(saved)
}

/// The saved contents of a slice. Up to [`SavedSlice::INLINE`] values live in the value
/// itself: a call in a loop that overwrites a short buffer (`qtimesx(.., &mut out)` per
/// data point) saves it without an allocation per call.
pub struct SavedSlice<T> {
    len: usize,
    inline: [MaybeUninit<T>; SavedSlice::<f64>::INLINE],
    heap: Vec<T>,
}

impl<T> SavedSlice<T> {
    /// How many values live inline.
    pub const INLINE: usize = 8;
}

impl<T: Clone> SavedSlice<T> {
    /// A copy of `v`.
    #[inline]
    pub fn new(v: &[T]) -> Self {
        let mut s = SavedSlice {
            len: 0,
            inline: [const { MaybeUninit::uninit() }; SavedSlice::<f64>::INLINE],
            heap: Vec::new(),
        };
        if v.len() <= s.inline.len() {
            for (slot, x) in s.inline.iter_mut().zip(v) {
                slot.write(x.clone());
                // Counted one by one, so that a panicking `clone` drops what was written.
                s.len += 1;
            }
        } else {
            s.heap = v.to_vec();
        }
        s
    }

    /// The saved values.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        if self.heap.is_empty() {
            // SAFETY: the first `len` inline values are initialised (`new`), and
            // `MaybeUninit<T>` has the layout of `T`.
            unsafe { &*(&self.inline[..self.len] as *const [MaybeUninit<T>] as *const [T]) }
        } else {
            &self.heap
        }
    }
}

impl<T: Clone> Clone for SavedSlice<T> {
    fn clone(&self) -> Self {
        SavedSlice::new(self.as_slice())
    }
}

impl<T> Drop for SavedSlice<T> {
    fn drop(&mut self) {
        if needs_drop::<T>() {
            for v in &mut self.inline[..self.len] {
                // SAFETY: the first `len` inline values are initialised and dropped once.
                unsafe { v.assume_init_drop() };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_slices_put_back_what_they_saved() {
        for n in [
            0,
            1,
            SavedSlice::<f64>::INLINE,
            SavedSlice::<f64>::INLINE + 1,
            40,
        ] {
            let orig: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 3.0).collect();
            let saved = snapshot(&orig[..]);
            assert_eq!(saved.as_slice(), &orig[..]);
            let mut v = vec![9.0; n];
            restore_from(&mut v[..], &saved);
            assert_eq!(v, orig);
            let again = saved.clone();
            v.fill(7.0);
            restore(&mut v[..], saved);
            assert_eq!(v, orig);
            // A vector whose length a call changed gets its length back too.
            let mut longer = orig.clone();
            longer.push(1.0);
            restore(&mut longer, again);
            assert_eq!(longer, orig);
        }
    }

    #[test]
    fn saved_slices_of_arrays_and_owned_values() {
        let mut a = [1.0, 2.0, 3.0];
        let saved = snapshot(&a[..]);
        a = [0.0; 3];
        restore(&mut a, saved);
        assert_eq!(a, [1.0, 2.0, 3.0]);
        // Rows that own memory: cloned into the saved copy, cloned back out of it.
        let rows = vec![vec![1.0], vec![2.0, 3.0]];
        let saved = snapshot(&rows[..]);
        let mut m = vec![vec![0.0]; 2];
        restore_from(&mut m, &saved);
        assert_eq!(m, rows);
        drop(saved);
        // Anything else is saved whole.
        let mut p = (1.5, 2usize);
        let saved = snapshot(&p);
        p = (0.0, 0);
        restore(&mut p, saved);
        assert_eq!(p, (1.5, 2));
    }
}
