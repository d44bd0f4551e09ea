//! Methods called through their type's path (`P::dot(&a, &b)`, `Self::norm2(self)`,
//! `P::shift(&mut b, d)`), beside associated functions called the same way
//! (`P::dist(&a, &b)`): one calling convention serves both. Checked against num-dual in
//! both modes and under forward over reverse (H·v), and on a `Duplicated` struct.

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// A point.
#[derive(Clone, Debug, Default)]
#[differentiable]
pub struct P {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl P {
    pub fn dot(&self, o: &P) -> f64 {
        self.x * o.x + self.y * o.y
    }

    pub fn norm2(&self) -> f64 {
        self.x * self.x + self.y * self.y
    }

    /// Calls its sibling through `Self::` and through the type's name.
    pub fn scaled_norm(&self, k: f64) -> f64 {
        Self::norm2(self) * k + P::dot(self, &P { x: 1.0, y: -2.0 }) + self.x.sin()
    }

    pub fn shift(&mut self, d: f64) {
        self.x += d * self.y;
        self.y *= d;
    }

    /// An associated function, called the same way.
    pub fn dist(a: &P, b: &P) -> f64 {
        ((a.x - b.x).powi(2) + (a.y - b.y).powi(2) + 1.0).sqrt()
    }
}

/// Points built from `x`, then every call written through the type's path.
#[autodiff_forward(paths_fwd, Dual, Dual)]
#[autodiff_reverse(paths_rev, Duplicated, Active)]
fn paths(x: &[f64]) -> f64 {
    let a = P { x: x[0], y: x[1] };
    let mut b = P {
        x: x[2],
        y: x[0] * x[1],
    };
    P::shift(&mut b, x[1]);
    let s = P::scaled_norm(&a, x[2]) + P::dot(&a, &b) + P::dist(&a, &b);
    s + a.scaled_norm(2.0) * P::norm2(&b).cos()
}

fn scaled_norm_o<D: Num>(a: [D; 2], k: D) -> D {
    (a[0] * a[0] + a[1] * a[1]) * k + (a[0] - a[1] * 2.0) + a[0].sin()
}

fn paths_o<D: Num>(x: &[D]) -> D {
    let a = [x[0], x[1]];
    let b = [x[2] + x[1] * (x[0] * x[1]), x[0] * x[1] * x[1]];
    let dot = a[0] * b[0] + a[1] * b[1];
    let dist = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + 1.0).sqrt();
    let s = scaled_norm_o(a, x[2]) + dot + dist;
    s + scaled_norm_o(a, D::from(2.0)) * (b[0] * b[0] + b[1] * b[1]).cos()
}

/// A `Duplicated` point, its method called through the type's path.
#[autodiff_forward(on_param_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(on_param_rev, Duplicated, Active, Active)]
fn on_param(p: &P, k: f64) -> f64 {
    P::scaled_norm(p, k) - P::dist(p, &P { x: k, y: 0.5 })
}

fn on_param_o<D: Num>(z: &[D]) -> D {
    let dist = ((z[0] - z[2]).powi(2) + (z[1] - 0.5).powi(2) + 1.0).sqrt();
    scaled_norm_o([z[0], z[1]], z[2]) - dist
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn methods_and_associated_functions_through_the_type((x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed()) {
        check_slice("paths", (&x, &v, &s0, s), paths, paths_fwd, paths_rev, paths_o::<Dual64>);
        check_hvp_of::<paths_rev>(&x, &v, paths_o);
    }

    #[test]
    fn a_duplicated_struct_through_the_type(z in vecf(-1.0, 1.0, 3), v in dirs(3), s in seed()) {
        let p = P { x: z[0], y: z[1] };
        let (f, df) = on_param_fwd(&p, &P { x: v[0], y: v[1] }, z[2], v[2]);
        let (want, want_t) = oracle_jvp(|d| vec![on_param_o(d)], &z, &v);
        check("value", f, want[0]);
        check("tangent", df, want_t[0]);
        let mut dp = P { x: 0.25, y: -0.5 };
        let (r, dk) = on_param_rev(&p, &mut dp, z[2], s);
        let grad = oracle_vjp(|d| vec![on_param_o(d)], &z, &[s]);
        check("reverse value", r, want[0]);
        check("adjoint of p.x", dp.x - 0.25, grad[0]);
        check("adjoint of p.y", dp.y + 0.5, grad[1]);
        check("adjoint of k", dk, grad[2]);
    }
}
