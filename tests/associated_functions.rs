//! Associated functions without `self`, called as `Self::f(..)` and `Type::f(..)` from
//! differentiated methods and functions: marked `#[differentiable(associated)]`, or
//! recognised by their use of `Self`; with named companions of their own; both modes and
//! forward over reverse, against num-dual.

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::{Num, check_tol, oracle_grad};
use proptest::prelude::*;

/// A logistic unit `σ(w·x + b)` with a scale.
#[derive(Clone, Debug)]
pub struct Unit {
    pub w: Vec<f64>,
    pub b: f64,
}

impl Unit {
    const SCALE: f64 = 1.5;

    /// An associated helper that does not mention `Self`: marked.
    #[differentiable(associated)]
    fn sigmoid(z: f64) -> f64 {
        1.0 / (1.0 + (-z).exp())
    }

    /// An associated helper over slices, with a named companion of its own.
    #[autodiff_reverse(d_dot, Duplicated, Duplicated, Active)]
    #[autodiff_forward(j_dot, Dual, Dual, Dual)]
    #[differentiable(associated)]
    pub fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// An associated helper that mentions `Self` (recognised without the marker).
    #[differentiable]
    fn scaled_square(z: f64) -> f64 {
        z * z * Self::SCALE
    }

    #[differentiable]
    pub fn predict(&self, x: &[f64]) -> f64 {
        Self::sigmoid(Self::dot(&self.w, x) + self.b)
    }

    /// `σ(p) + (p - y)² + 1.5 p²` with `p = predict(x)`, through `Unit::` and `Self::`.
    #[autodiff_reverse(d_loss, Duplicated, Duplicated, Active, Active)]
    #[autodiff_forward(j_loss, Dual, Dual, Dual, Dual)]
    pub fn loss(&self, x: &[f64], y: f64) -> f64 {
        let p = self.predict(x);
        Unit::sigmoid(p) + (p - y).powi(2) + Self::scaled_square(p)
    }
}

/// The loss as a free function of slices, calling the associated functions as `Unit::f`.
#[autodiff_reverse(d_free_loss, Duplicated, Duplicated, Active, Active, Active)]
fn free_loss(w: &[f64], x: &[f64], b: f64, y: f64) -> f64 {
    let p = Unit::sigmoid(Unit::dot(w, x) + b);
    Unit::sigmoid(p) + (p - y).powi(2) + Unit::scaled_square(p)
}

/// The gradient of `free_loss` in `x`, differentiated again (H·v in `x`).
#[autodiff_forward(loss_hvp, Dual, Const, Const, Const, Dual)]
fn loss_gradient(x: &[f64], w: &[f64], b: f64, y: f64, g: &mut [f64]) {
    let mut gw = vec![0.0; w.len()];
    g.fill(0.0);
    d_free_loss(w, &mut gw, x, g, b, y, 1.0);
}

fn sigmoid_o<D: Num>(z: D) -> D {
    (D::one() + (-z).exp()).recip()
}

/// The loss over num-dual numbers: `w`, `b`, `x` and `y` in one vector.
fn loss_o<D: Num>(z: &[D], n: usize) -> D {
    let (w, rest) = z.split_at(n);
    let (b, rest) = rest.split_at(1);
    let (x, y) = rest.split_at(n);
    let mut s = b[0];
    for i in 0..n {
        s += w[i] * x[i];
    }
    let p = sigmoid_o(s);
    sigmoid_o(p) + (p - y[0]).powi(2) + p * p * D::from(1.5)
}

fn case(n: usize) -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
    (
        prop::collection::vec(-1.5..1.5f64, 3 * n + 2),
        prop::collection::vec(-1.0..1.0f64, 3 * n + 2),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn associated_helpers_in_both_modes((z, v) in (1usize..6).prop_flat_map(case)) {
        let n = (z.len() - 2) / 3;
        let unit = Unit { w: z[..n].to_vec(), b: z[n] };
        let (x, y) = (&z[n + 1..2 * n + 1], z[2 * n + 1]);
        let grad = oracle_grad(|d| loss_o(d, n), &z).1;
        // Reverse mode.
        let mut du = Unit { w: vec![0.0; n], b: 0.0 };
        let mut dx = vec![0.0; n];
        let (l, dy) = unit.d_loss(&mut du, x, &mut dx, y, 1.0);
        check_tol("primal", l, unit.loss(x, y), 0.0);
        for i in 0..n {
            check_tol("d/dw", du.w[i], grad[i], 1e-12);
            check_tol("d/dx", dx[i], grad[n + 1 + i], 1e-12);
        }
        check_tol("d/db", du.b, grad[n], 1e-12);
        check_tol("d/dy", dy, grad[2 * n + 1], 1e-12);
        // Forward mode along v.
        let tu = Unit { w: v[..n].to_vec(), b: v[n] };
        let (_, t) = unit.j_loss(&tu, x, &v[n + 1..2 * n + 1], y, v[2 * n + 1]);
        let want: f64 = grad.iter().zip(&v).map(|(g, d)| g * d).sum();
        check_tol("tangent", t, want, 1e-12);
    }

    #[test]
    fn named_companions_of_an_associated_function(
        a in prop::collection::vec(-2.0..2.0f64, 4),
        b in prop::collection::vec(-2.0..2.0f64, 4),
        da in prop::collection::vec(-1.0..1.0f64, 4),
    ) {
        let (mut ga, mut gb) = (vec![0.0; 4], vec![0.0; 4]);
        let d = Unit::d_dot(&a, &mut ga, &b, &mut gb, 2.0);
        check_tol("dot", d, Unit::dot(&a, &b), 0.0);
        for i in 0..4 {
            check_tol("d/da", ga[i], 2.0 * b[i], 1e-15);
            check_tol("d/db", gb[i], 2.0 * a[i], 1e-15);
        }
        let (_, t) = Unit::j_dot(&a, &da, &b, &[0.0; 4]);
        let want: f64 = da.iter().zip(&b).map(|(u, w)| u * w).sum();
        check_tol("tangent", t, want, 1e-14);
    }

    #[test]
    fn hessian_vector_products_through_associated_helpers((z, v) in (1usize..6).prop_flat_map(case)) {
        let n = (z.len() - 2) / 3;
        let (w, b) = (&z[..n], z[n]);
        let (x, y) = (&z[n + 1..2 * n + 1], z[2 * n + 1]);
        let vx = &v[..n];
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        loss_hvp(x, vx, w, b, y, &mut g, &mut hv);
        // The oracle: the x-gradient of loss_o along vx, by num-dual second derivatives
        // (a hyper-dual in x along vx and along each unit vector).
        for i in 0..n {
            let zd: Vec<num_dual::HyperDual64> = z
                .iter()
                .enumerate()
                .map(|(j, &a)| {
                    let (e1, e2) = if (n + 1..2 * n + 1).contains(&j) {
                        let k = j - n - 1;
                        (vx[k], if k == i { 1.0 } else { 0.0 })
                    } else {
                        (0.0, 0.0)
                    };
                    num_dual::HyperDual64::new(a, e1, e2, 0.0)
                })
                .collect();
            let h = loss_o(&zd, n);
            check_tol("gradient", g[i], h.eps2, 1e-12);
            check_tol("H·v", hv[i], h.eps1eps2, 1e-10);
        }
    }
}
