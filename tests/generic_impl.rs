//! Methods of a generic `impl<T: Float> Affine<T>`, whose float type is the impl's
//! parameter (the companions bound it by `Real` themselves), and a function whose float
//! type is an alias: both modes, through a `#[differentiable]` method call, at `f64`
//! against num-dual and at `f32` against the `f64` derivatives. A `#[differentiable]`
//! block `impl<T: Float> V2<T>` whose methods name `T` only inside `V2<T>` and `Self`.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use num_dual::{Dual64, DualNum};
use num_traits::Float;
use proptest::prelude::*;

/// `tanh(w·x + b)`.
#[derive(Clone, Debug)]
pub struct Affine<T> {
    pub w: Vec<T>,
    pub b: T,
}

impl<T: Float> Affine<T> {
    #[differentiable]
    pub fn apply(&self, x: &[T]) -> T {
        let mut s = self.b;
        for i in 0..x.len() {
            s = s + self.w[i] * x[i];
        }
        s.tanh()
    }

    /// `apply(x)² + Σ w_i²/2`, through the method above.
    #[autodiff_reverse(d_loss, Duplicated, Duplicated, Active)]
    #[autodiff_forward(j_loss, Dual, Dual, Dual)]
    pub fn loss(&self, x: &[T]) -> T {
        let y = self.apply(x);
        let half = T::from(0.5).unwrap();
        y * y
            + self
                .w
                .iter()
                .map(|&v| v * v * half)
                .fold(T::zero(), |a, b| a + b)
    }
}

/// The loss over num-dual numbers: `w`, `b` and `x` in one vector.
fn loss_o<D: DualNum<Primitive = f64> + Copy>(z: &[D], n: usize) -> D {
    let (w, rest) = z.split_at(n);
    let (b, x) = rest.split_at(1);
    let mut s = b[0];
    for i in 0..n {
        s += w[i] * x[i];
    }
    let y = s.tanh();
    let mut r = y * y;
    for v in w {
        r += *v * *v * 0.5;
    }
    r
}

/// A point of a generic float type.
#[differentiable]
#[derive(Clone, Debug)]
pub struct V2<T: Float> {
    pub x: T,
    pub y: T,
}

/// Every method of the block is differentiable, `-> Self` ones included; `T` is a float
/// to each of them, though `add` and `dot` name it only inside `V2<T>`.
#[differentiable]
impl<T: Float> V2<T> {
    pub fn add(&self, o: &V2<T>) -> Self {
        V2 {
            x: self.x + o.x,
            y: self.y + o.y,
        }
    }

    pub fn rotated(&self) -> Self {
        V2 {
            x: -self.y,
            y: self.x,
        }
    }

    pub fn dot(&self, o: &V2<T>) -> T {
        self.x * o.x + self.y * o.y
    }
}

/// `((a + b)⊥ + a) · b` of the points `(x0, x1)` and `(x2, x1 x0)`.
#[autodiff_reverse(d_points, Duplicated, Active)]
#[autodiff_forward(j_points, Dual, Dual)]
fn points(x: &[f64]) -> f64 {
    let a = V2 { x: x[0], y: x[1] };
    let b = V2 {
        x: x[2],
        y: x[1] * x[0],
    };
    let s = a.add(&b);
    let r = s.rotated();
    r.add(&a).dot(&b)
}

fn points_o<D: DualNum<Primitive = f64> + Copy>(x: &[D]) -> D {
    let (ax, ay, bx, by) = (x[0], x[1], x[2], x[1] * x[0]);
    let (sx, sy) = (ax + bx, ay + by);
    let (rx, ry) = (-sy + ax, sx + ay);
    rx * bx + ry * by
}

type Scalar = f64;

/// A float type spelled as an alias.
#[autodiff_reverse(d_aliased, Duplicated, Active)]
fn aliased(x: &[Scalar]) -> Scalar {
    let mut s: Scalar = 0.0;
    for v in x {
        s += v.sin() * v;
    }
    s
}

fn affine(n: usize) -> impl Strategy<Value = (Vec<f64>, f64, Vec<f64>, Vec<f64>)> {
    (
        prop::collection::vec(-1.0..1.0f64, n),
        -1.0..1.0f64,
        prop::collection::vec(-1.0..1.0f64, n),
        prop::collection::vec(-1.0..1.0f64, 2 * n + 1),
    )
}

fn close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol * (1.0 + want.abs()),
        "{what}: got {got}, want {want}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn methods_of_a_generic_impl((w, b, x, v) in (1usize..6).prop_flat_map(affine)) {
        let n = x.len();
        let m = Affine { w: w.clone(), b };
        let mut z: Vec<f64> = w.clone();
        z.push(b);
        z.extend(&x);
        // Gradient by num-dual, one component at a time.
        let grad: Vec<f64> = (0..z.len())
            .map(|i| {
                let zd: Vec<Dual64> = z
                    .iter()
                    .enumerate()
                    .map(|(j, &a)| Dual64::new(a, if i == j { 1.0 } else { 0.0 }))
                    .collect();
                loss_o(&zd, n).eps
            })
            .collect();
        let mut dm = Affine { w: vec![0.0; n], b: 0.0 };
        let mut dx = vec![0.0; n];
        let y = m.d_loss(&mut dm, &x, &mut dx, 1.0);
        close("primal", y, m.loss(&x), 0.0);
        for i in 0..n {
            close("d/dw", dm.w[i], grad[i], 1e-12);
            close("d/dx", dx[i], grad[n + 1 + i], 1e-12);
        }
        close("d/db", dm.b, grad[n], 1e-12);
        // Forward mode along v.
        let tm = Affine { w: v[..n].to_vec(), b: v[n] };
        let (_, t) = m.j_loss(&tm, &x, &v[n + 1..]);
        let want: f64 = grad.iter().zip(&v).map(|(g, d)| g * d).sum();
        close("tangent", t, want, 1e-12);
        // The same impl at `f32`.
        let m32 = Affine { w: w.iter().map(|&a| a as f32).collect(), b: b as f32 };
        let x32: Vec<f32> = x.iter().map(|&a| a as f32).collect();
        let mut dm32 = Affine { w: vec![0.0f32; n], b: 0.0 };
        let mut dx32 = vec![0.0f32; n];
        m32.d_loss(&mut dm32, &x32, &mut dx32, 1.0);
        close("d/db at f32", dm32.b as f64, grad[n], 1e-4);
        for i in 0..n {
            close("d/dx at f32", dx32[i] as f64, grad[n + 1 + i], 1e-4);
        }
    }

    #[test]
    fn struct_results_of_a_generic_block(
        x in prop::collection::vec(-2.0..2.0f64, 3),
        v in prop::collection::vec(-1.0..1.0f64, 3),
    ) {
        let grad: Vec<f64> = (0..3)
            .map(|i| {
                let xd: Vec<Dual64> = x
                    .iter()
                    .enumerate()
                    .map(|(j, &a)| Dual64::new(a, if i == j { 1.0 } else { 0.0 }))
                    .collect();
                points_o(&xd).eps
            })
            .collect();
        let mut g = vec![0.0; 3];
        let y = d_points(&x, &mut g, 1.0);
        close("primal", y, points(&x), 0.0);
        for i in 0..3 {
            close("gradient", g[i], grad[i], 1e-12);
        }
        let (_, t) = j_points(&x, &v);
        let want: f64 = grad.iter().zip(&v).map(|(g, d)| g * d).sum();
        close("tangent", t, want, 1e-12);
    }

    #[test]
    fn a_float_type_alias(x in prop::collection::vec(-2.0..2.0f64, 0..8)) {
        let mut g = vec![0.0; x.len()];
        let y = d_aliased(&x, &mut g, 1.0);
        close("primal", y, aliased(&x), 0.0);
        for (gi, xi) in g.iter().zip(&x) {
            close("gradient", *gi, xi.cos() * xi + xi.sin(), 1e-14);
        }
    }
}
