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
//! The Hessian-vector product is forward mode over the reverse companion: it costs a small
//! constant times one gradient, whatever the dimension.
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

/// A scalar objective `fn(&[f64]) -> f64`, through its reverse companion
/// `#[autodiff_reverse(df, Duplicated, Active)]`, which implements this trait.
pub trait Objective {
    /// `f(x)`, adding `∇f(x)` into `grad`.
    fn value_and_gradient(x: &[f64], grad: &mut [f64]) -> f64;
}

/// The Hessian-vector products of an [`Objective`], by forward mode over its reverse
/// companion; implemented with the `nested` feature (on by default).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no Hessian-vector product",
    note = "Hessian-vector products need the reverse companion of a `fn(&[f64]) -> f64` (`#[autodiff_reverse(df, Duplicated, Active)]`) and autodiff-core's `nested` feature (on by default)"
)]
pub trait ObjectiveHvp: Objective {
    /// `f(x)`, adding `∇f(x)` into `grad` and `H(x)·v` into `hv` (forward over reverse).
    fn value_gradient_hvp(x: &[f64], v: &[f64], grad: &mut [f64], hv: &mut [f64]) -> f64;
}

/// A function `fn(&[f64], &mut [f64])`, through its forward companion
/// `#[autodiff_forward(f_jvp, Dual, Dual)]`, which implements this trait.
pub trait ForwardJacobian {
    /// Runs the function into `y`, and its directional derivative along `v` into `dy`.
    fn jvp(x: &[f64], v: &[f64], y: &mut [f64], dy: &mut [f64]);
}

/// A function `fn(&[f64], &mut [f64])`, through its batched forward companion
/// `#[autodiff_forward(f_jvp, W, Dual, Dual)]` (`W` tangents at once), which implements
/// this trait.
pub trait ForwardJacobianBatch<const W: usize> {
    /// Runs the function into `y`, and its directional derivatives along the `W`
    /// directions `v` into `dy`.
    fn jvp_batch(x: &[f64], v: [&[f64]; W], y: &mut [f64], dy: [&mut [f64]; W]);
}

/// A function `fn(&[f64], &mut [f64])`, through its reverse companion
/// `#[autodiff_reverse(df, Duplicated, Duplicated)]`, which implements this trait.
pub trait ReverseJacobian {
    /// Runs the function into `y`, adds `Jᵀ·by` into `bx`, and consumes `by`.
    fn vjp(x: &[f64], bx: &mut [f64], y: &mut [f64], by: &mut [f64]);
}

/// The gradient `∇f(x)`.
pub fn gradient<F: Objective>(x: &[f64]) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    F::value_and_gradient(x, &mut g);
    g
}

/// The Hessian-vector product `H(x)·v`, by forward mode over reverse mode.
pub fn hvp<F: ObjectiveHvp>(x: &[f64], v: &[f64]) -> Vec<f64> {
    assert_eq!(x.len(), v.len(), "hvp: x and v differ in length");
    let mut g = vec![0.0; x.len()];
    let mut hv = vec![0.0; x.len()];
    F::value_gradient_hvp(x, v, &mut g, &mut hv);
    hv
}

/// The Hessian `H(x)`, row by row (`n` Hessian-vector products; `h[i][j] = ∂²f/∂xᵢ∂xⱼ`).
pub fn hessian<F: ObjectiveHvp>(x: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut e = vec![0.0; n];
    let mut g = vec![0.0; n];
    (0..n)
        .map(|i| {
            e[i] = 1.0;
            let mut row = vec![0.0; n];
            g.fill(0.0);
            F::value_gradient_hvp(x, &e, &mut g, &mut row);
            e[i] = 0.0;
            row
        })
        .collect()
}

/// The `m × n` Jacobian of `y = f(x)` (`m = y.len()`), one column per forward pass:
/// the cheaper choice when `n ≤ m`.
pub fn jacobian<F: ForwardJacobian>(x: &[f64], m: usize) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut jac = vec![vec![0.0; n]; m];
    let mut e = vec![0.0; n];
    let mut y = vec![0.0; m];
    let mut dy = vec![0.0; m];
    for j in 0..n {
        e[j] = 1.0;
        y.fill(0.0);
        dy.fill(0.0);
        F::jvp(x, &e, &mut y, &mut dy);
        for (row, d) in jac.iter_mut().zip(&dy) {
            row[j] = *d;
        }
        e[j] = 0.0;
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
    x: &[f64],
    m: usize,
) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut jac = vec![vec![0.0; n]; m];
    let mut dirs = vec![vec![0.0; n]; W];
    let mut dys = vec![vec![0.0; m]; W];
    let mut y = vec![0.0; m];
    for start in (0..n).step_by(W.max(1)) {
        let width = W.min(n - start);
        for (k, d) in dirs.iter_mut().enumerate() {
            d.fill(0.0);
            if k < width {
                d[start + k] = 1.0;
            }
        }
        dys.iter_mut().for_each(|d| d.fill(0.0));
        y.fill(0.0);
        let v: [&[f64]; W] = core::array::from_fn(|k| dirs[k].as_slice());
        let mut rest = dys.as_mut_slice();
        let dy: [&mut [f64]; W] = core::array::from_fn(|_| {
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
pub fn jacobian_by_rows<F: ReverseJacobian>(x: &[f64], m: usize) -> Vec<Vec<f64>> {
    let n = x.len();
    let mut y = vec![0.0; m];
    let mut by = vec![0.0; m];
    (0..m)
        .map(|i| {
            let mut row = vec![0.0; n];
            y.fill(0.0);
            by.fill(0.0);
            by[i] = 1.0;
            F::vjp(x, &mut row, &mut y, &mut by);
            row
        })
        .collect()
}
