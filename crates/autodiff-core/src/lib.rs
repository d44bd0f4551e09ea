//! # autodiff-core
//!
//! Automatic differentiation of ordinary Rust functions on stable Rust. An attribute on a
//! plain `f64`/`f32` function generates a **forward** companion (tangents) or a
//! **reverse** companion (gradients) at compile time, by source transformation. The
//! attribute syntax and the generated signatures are those of nightly `std::autodiff`.
//!
//! ```
//! use autodiff_core::prelude::*;
//!
//! #[autodiff_reverse(d_rosen, Duplicated, Active)]
//! #[autodiff_forward(rosen_jvp, Dual, Dual)]
//! fn rosen(x: &[f64]) -> f64 {
//!     let mut s = 0.0;
//!     for i in 0..x.len() - 1 {
//!         let a = 1.0 - x[i];
//!         let b = x[i + 1] - x[i] * x[i];
//!         s += a * a + 100.0 * b * b;
//!     }
//!     s
//! }
//!
//! let x = [1.5, 2.0, -0.5];
//! let mut grad = [0.0; 3];
//! let f = d_rosen(&x, &mut grad, 1.0); // grad += ∇f(x)
//! assert_eq!(f, rosen(&x));
//!
//! let v = [1.0, 0.0, 0.0];
//! let (f2, df) = rosen_jvp(&x, &v); // directional derivative along v
//! assert_eq!(f2, f);
//! assert!((df - grad[0]).abs() < 1e-12);
//! ```
//!
//! The crate re-exports the attribute macros; it is the only dependency a user needs.
//!
//! Features: `nested` (on by default) makes every annotated function differentiable
//! again (Hessian-vector products, forward over reverse); `ndarray` accepts `ndarray`
//! arrays as parameters of differentiated functions, read and written by index
//! (`a[[i, j]]`), with shadows of the same type.

// Generated code names this crate `::autodiff_core`; the rules defined in it do too.
extern crate self as autodiff_core;

mod array_shape;
mod buffers;
mod callee_states;
mod conversions;
mod difffn;
mod flat_index;
pub mod helpers;
mod inferred_integers;
mod lent_copies;
#[cfg(feature = "ndarray")]
mod matrix_products;
mod member_shadows;
#[cfg(feature = "ndarray")]
mod ndarray_support;
mod nested_rules;
pub mod partials;
mod protocol;
mod real;
mod replayed;
mod saved_runs;
mod saved_structs;
mod struct_operators;
mod tape;
mod tape_memory;
pub mod testing;

pub use autodiff_macros::{autodiff_forward, autodiff_reverse, custom_rule, differentiable};
pub use difffn::DiffFn;
pub use helpers::{
    ForwardJacobian, ForwardJacobianBatch, Objective, ObjectiveHvp, ReverseJacobian, gradient,
    hessian, hvp, jacobian, jacobian_by_rows, jacobian_in_chunks,
};
pub use real::Real;
pub use tape_memory::{cached_tape_bytes, release_tape_memory};

/// Stops differentiation: returns `value` unchanged, and differentiated code treats it as a
/// constant (its derivative is zero).
///
/// ```
/// use autodiff_core::prelude::*;
///
/// #[autodiff_reverse(d_f, Active, Active)]
/// fn f(x: f64) -> f64 {
///     x * no_grad(x) // d/dx = no_grad(x) = x, not 2x
/// }
/// assert_eq!(d_f(3.0, 1.0), (9.0, 3.0));
/// ```
#[inline(always)]
pub fn no_grad<T>(value: T) -> T {
    value
}

/// Everything a user needs: `use autodiff_core::prelude::*;`.
pub mod prelude {
    pub use crate::helpers::{
        ForwardJacobian, ForwardJacobianBatch, Objective, ObjectiveHvp, ReverseJacobian, gradient,
        hessian, hvp, jacobian, jacobian_by_rows, jacobian_in_chunks,
    };
    pub use crate::{
        DiffFn, Real, autodiff_forward, autodiff_reverse, custom_rule, differentiable, no_grad,
    };
}

/// Items used by generated code. Not a public API: names and signatures may change.
#[doc(hidden)]
pub mod __private {
    pub use crate::array_shape::{ArrayShape, array_shape};
    pub use crate::buffers::{
        AddInto, AddMember, CopyMember, Inert, Member, MemberSum, Restore, SavedSlice, SkipMember,
        Snapshot, ZeroLike, ZeroMember, accumulator_zero, add_into, add_to, compare, copy_of,
        elem_lit, elem_zero, fill_zero, first_of, found_at, holds, int_like, last_of, lit_like,
        min_len, resize_like, restore, restore_from, restore_resized, same_row_count,
        same_row_length, snapshot, sort_permutation, sum, window_size, zero_like,
    };
    // The same under names that tell code lowered again that the value saved and put back
    // is a whole struct, not a buffer (the reverse sweep of `acc = acc.add(&v)` with `acc`
    // a copy of a call's struct).
    pub use crate::buffers::{
        restore as restore_struct, restore_from as restore_struct_from, snapshot as snapshot_struct,
    };
    pub use crate::callee_states::{DeadFloat, Pick, PickAny, Record, pick, pick_from};
    pub use crate::conversions::{
        Convertible, IntegerTarget, add_cast, cast_tangent, cast_to, integer_as,
    };
    pub use crate::difffn::{
        BufferCell, CapturedBuffer, DiffFn, ForwardFn, ReverseFn, cell_add, cell_take,
    };
    pub use crate::flat_index::{FlatIndex, flat_index};
    pub use crate::helpers::HvpCompanion;
    /// The arrays that whole-array expressions (`z.mapv(f)`, `&a + &b`) are written
    /// into. (Aliases, not a re-export of `ndarray`, which would change the paths rustc
    /// prints for `ndarray`'s types in the user's errors.)
    #[cfg(feature = "ndarray")]
    pub mod arrays {
        /// `ndarray::Array1`.
        pub type Array1<A> = ndarray::Array1<A>;
        /// `ndarray::Array2`.
        pub type Array2<A> = ndarray::Array2<A>;
        pub use crate::matrix_products::{matmul_add, matmul_add_loops};
    }
    /// `no_grad` of an integer that the macros inferred from its uses.
    pub mod integer_use {
        pub use crate::inferred_integers::{InferredInteger, no_grad};
    }
    pub use crate::lent_copies::{LentCopies, lent_copy};
    /// The checks that operators on struct values have derivatives.
    pub mod operators {
        pub use crate::struct_operators::*;
    }
    pub use crate::member_shadows::{
        MemberSeed, member_add_seed, member_fit, member_grow, member_take_seed,
    };
    pub use crate::nested_rules::{
        MissingNestedRule, NestedRuleCache, NestedRuleFound, NestedRuleMissing, PullbackMarker,
        RuleProbe, cached_nested_rule, offer_nested_rule, request_nested_rule,
    };
    pub use crate::partials as d;
    pub use crate::partials::{nonzero, rem_partial};
    pub use crate::protocol::{
        Discard, NoDerivative, ScalarSink, ScalarTangent, Scratch, SliceShadow, SliceTangent,
        StructCotangent, StructSeed, StructShadow, StructShadowMut, UnitForward, Zero,
        slice_shadow, slice_tangent, unit_forward, vec_tangent,
    };
    pub use crate::real::Real;
    pub use crate::replayed::{
        at as replayed_at, at_mut as replayed_at_mut, replayed_index, same_length,
    };
    pub use crate::saved_runs::{SavedRun, SavedSlices};
    pub use crate::saved_structs::{NestedCopy, WithoutClone, nested_copy_of};
    pub use crate::tape::{DeadStore, Slot, Spill, Stack, Tape, ThinTape, rev_prefix, take};
}
