//! `ndarray` arrays in differentiated code (feature `ndarray`).
//!
//! The macros treat an `ndarray` type like a user struct: a parameter `a: &Array2<f64>`
//! has a shadow of the same type, its elements are read and written by index (`a[i]`,
//! `a[[i, j]]`), and its shape (`dim`, `nrows`, `ncols`, `len`, `shape`) carries no
//! derivative. What generated code needs beyond that is here: a zero shadow shaped like
//! an array (for a constant array passed to a function that differentiates it, or a
//! struct member that is an array) and the sum of two shadows.

use crate::buffers::{AddInto, ZeroLike};
use ndarray::{Array, ArrayBase, Data, DataMut, Dimension};

/// A zero array of the same shape: the shadow of an array, owned or a view.
impl<A, S, D> ZeroLike for ArrayBase<S, D>
where
    A: ZeroLike<Out = A> + Clone,
    S: Data<Elem = A>,
    D: Dimension,
{
    type Out = Array<A, D>;
    fn zero_like(&self) -> Array<A, D> {
        self.map(ZeroLike::zero_like)
    }
    fn accumulator_zero(&self) -> Array<A, D> {
        self.map(ZeroLike::accumulator_zero)
    }
}

/// Elementwise `self += rhs`, for arrays of the same shape.
impl<A, S, S2, D> AddInto<ArrayBase<S2, D>> for ArrayBase<S, D>
where
    A: AddInto + Clone,
    S: DataMut<Elem = A>,
    S2: Data<Elem = A>,
    D: Dimension,
{
    fn add_into(&mut self, rhs: &ArrayBase<S2, D>) {
        self.zip_mut_with(rhs, |a, b| a.add_into(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, array};

    #[test]
    fn zero_shadow_has_the_shape_of_the_array() {
        let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let z = a.zero_like();
        assert_eq!(z.dim(), (2, 3));
        assert!(z.iter().all(|v| *v == 0.0));
        let col = a.column(1);
        assert_eq!(col.zero_like(), Array1::<f64>::zeros(2));
    }

    #[test]
    fn shadows_add_elementwise() {
        let mut a = array![1.0, 2.0];
        a.add_into(&array![0.5, -4.0]);
        assert_eq!(a, array![1.5, -2.0]);
    }
}
