//! `num-dual` (forward mode): the Rosenbrock gradient by its `gradient` helper over a
//! dynamically sized `DualDVec64`, and by `n` directional derivatives with `Dual64`.

use nalgebra::DVector;
use num_dual::{Dual64, DualDVec64, gradient};

/// Rosenbrock over `Dual64`.
pub fn rosenbrock(x: &[Dual64]) -> Dual64 {
    let mut s = Dual64::from_re(0.0);
    for i in 0..x.len() - 1 {
        let a = Dual64::from_re(1.0) - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + b * b * 100.0;
    }
    s
}

/// The gradient by `num_dual::gradient` (one forward pass carrying an n-vector
/// derivative). Adds it into `grad`; returns the value.
pub fn rosenbrock_grad_vec(x: &[f64], grad: &mut [f64]) -> f64 {
    let xv = DVector::from_column_slice(x);
    let (f, g) = gradient(
        |v: DVector<DualDVec64>| {
            let n = v.len();
            let mut s = DualDVec64::from_re(0.0);
            for i in 0..n - 1 {
                let a = DualDVec64::from_re(1.0) - &v[i];
                let b = &v[i + 1] - &v[i] * &v[i];
                s += &a * &a + &b * &b * 100.0;
            }
            s
        },
        &xv,
    );
    for (a, b) in grad.iter_mut().zip(g.iter()) {
        *a += b;
    }
    f
}

/// The gradient by `n` forward passes, one per unit direction. Adds it into `grad`;
/// returns the value.
pub fn rosenbrock_grad_dirs(x: &[f64], grad: &mut [f64]) -> f64 {
    let mut xd: Vec<Dual64> = x.iter().map(|&v| Dual64::from_re(v)).collect();
    let mut f = 0.0;
    for i in 0..x.len() {
        xd[i].eps = 1.0;
        let y = rosenbrock(&xd);
        xd[i].eps = 0.0;
        grad[i] += y.eps;
        f = y.re;
    }
    f
}
