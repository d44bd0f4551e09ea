//! The product of two `ndarray` matrices in differentiated code (feature `ndarray`).
//!
//! The macros write `a.dot(&b)` of two matrices as `c = zeros; matmul_add(&a, &b, &mut c)`.
//! `matmul_add` and its first-order derivatives call `ndarray`'s matrix multiplication
//! (GEMM): the tangent `ċ += ȧ·b + a·ḃ`, and the adjoints `ā += c̄·bᵀ`, `b̄ += aᵀ·c̄`,
//! skipping the product for an operand whose caller has no derivative (a constant batch
//! of inputs); so does the forward over reverse of a Hessian-vector product (the adjoints
//! and their tangents). The other derivatives of derivatives (third order, forward over
//! forward) are rare enough to be those of the same product written as index loops,
//! `matmul_add_loops`, which the macros differentiate as any function.

use crate::Real;
use crate::lent_copies::LentCopies;
use crate::protocol::{StructShadow, StructShadowMut};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayBase, Data, Ix2};

/// `c += a · b` by `ndarray`'s matrix multiplication.
#[inline]
pub fn matmul_add<T: Real>(a: &Array2<T>, b: &Array2<T>, c: &mut Array2<T>) {
    gemm_add(a, b, c);
}

/// `c += a · b` for any operands (views, transposes), shapes checked by `ndarray`.
#[inline]
fn gemm_add<T: Real, S1: Data<Elem = T>, S2: Data<Elem = T>>(
    a: &ArrayBase<S1, Ix2>,
    b: &ArrayBase<S2, Ix2>,
    c: &mut Array2<T>,
) {
    general_mat_mul(T::one(), a, b, T::one(), c);
}

/// `x · y` added into the adjoint sink `k` of `primal`, unless the caller has none there.
fn add_product_into<T, K, S1, S2>(
    k: &mut K,
    primal: &Array2<T>,
    x: &ArrayBase<S1, Ix2>,
    y: &ArrayBase<S2, Ix2>,
) where
    T: Real,
    K: StructShadowMut<Array2<T>>,
    S1: Data<Elem = T>,
    S2: Data<Elem = T>,
{
    if !<K as StructShadowMut<Array2<T>>>::is_constant(k) {
        let mut s = Default::default();
        gemm_add(
            x,
            y,
            <K as StructShadowMut<Array2<T>>>::shadow_mut(k, primal, &mut s),
        );
    }
}

/// `matmul_add` as index loops: the code that nested derivatives differentiate.
#[crate::differentiable]
pub fn matmul_add_loops<T: Real>(a: &Array2<T>, b: &Array2<T>, c: &mut Array2<T>) {
    for i in 0..a.nrows() {
        for j in 0..b.ncols() {
            let mut acc = T::zero();
            for k in 0..a.ncols() {
                acc += a[[i, k]] * b[[k, j]];
            }
            c[[i, j]] += acc;
        }
    }
}

/// The calling protocol of `matmul_add` (see `ARCHITECTURE.md`): the first-order
/// derivatives and forward over reverse by `ndarray`'s matrix multiplication, the other
/// nested ones those of `matmul_add_loops`, which computes the same product.
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
pub struct matmul_add {}

// The nested derivatives, handed on to the loops' with the same arguments.
macro_rules! by_loops {
    ($($name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {$(
        #[doc(hidden)]
        #[inline]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Real>($($arg: $ty),*) -> $ret {
            matmul_add_loops::$name($($arg),*)
        }
    )*};
}

#[allow(non_snake_case)]
impl matmul_add {
    /// Forward mode: `c += a·b`, `ċ += ȧ·b + a·ḃ` (a constant operand's term skipped).
    #[doc(hidden)]
    #[inline]
    pub fn __ad_fwd<T: Real>(
        a: &Array2<T>,
        t_a: impl StructShadow<Array2<T>>,
        b: &Array2<T>,
        t_b: impl StructShadow<Array2<T>>,
        c: &mut Array2<T>,
        mut t_c: impl StructShadowMut<Array2<T>>,
        _mark: impl Copy,
    ) -> ((), ()) {
        let mut s_c = Default::default();
        let dc = t_c.shadow_mut(c, &mut s_c);
        if !t_a.is_constant() {
            let mut s = Default::default();
            gemm_add(t_a.shadow(a, &mut s), b, dc);
        }
        if !t_b.is_constant() {
            let mut s = Default::default();
            gemm_add(a, t_b.shadow(b, &mut s), dc);
        }
        gemm_add(a, b, c);
        ((), ())
    }

    /// The forward sweep of reverse mode: the product itself (the pullback needs only
    /// `a` and `b`, which the caller keeps as they are).
    #[doc(hidden)]
    #[inline(always)]
    pub fn __ad_aug<T: Real>(a: &Array2<T>, b: &Array2<T>, c: &mut Array2<T>) -> ((), ()) {
        (matmul_add(a, b, c), ())
    }

    /// The reverse sweep: `ā += c̄·bᵀ`, `b̄ += aᵀ·c̄` (into the operands that have
    /// adjoints); `c̄` flows on unchanged, since `c` was added to.
    #[doc(hidden)]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn __ad_pull<T: Real>(
        _state: (),
        a: &Array2<T>,
        mut k_a: impl StructShadowMut<Array2<T>>,
        b: &Array2<T>,
        mut k_b: impl StructShadowMut<Array2<T>>,
        c: &mut Array2<T>,
        mut k_c: impl StructShadowMut<Array2<T>>,
        _dret: impl Sized,
        _mark: impl Copy,
    ) {
        if k_c.is_constant() {
            return;
        }
        let mut s_c = Default::default();
        let bc = k_c.shadow_mut(c, &mut s_c);
        add_product_into(&mut k_a, a, bc, &b.t());
        add_product_into(&mut k_b, b, &a.t(), bc);
    }

    /// Forward over the forward sweep of reverse mode: the forward mode above.
    #[doc(hidden)]
    #[inline]
    pub fn __ad_fwd___ad_aug<T: Real>(
        a: &Array2<T>,
        t_a: impl StructShadow<Array2<T>>,
        b: &Array2<T>,
        t_b: impl StructShadow<Array2<T>>,
        c: &mut Array2<T>,
        t_c: impl StructShadowMut<Array2<T>>,
        mark: impl Copy,
    ) -> (((), ()), ((), ())) {
        let (y, dy) = Self::__ad_fwd(a, t_a, b, t_b, c, t_c, mark);
        ((y, ()), (dy, ()))
    }

    /// Reverse over forward, forward sweep: the forward mode above.
    #[doc(hidden)]
    #[inline]
    pub fn __ad_aug___ad_fwd<T: Real>(
        a: &Array2<T>,
        t_a: impl StructShadow<Array2<T>>,
        b: &Array2<T>,
        t_b: impl StructShadow<Array2<T>>,
        c: &mut Array2<T>,
        t_c: impl StructShadowMut<Array2<T>>,
    ) -> (((), ()), ()) {
        (Self::__ad_fwd(a, t_a, b, t_b, c, t_c, ()), ())
    }

    /// Forward over the reverse sweep (a Hessian-vector product's): the adjoints above
    /// and their tangents, `ā̇ += c̄̇·bᵀ + c̄·ḃᵀ`, `b̄̇ += ȧᵀ·c̄ + aᵀ·c̄̇`.
    #[doc(hidden)]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn __ad_fwd___ad_pull<T: Real>(
        a: &Array2<T>,
        t_a: impl StructShadow<Array2<T>>,
        mut k_a: impl StructShadowMut<Array2<T>>,
        mut tk_a: impl StructShadowMut<Array2<T>>,
        b: &Array2<T>,
        t_b: impl StructShadow<Array2<T>>,
        mut k_b: impl StructShadowMut<Array2<T>>,
        mut tk_b: impl StructShadowMut<Array2<T>>,
        c: &mut Array2<T>,
        _t_c: impl StructShadowMut<Array2<T>>,
        mut k_c: impl StructShadowMut<Array2<T>>,
        mut tk_c: impl StructShadowMut<Array2<T>>,
        _dret: impl Sized,
        _tdret: impl Sized,
        _mark: impl Copy,
    ) -> ((), ()) {
        let (mut s_kc, mut s_tkc) = Default::default();
        let kc = k_c.shadow_mut(c, &mut s_kc);
        let tkc = tk_c.shadow_mut(c, &mut s_tkc);
        let (mut s_ta, mut s_tb) = Default::default();
        let ta = (!t_a.is_constant()).then(|| t_a.shadow(a, &mut s_ta));
        let tb = (!t_b.is_constant()).then(|| t_b.shadow(b, &mut s_tb));
        add_product_into(&mut k_a, a, kc, &b.t());
        if !tk_a.is_constant() {
            let mut s = Default::default();
            let tka = tk_a.shadow_mut(a, &mut s);
            gemm_add(tkc, &b.t(), tka);
            if let Some(tb) = tb {
                gemm_add(kc, &tb.t(), tka);
            }
        }
        add_product_into(&mut k_b, b, &a.t(), kc);
        if !tk_b.is_constant() {
            let mut s = Default::default();
            let tkb = tk_b.shadow_mut(b, &mut s);
            gemm_add(&a.t(), tkc, tkb);
            if let Some(ta) = ta {
                gemm_add(&ta.t(), kc, tkb);
            }
        }
        ((), ())
    }

    /// Reverse over forward, reverse sweep: forward over reverse with the sinks swapped
    /// (see `ARCHITECTURE.md`).
    #[doc(hidden)]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn __ad_pull___ad_fwd<T: Real>(
        _state: (),
        a: &Array2<T>,
        k_a: impl StructShadowMut<Array2<T>>,
        t_a: impl StructShadow<Array2<T>>,
        tk_a: impl StructShadowMut<Array2<T>>,
        b: &Array2<T>,
        k_b: impl StructShadowMut<Array2<T>>,
        t_b: impl StructShadow<Array2<T>>,
        tk_b: impl StructShadowMut<Array2<T>>,
        c: &mut Array2<T>,
        k_c: impl StructShadowMut<Array2<T>>,
        t_c: impl StructShadowMut<Array2<T>>,
        tk_c: impl StructShadowMut<Array2<T>>,
        _dret: impl Sized,
        mark: impl Copy,
    ) {
        let _ = Self::__ad_fwd___ad_pull(
            a,
            t_a,
            tk_a,
            k_a,
            b,
            t_b,
            tk_b,
            k_b,
            c,
            t_c,
            tk_c,
            k_c,
            (),
            (),
            mark,
        );
    }

    by_loops! {
        __ad_fwd___ad_npull(
            a: &Array2<T>, t_a: impl StructShadow<Array2<T>>,
            nb_a: &mut Array2<T>, t_nb_a: impl StructShadowMut<Array2<T>>,
            b: &Array2<T>, t_b: impl StructShadow<Array2<T>>,
            nb_b: &mut Array2<T>, t_nb_b: impl StructShadowMut<Array2<T>>,
            c: &mut Array2<T>, t_c: impl StructShadowMut<Array2<T>>,
            nb_c: &mut Array2<T>, t_nb_c: impl StructShadowMut<Array2<T>>,
            mark: impl Copy,
        ) -> ((), ());
        __ad_fwd___ad_nfwd(
            a: &Array2<T>, t_a: impl StructShadow<Array2<T>>,
            nd_a: &Array2<T>, t_nd_a: impl StructShadow<Array2<T>>,
            b: &Array2<T>, t_b: impl StructShadow<Array2<T>>,
            nd_b: &Array2<T>, t_nd_b: impl StructShadow<Array2<T>>,
            c: &mut Array2<T>, t_c: impl StructShadowMut<Array2<T>>,
            nd_c: &mut Array2<T>, t_nd_c: impl StructShadowMut<Array2<T>>,
            mark: impl Copy,
        ) -> ((), ());
        __ad_fwd___ad_fwd(
            a: &Array2<T>, t_a: impl StructShadow<Array2<T>>,
            u_a: impl StructShadow<Array2<T>>, w_a: impl StructShadow<Array2<T>>,
            b: &Array2<T>, t_b: impl StructShadow<Array2<T>>,
            u_b: impl StructShadow<Array2<T>>, w_b: impl StructShadow<Array2<T>>,
            c: &mut Array2<T>, t_c: impl StructShadowMut<Array2<T>>,
            u_c: impl StructShadowMut<Array2<T>>, w_c: impl StructShadowMut<Array2<T>>,
            mark: impl Copy,
        ) -> (((), ()), ((), ()));
    }

    /// A lent argument as it is (the product keeps no borrow).
    #[doc(hidden)]
    #[inline(always)]
    pub fn __ad_lend<'v, B: ToOwned + ?Sized>(
        _copies: &LentCopies<B::Owned>,
        value: &'v B,
    ) -> &'v B {
        value
    }
}
