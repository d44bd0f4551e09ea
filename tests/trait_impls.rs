//! Methods of trait implementations in differentiated code. `#[differentiable]` on an
//! `impl Trait for Type` block makes its methods differentiable (those marked, or every
//! method whose result may carry a derivative when none is marked); the generated
//! methods and companions live in an inherent `impl Type` beside it. Calls of such a
//! method on a value of the concrete type are differentiated in both modes and under
//! forward over reverse, against num-dual.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// A model of one input, with a name that carries no derivative.
pub trait Model {
    fn predict(&self, x: f64) -> f64;
    fn name(&self) -> &'static str;
    fn size(&self) -> usize;
}

/// `tanh(w·φ(x) + b)` with the features `φ(x) = (x, x², sin x)`.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Features {
    pub w: Vec<f64>,
    pub b: f64,
}

// No method is marked: every method whose result may carry a derivative is made
// differentiable (`predict`); `name` and `size` are left as written (differentiated code
// reads `size` through `no_grad`).
#[differentiable]
impl Model for Features {
    fn predict(&self, x: f64) -> f64 {
        let phi = [x, x * x, x.sin()];
        let mut s = self.b;
        for i in 0..phi.len() {
            s += self.w[i] * phi[i];
        }
        s.tanh()
    }

    fn name(&self) -> &'static str {
        "features"
    }

    fn size(&self) -> usize {
        self.w.len() + 1
    }
}

fn predict_o<D: Num>(p: &[D], x: f64) -> D {
    let phi = [x, x * x, x.sin()];
    let mut s = p[3];
    for i in 0..3 {
        s += p[i] * phi[i];
    }
    s.tanh()
}

/// A scaling, generic over the float type, whose one method carries its own companion.
pub trait Shape<F> {
    fn apply(&self, x: F) -> F;
}

pub struct Scale<F> {
    pub s: F,
}

#[differentiable]
impl<F: Real> Shape<F> for Scale<F> {
    #[differentiable]
    #[autodiff_reverse(d_apply, Const, Active, Active)]
    fn apply(&self, x: F) -> F {
        self.s * x * x.sin()
    }
}

/// A line, whose inherent block is marked as a whole.
pub struct Line {
    pub m: f64,
}

#[differentiable]
impl Line {
    fn at(&self, x: f64) -> f64 {
        self.m * x + 1.0
    }

    fn label(&self) -> String {
        format!("y = {} x + 1", self.m)
    }

    fn steps(&self) -> usize {
        3
    }

    fn rises(&self) -> bool {
        self.m > 0.0
    }

    fn order() -> usize {
        2
    }
}

/// Squared error of the model over data points, with the model `Duplicated`.
#[autodiff_reverse(d_loss, Duplicated, Const, Const, Active)]
#[autodiff_forward(loss_jvp, Dual, Const, Const, Dual)]
fn loss(m: &Features, xs: &[f64], ys: &[f64]) -> f64 {
    let mut l = 0.0;
    for i in 0..xs.len() {
        let r = m.predict(xs[i]) - ys[i];
        l += r * r;
    }
    l
}

fn loss_o<D: Num>(p: &[D], xs: &[f64], ys: &[f64]) -> D {
    let mut l = D::zero();
    for i in 0..xs.len() {
        let r = predict_o(p, xs[i]) - ys[i];
        l += r * r;
    }
    l
}

/// The squared error divided by the model's size, an integer method of the block left
/// as written, by the number of steps an inherent integer method gives, and by an
/// associated function's integer; a `bool` method chooses. Methods left as written are
/// called through `no_grad`.
#[autodiff_reverse(d_sized_loss, Duplicated, Const, Const, Active)]
#[autodiff_forward(sized_loss_jvp, Dual, Const, Const, Dual)]
fn sized_loss(m: &Features, xs: &[f64], ys: &[f64]) -> f64 {
    let n = no_grad(m.size());
    let line = Line { m: 0.5 };
    let mut l = 0.0;
    for i in 0..xs.len() {
        let r = m.predict(xs[i]) - ys[i];
        l += if no_grad(line.rises()) { r * r } else { r };
    }
    l / (n * no_grad(line.steps()) * Line::order()) as f64
}

/// The gradient of `loss`, whose forward companion is the Hessian-vector product.
#[autodiff_forward(loss_hvp, Dual, Dual, Const, Const)]
fn loss_grad(m: &Features, dm: &mut Features, xs: &[f64], ys: &[f64]) {
    d_loss(m, dm, xs, ys, 1.0);
}

/// A generic trait method called at `f64`, through a model built in the function.
#[autodiff_reverse(d_scaled, Active, Active, Active)]
#[autodiff_forward(scaled_jvp, Dual, Dual, Dual)]
fn scaled(s: f64, x: f64) -> f64 {
    let m = Scale { s };
    let l = Line { m: s };
    m.apply(x) + m.apply(2.0 * x) + l.at(x).exp()
}

fn scaled_o<D: Num>(s: D, x: D) -> D {
    let f = |x: D| s * x * x.sin();
    f(x) + f(x * 2.0) + (s * x + 1.0).exp()
}

fn flat(m: &Features) -> Vec<f64> {
    let mut p = m.w.clone();
    p.push(m.b);
    p
}

fn features(p: &[f64]) -> Features {
    Features {
        w: p[..3].to_vec(),
        b: p[3],
    }
}

#[test]
fn methods_left_as_written_keep_working() {
    let m = features(&[0.1, 0.2, 0.3, 0.4]);
    assert_eq!(m.name(), "features");
    assert_eq!(m.size(), 4);
    assert_eq!(Line { m: 2.0 }.label(), "y = 2 x + 1");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_trait_method_in_both_modes_and_under_hvp(
        p in vecf(-1.0, 1.0, 4),
        xs in vecf(-1.5, 1.5, 5),
        ys in vecf(-1.0, 1.0, 5),
        dir in dirs(4),
        seed in seed(),
    ) {
        let m = features(&p);
        let (value, grad) = oracle_grad(|d| loss_o(d, &xs, &ys), &p);
        check("primal", loss(&m, &xs, &ys), value);

        let mut dm = features(&[0.0; 4]);
        let f = d_loss(&m, &mut dm, &xs, &ys, seed);
        check("value", f, value);
        let want: Vec<f64> = grad.iter().map(|g| g * seed).collect();
        check_all("gradient", &flat(&dm), &want);

        let (fv, t) = loss_jvp(&m, &features(&dir), &xs, &ys);
        check("forward value", fv, value);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());

        let (mut g, mut hv) = (features(&[0.0; 4]), features(&[0.0; 4]));
        loss_hvp(&m, &features(&dir), &mut g, &mut hv, &xs, &ys);
        check_all("gradient under H·v", &flat(&g), &grad);
        check_hvp(&flat(&hv), &p, &dir, |d| {
            let mut l = num_dual::HyperDual64::from(0.0);
            for i in 0..xs.len() {
                let phi = [xs[i], xs[i] * xs[i], xs[i].sin()];
                let mut s = d[3];
                for k in 0..3 {
                    s += d[k] * phi[k];
                }
                let r = s.tanh() - ys[i];
                l += r * r;
            }
            l
        });
    }

    #[test]
    fn integer_methods_read_by_differentiated_code(
        p in vecf(-1.0, 1.0, 4),
        xs in vecf(-1.5, 1.5, 5),
        ys in vecf(-1.0, 1.0, 5),
        dir in dirs(4),
    ) {
        let m = features(&p);
        let (value, grad) = oracle_grad(|d| loss_o(d, &xs, &ys) / 24.0, &p);
        let mut dm = features(&[0.0; 4]);
        check("value", d_sized_loss(&m, &mut dm, &xs, &ys, 1.0), value);
        check_all("gradient", &flat(&dm), &grad);
        let (_, t) = sized_loss_jvp(&m, &features(&dir), &xs, &ys);
        check("forward tangent", t, grad.iter().zip(&dir).map(|(g, d)| g * d).sum());
    }

    #[test]
    fn a_generic_trait_method_and_its_companion(s in float(-2.0, 2.0), x in float(-2.0, 2.0), seed in seed()) {
        let (value, grad) = oracle_grad(|d| scaled_o(d[0], d[1]), &[s, x]);
        let (f, ds, dx) = d_scaled(s, x, seed);
        check("value", f, value);
        check("d/ds", ds, grad[0] * seed);
        check("d/dx", dx, grad[1] * seed);
        let (fv, t) = scaled_jvp(s, 0.5, x, -1.0);
        check("forward value", fv, value);
        check("forward tangent", t, 0.5 * grad[0] - grad[1]);

        // The method's own companion, in the inherent block.
        let m = Scale { s };
        let (y, dy) = m.d_apply(x, seed);
        check("companion value", y, s * x * x.sin());
        check("companion adjoint", dy, seed * s * (x.sin() + x * x.cos()));
        let m32 = Scale { s: s as f32 };
        let (y32, _) = m32.d_apply(x as f32, 1.0);
        prop_assert!((f64::from(y32) - s * x * x.sin()).abs() < 1e-4 * (1.0 + y32.abs() as f64));
    }
}

/// A trait generic over the float type, implemented for every float type by a type that
/// names none (`impl<T: Real> Activation<T> for Softplus`).
pub trait Activation<T: Real> {
    fn act(&self, x: T) -> T;
}

#[differentiable]
pub struct Softplus {
    pub sharp: bool,
}

#[differentiable]
impl<T: Real> Activation<T> for Softplus {
    fn act(&self, x: T) -> T {
        if self.sharp {
            x.max(T::zero())
        } else {
            (T::one() + x.exp()).ln()
        }
    }
}

#[autodiff_forward(activated_jvp, Const, Dual, Dual)]
#[autodiff_reverse(activated_rev, Const, Duplicated, Active)]
fn activated(a: &Softplus, x: &[f64]) -> f64 {
    a.act(x[0]) * a.act(x[1] - x[0])
}

#[autodiff_reverse(activated32_rev, Const, Duplicated, Active)]
fn activated32(a: &Softplus, x: &[f32]) -> f32 {
    a.act(x[0]) * a.act(x[1])
}

fn softplus_o<D: Num>(x: D) -> D {
    (D::one() + x.exp()).ln()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_trait_generic_over_the_float_type(x in vecf(-2.0, 2.0, 2), v in dirs(2), s in seed()) {
        let a = Softplus { sharp: false };
        let d: Vec<Dual64> = seeded(&x, &v);
        let want = softplus_o(d[0]) * softplus_o(d[1] - d[0]);
        let (y, t) = activated_jvp(&a, &x, &v);
        check("value", y, want.re);
        check("tangent", t, want.eps);
        let mut g = [0.0; 2];
        activated_rev(&a, &x, &mut g, s);
        let gx: Vec<f64> = (0..2)
            .map(|k| {
                let d: Vec<Dual64> = seeded(&x, &[(k == 0) as i32 as f64, (k == 1) as i32 as f64]);
                (softplus_o(d[0]) * softplus_o(d[1] - d[0])).eps * s
            })
            .collect();
        check_all("gradient", &g, &gx);
        let x32 = [x[0] as f32, x[1] as f32];
        let mut g32 = [0.0f32; 2];
        activated32_rev(&a, &x32, &mut g32, 1.0);
        let sig = |t: f32| 1.0 / (1.0 + (-t).exp());
        let sp = |t: f32| (1.0 + t.exp()).ln();
        let want32 = [sig(x32[0]) * sp(x32[1]), sp(x32[0]) * sig(x32[1])];
        for k in 0..2 {
            prop_assert!((g32[k] - want32[k]).abs() <= 1e-5 * (1.0 + want32[k].abs()), "{g32:?} vs {want32:?}");
        }
    }
}

/// A loss chosen by a unit struct, called on the struct's value (`Squared.eval(..)`, `let
/// l = Squared; l.eval(..)`).
pub trait Loss {
    fn eval(&self, r: f64) -> f64;
}

#[differentiable]
pub struct Squared;

#[differentiable]
impl Loss for Squared {
    fn eval(&self, r: f64) -> f64 {
        r * r
    }
}

#[autodiff_forward(unit_losses_fwd, Dual, Dual)]
#[autodiff_reverse(unit_losses_rev, Duplicated, Active)]
fn unit_losses(x: &[f64]) -> f64 {
    let l = Squared;
    let mut s = Squared.eval(x[0] - 1.0);
    for i in 1..x.len() {
        s += l.eval(x[i] - x[i - 1].sin());
    }
    s
}

fn unit_losses_o<D: Num>(x: &[D]) -> D {
    let mut s = (x[0] - 1.0) * (x[0] - 1.0);
    for i in 1..x.len() {
        let r = x[i] - x[i - 1].sin();
        s += r * r;
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn methods_of_a_unit_struct_value(case in slice_seed_case(-1.5, 1.5, 1..6)) {
        let (x, v, s0, s) = case;
        check_slice("unit_losses", (&x, &v, &s0, s), unit_losses, unit_losses_fwd, unit_losses_rev, unit_losses_o::<Dual64>);
        check_hvp_of::<unit_losses_rev>(&x, &v, unit_losses_o);
    }
}
