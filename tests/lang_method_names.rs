//! A struct's own methods named as float builtins, iterator adapters or lengths (`abs`,
//! `exp`, `powi`, `max`, `sum`, `rev`, `skip`, `len`, `count`): on a struct built in the function, on a struct
//! parameter, and on a struct a call returned whose type the `let` writes (`let e: C =
//! z.exp();`), they are the user's methods, differentiated as such. Checked against
//! num-dual in both modes and under forward over reverse (H·v).

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// A complex number.
#[derive(Clone, Copy, Debug)]
#[differentiable]
pub struct C {
    pub re: f64,
    pub im: f64,
}

impl C {
    #[differentiable]
    pub fn abs(&self) -> f64 {
        (self.re * self.re + self.im * self.im).sqrt()
    }

    #[differentiable]
    pub fn exp(&self) -> C {
        let r = self.re.exp();
        C {
            re: r * self.im.cos(),
            im: r * self.im.sin(),
        }
    }

    #[differentiable]
    pub fn mul(&self, o: &C) -> C {
        C {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }

    #[differentiable]
    pub fn powi(&self, n: i32) -> C {
        let mut r = C { re: 1.0, im: 0.0 };
        for _ in 0..n {
            r = r.mul(self);
        }
        r
    }

    #[differentiable]
    pub fn max(&self, o: &C) -> f64 {
        if self.re > o.re { self.re } else { o.re }
    }

    #[differentiable]
    pub fn sum(&self) -> f64 {
        self.re + self.im
    }

    #[differentiable]
    pub fn rev(&self) -> C {
        C {
            re: self.im,
            im: self.re,
        }
    }

    #[differentiable]
    pub fn skip(&self, k: f64) -> f64 {
        self.re * k
    }

    /// Named as a length, which a buffer's `len()` gives without a derivative.
    #[differentiable]
    pub fn len(&self) -> f64 {
        self.re * self.re + self.im
    }

    #[differentiable]
    pub fn count(&self, k: f64) -> f64 {
        self.im * k
    }
}

/// Every method on a struct built here, and on the struct one of them returned.
#[autodiff_forward(local_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(local_rev, Active, Active, Active)]
fn local(a: f64, b: f64) -> f64 {
    let z = C { re: a, im: b };
    let e: C = z.exp();
    let sq = z.powi(2);
    let h = C { re: 0.5, im: 0.0 };
    z.abs() + e.abs() * e.im + sq.re + sq.im + z.max(&h) + z.sum() + z.rev().skip(2.0)
        - z.rev().sum()
        + z.len()
        + z.count(3.0)
}

/// The same on a struct parameter.
#[autodiff_forward(param_fwd, Dual, Dual)]
#[autodiff_reverse(param_rev, Duplicated, Active)]
fn param(z: &C) -> f64 {
    let e: C = z.exp();
    let sq = z.powi(2);
    let h = C { re: 0.5, im: 0.0 };
    z.abs() + e.abs() * e.im + sq.re + sq.im + z.max(&h) + z.sum() + z.rev().skip(2.0)
        - z.rev().sum()
        + z.len()
        + z.count(3.0)
}

fn oracle<D: Num>(a: D, b: D) -> D {
    let abs = (a * a + b * b).sqrt();
    let (er, ei) = (a.exp() * b.cos(), a.exp() * b.sin());
    let (sr, si) = (a * a - b * b, (a + a) * b);
    let mx = if a.re() > 0.5 { a } else { c(0.5) };
    abs + (er * er + ei * ei).sqrt() * ei + sr + si + mx + (a + b) + b * c::<D>(2.0) - (b + a)
        + a * a
        + b
        + b * c::<D>(3.0)
}

#[autodiff_reverse(on_slice_rev, Duplicated, Active)]
fn on_slice(x: &[f64]) -> f64 {
    local(x[0], x[1]) + param(&C { re: x[1], im: x[0] })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn methods_named_as_builtins_on_a_local_struct(
        x in vecf(-1.5, 1.5, 2),
        v in dirs(2),
        s in seed(),
    ) {
        check2("local", ([x[0], x[1]], [v[0], v[1]], s), local, local_fwd, local_rev, oracle);
    }

    #[test]
    fn methods_named_as_builtins_on_a_struct_parameter(
        x in vecf(-1.5, 1.5, 2),
        v in dirs(2),
        s in seed(),
    ) {
        let z = C { re: x[0], im: x[1] };
        let (value, tangent) = param_fwd(&z, &C { re: v[0], im: v[1] });
        let (want, grad) = oracle_grad(|d| oracle(d[0], d[1]), &x);
        check("param", param(&z), want);
        check("param_fwd value", value, want);
        check("param_fwd tangent", tangent, grad[0] * v[0] + grad[1] * v[1]);
        let mut dz = C { re: 0.25, im: -0.5 };
        check("param_rev value", param_rev(&z, &mut dz, s), want);
        check("param_rev re", dz.re, 0.25 + s * grad[0]);
        check("param_rev im", dz.im, -0.5 + s * grad[1]);
    }

    #[test]
    fn hessian_vector_products_through_methods_named_as_builtins(
        x in vecf(-1.5, 1.5, 2),
        v in dirs(2),
    ) {
        check_hvp_of::<on_slice_rev>(&x, &v, |d| oracle(d[0], d[1]) + oracle(d[1], d[0]));
    }
}

/// A running statistic whose method is named as `Vec::push`.
#[differentiable]
#[derive(Clone)]
pub struct Running {
    pub s: f64,
}

#[differentiable]
impl Running {
    fn push(&mut self, v: f64) {
        self.s += v * v;
    }
}

#[autodiff_reverse(d_pushed_squares, Duplicated, Active)]
#[autodiff_forward(pushed_squares_jvp, Dual, Dual)]
fn pushed_squares(x: &[f64]) -> f64 {
    let mut r = Running { s: 0.0 };
    for &v in x {
        r.push(v);
    }
    r.s
}

#[test]
fn a_struct_method_named_push() {
    let x = [0.5, -2.0, 1.25];
    let want: f64 = x.iter().map(|v| v * v).sum();
    let mut g = [0.0; 3];
    assert!((d_pushed_squares(&x, &mut g, 1.0) - want).abs() < 1e-15);
    for i in 0..3 {
        assert!((g[i] - 2.0 * x[i]).abs() < 1e-15);
    }
    let (v, t) = pushed_squares_jvp(&x, &[1.0, 0.5, -1.0]);
    assert!((v - want).abs() < 1e-15);
    assert!((t - (2.0 * x[0] + x[1] - 2.0 * x[2])).abs() < 1e-14);
}

/// Raw identifiers as parameter names (`r#in`), of a function and of a method.
#[autodiff_reverse(raw_named_rev, Active, Active)]
#[autodiff_forward(raw_named_fwd, Dual, Dual)]
fn raw_named(r#in: f64) -> f64 {
    let r#type = r#in.sin();
    r#in * r#type + C { re: r#in, im: 0.5 }.scaled_by(r#in)
}

impl C {
    #[differentiable]
    pub fn scaled_by(&self, r#as: f64) -> f64 {
        self.re * r#as + self.im
    }
}

#[test]
fn raw_identifiers_as_names() {
    for x in [0.7_f64, -1.3, 2.0] {
        // x·sin x + x² + 0.5.
        let want = x.sin() + x * x.cos() + 2.0 * x;
        let (y, g) = raw_named_rev(x, 1.0);
        assert_eq!(y, raw_named(x));
        assert!(
            (g - want).abs() <= 1e-12 * (1.0 + want.abs()),
            "{g} vs {want}"
        );
        let (_, t) = raw_named_fwd(x, 1.0);
        assert!(
            (t - want).abs() <= 1e-12 * (1.0 + want.abs()),
            "{t} vs {want}"
        );
    }
}
