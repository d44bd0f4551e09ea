//! One-call derivatives of annotated functions: gradient, Hessian-vector product,
//! Hessian and Jacobian.
//!
//! The named companion of a function of a common shape implements a helper trait, and
//! the functions here take that companion as a type parameter:
//!
//! | function | attribute | helpers |
//! |---|---|---|
//! | `fn f(x: &[f64]) -> f64` | `#[autodiff_reverse(df, Duplicated, Active)]` | [`gradient::<df>`](gradient), [`hvp::<df>`](hvp), [`hessian::<df>`](hessian) |
//! | `fn f(x: &[f64], y: &mut [f64])` | `#[autodiff_forward(f_jvp, Dual, Dual)]` | [`jacobian::<f_jvp>`](jacobian) (by columns) |
//! | `fn f(x: &[f64], y: &mut [f64])` | `#[autodiff_reverse(df, Duplicated, Duplicated)]` | [`jacobian_by_rows::<df>`](jacobian_by_rows) |
//!
//! `f32` in place of `f64` works the same (each trait's `Float` is the companion's float
//! type). The Hessian-vector product is forward mode over the reverse companion: it costs
//! a small constant times one gradient, whatever the dimension.
//!
//! ```
//! use autodiff_core::prelude::*;
//!
//! #[autodiff_reverse(d_rosen, Duplicated, Active)]
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
//! let x = [-1.2, 1.0];
//! let g = autodiff_core::gradient::<d_rosen>(&x);
//! let hv = autodiff_core::hvp::<d_rosen>(&x, &[1.0, 0.0]);
//! let h = autodiff_core::hessian::<d_rosen>(&x);
//! assert!((g[1] - 200.0 * (1.0 - 1.44)).abs() < 1e-12);
//! assert!((hv[0] - (2.0 + 1200.0 * 1.44 - 400.0)).abs() < 1e-9);
//! assert_eq!(h[0][1], h[1][0]);
//! ```

use crate::real::Real;
use num_traits::{One, Zero};

/// A scalar objective `fn(&[T]) -> T` (`T` is `f64` or `f32`), through its reverse
/// companion `#[autodiff_reverse(df, Duplicated, Active)]`, which implements this trait.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the gradient of a `fn(&[f64]) -> f64`",
    note = "`gradient`, `hvp` and `hessian` take the reverse companion of a function of one slice, `fn f(x: &[f64]) -> f64` (or `f32`), with `#[autodiff_reverse(df, Duplicated, Active)]`; for a function of more parameters, wrap it in one that takes only the slice, or call its companion yourself"
)]
pub trait Objective {
    /// The float type of the function.
    type Float: Real;
    /// `f(x)`, adding `∇f(x)` into `grad`.
    fn value_and_gradient(x: &[Self::Float], grad: &mut [Self::Float]) -> Self::Float;
}

/// The Hessian-vector products of an [`Objective`], by forward mode over its reverse
/// companion; implemented with the `nested` feature (on by default).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no Hessian-vector product",
    note = "Hessian-vector products need the reverse companion of a `fn(&[f64]) -> f64` or `fn(&[f32]) -> f32` (`#[autodiff_reverse(df, Duplicated, Active)]`) and autodiff-core's `nested` feature (on by default)"
)]
pub trait ObjectiveHvp: Objective {
    /// `f(x)`, adding `∇f(x)` into `grad` and `H(x)·v` into `hv` (forward over reverse).
    fn value_gradient_hvp(
        x: &[Self::Float],
        v: &[Self::Float],
        grad: &mut [Self::Float],
        hv: &mut [Self::Float],
    ) -> Self::Float;
}

/// What a reverse companion implements so that it is an [`ObjectiveHvp`]: the same
/// method, generic over the mode marker that the generated protocol threads through.
///
/// A generic method is compiled only where it is called, so a library whose functions
/// cannot be differentiated twice (a callee taking a closure, say) still compiles; the
/// error that says why appears where a Hessian-vector product is asked for.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no Hessian-vector product",
    note = "Hessian-vector products need the reverse companion of a `fn(&[f64]) -> f64` or `fn(&[f32]) -> f32` (`#[autodiff_reverse(df, Duplicated, Active)]`) and autodiff-core's `nested` feature (on by default)"
)]
pub trait HvpCompanion: Objective {
    /// [`ObjectiveHvp::value_gradient_hvp`], with the protocol's mode marker.
    fn value_gradient_hvp_marked<M: Copy>(
        x: &[Self::Float],
        v: &[Self::Float],
        grad: &mut [Self::Float],
        hv: &mut [Self::Float],
        mark: M,
    ) -> Self::Float;
}

impl<F: HvpCompanion> ObjectiveHvp for F {
    #[inline]
    fn value_gradient_hvp(
        x: &[Self::Float],
        v: &[Self::Float],
        grad: &mut [Self::Float],
        hv: &mut [Self::Float],
    ) -> Self::Float {
        F::value_gradient_hvp_marked(x, v, grad, hv, ())
    }
}

/// A function `fn(&[T], &mut [T])`, through its forward companion
/// `#[autodiff_forward(f_jvp, Dual, Dual)]`, which implements this trait.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the forward companion of a `fn(&[f64], &mut [f64])`",
    note = "`jacobian` takes the forward companion of a function of one input slice that writes one output slice, `fn f(x: &[f64], y: &mut [f64])` (or `f32`), with `#[autodiff_forward(f_jvp, Dual, Dual)]`; a batched companion (`#[autodiff_forward(f_jvp, W, Dual, Dual)]`) goes to `jacobian_in_chunks`"
)]
pub trait ForwardJacobian {
    /// The float type of the function.
    type Float: Real;
    /// Runs the function into `y`, and its directional derivative along `v` into `dy`.
    fn jvp(x: &[Self::Float], v: &[Self::Float], y: &mut [Self::Float], dy: &mut [Self::Float]);
}

/// A function `fn(&[T], &mut [T])`, through its batched forward companion
/// `#[autodiff_forward(f_jvp, W, Dual, Dual)]` (`W` tangents at once), which implements
/// this trait.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a forward companion of a `fn(&[f64], &mut [f64])` batched {W} wide",
    note = "`jacobian_in_chunks::<F, W>` takes the batched forward companion `#[autodiff_forward(f_jvp, W, Dual, Dual)]` of `fn f(x: &[f64], y: &mut [f64])` (or `f32`), with the same width `W` (at least 2: a width of 1 is the plain companion, which `jacobian` takes)"
)]
pub trait ForwardJacobianBatch<const W: usize> {
    /// The float type of the function.
    type Float: Real;
    /// Runs the function into `y`, and its directional derivatives along the `W`
    /// directions `v` into `dy`.
    fn jvp_batch(
        x: &[Self::Float],
        v: [&[Self::Float]; W],
        y: &mut [Self::Float],
        dy: [&mut [Self::Float]; W],
    );
}

/// A function `fn(&[T], &mut [T])`, through its reverse companion
/// `#[autodiff_reverse(df, Duplicated, Duplicated)]`, which implements this trait.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the reverse companion of a `fn(&[f64], &mut [f64])`",
    note = "`jacobian_by_rows` takes the reverse companion of a function of one input slice that writes one output slice, `fn f(x: &[f64], y: &mut [f64])` (or `f32`), with `#[autodiff_reverse(df, Duplicated, Duplicated)]`"
)]
pub trait ReverseJacobian {
    /// The float type of the function.
    type Float: Real;
    /// Runs the function into `y`, adds `Jᵀ·by` into `bx`, and consumes `by`.
    fn vjp(
        x: &[Self::Float],
        bx: &mut [Self::Float],
        y: &mut [Self::Float],
        by: &mut [Self::Float],
    );
}

/// The gradient `∇f(x)`.
pub fn gradient<F: Objective>(x: &[F::Float]) -> Vec<F::Float> {
    let mut g = vec![F::Float::zero(); x.len()];
    F::value_and_gradient(x, &mut g);
    g
}

/// The Hessian-vector product `H(x)·v`, by forward mode over reverse mode.
pub fn hvp<F: ObjectiveHvp>(x: &[F::Float], v: &[F::Float]) -> Vec<F::Float> {
    assert_eq!(x.len(), v.len(), "hvp: x and v differ in length");
    let mut g = vec![F::Float::zero(); x.len()];
    let mut hv = vec![F::Float::zero(); x.len()];
    F::value_gradient_hvp(x, v, &mut g, &mut hv);
    hv
}

/// The Hessian `H(x)`, row by row (`n` Hessian-vector products; `h[i][j] = ∂²f/∂xᵢ∂xⱼ`).
pub fn hessian<F: ObjectiveHvp>(x: &[F::Float]) -> Vec<Vec<F::Float>> {
    let (zero, one) = (F::Float::zero(), F::Float::one());
    let n = x.len();
    let mut e = vec![zero; n];
    let mut g = vec![zero; n];
    (0..n)
        .map(|i| {
            e[i] = one;
            let mut row = vec![zero; n];
            g.fill(zero);
            F::value_gradient_hvp(x, &e, &mut g, &mut row);
            e[i] = zero;
            row
        })
        .collect()
}

/// The `m × n` Jacobian of `y = f(x)` (`m = y.len()`), one column per forward pass:
/// the cheaper choice when `n ≤ m`.
pub fn jacobian<F: ForwardJacobian>(x: &[F::Float], m: usize) -> Vec<Vec<F::Float>> {
    let (zero, one) = (F::Float::zero(), F::Float::one());
    let n = x.len();
    let mut jac = vec![vec![zero; n]; m];
    let mut e = vec![zero; n];
    let mut y = vec![zero; m];
    let mut dy = vec![zero; m];
    for j in 0..n {
        e[j] = one;
        y.fill(zero);
        dy.fill(zero);
        F::jvp(x, &e, &mut y, &mut dy);
        for (row, d) in jac.iter_mut().zip(&dy) {
            row[j] = *d;
        }
        e[j] = zero;
    }
    jac
}

/// The `m × n` Jacobian of `y = f(x)` (`m = y.len()`) in chunks of `W` columns, one call
/// of a batched forward companion per chunk.
///
/// ```
/// use autodiff_core::prelude::*;
///
/// #[autodiff_forward(f_jvp2, 2, Dual, Dual)]
/// fn f(x: &[f64], y: &mut [f64]) {
///     y[0] = x[0] * x[1];
///     y[1] = x[1].sin() + x[2];
/// }
///
/// let j = autodiff_core::jacobian_in_chunks::<f_jvp2, 2>(&[2.0, 3.0, 4.0], 2);
/// assert_eq!(j[0], vec![3.0, 2.0, 0.0]);
/// assert_eq!(j[1], vec![0.0, 3.0f64.cos(), 1.0]);
/// ```
pub fn jacobian_in_chunks<F: ForwardJacobianBatch<W>, const W: usize>(
    x: &[F::Float],
    m: usize,
) -> Vec<Vec<F::Float>> {
    let (zero, one) = (F::Float::zero(), F::Float::one());
    let n = x.len();
    let mut jac = vec![vec![zero; n]; m];
    let mut dirs = vec![vec![zero; n]; W];
    let mut dys = vec![vec![zero; m]; W];
    let mut y = vec![zero; m];
    for start in (0..n).step_by(W.max(1)) {
        let width = W.min(n - start);
        for (k, d) in dirs.iter_mut().enumerate() {
            d.fill(zero);
            if k < width {
                d[start + k] = one;
            }
        }
        dys.iter_mut().for_each(|d| d.fill(zero));
        y.fill(zero);
        let v: [&[F::Float]; W] = core::array::from_fn(|k| dirs[k].as_slice());
        let mut rest = dys.as_mut_slice();
        let dy: [&mut [F::Float]; W] = core::array::from_fn(|_| {
            let (first, tail) = core::mem::take(&mut rest)
                .split_first_mut()
                .expect("W tangents");
            rest = tail;
            first.as_mut_slice()
        });
        F::jvp_batch(x, v, &mut y, dy);
        for (k, d) in dys.iter().enumerate().take(width) {
            for (row, v) in jac.iter_mut().zip(d) {
                row[start + k] = *v;
            }
        }
    }
    jac
}

/// The `m × n` Jacobian of `y = f(x)` (`m = y.len()`), one row per reverse pass: the
/// cheaper choice when `m < n`.
pub fn jacobian_by_rows<F: ReverseJacobian>(x: &[F::Float], m: usize) -> Vec<Vec<F::Float>> {
    let (zero, one) = (F::Float::zero(), F::Float::one());
    let n = x.len();
    let mut y = vec![zero; m];
    let mut by = vec![zero; m];
    (0..m)
        .map(|i| {
            let mut row = vec![zero; n];
            y.fill(zero);
            by.fill(zero);
            by[i] = one;
            F::vjp(x, &mut row, &mut y, &mut by);
            row
        })
        .collect()
}
