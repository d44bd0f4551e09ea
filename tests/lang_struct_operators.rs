//! Operators implemented for a user's struct (`impl Add for V2`, `impl Mul<f64> for V2`,
//! `impl Neg for V2`, `impl AddAssign for V2`, ..), with `#[differentiable]` on each
//! `impl` block, used in differentiated code: `p = p + v * dt`, `-q`, `acc += v`,
//! operators nested in operands and in method calls' arguments, on locals built with
//! `let` and `let mut`, on elements of a slice of structs, on struct parameters (`*p`),
//! inside a `#[differentiable]` helper, on a struct generic over its float type, with a
//! float on the left (`impl Mul<V2> for f64`, `2.0 * v`), on values chosen by `if` and
//! `match`, and on a local closure's parameters.
//! Checked against num-dual in both modes, and under forward over reverse (H·v) against
//! `HyperDual64`.

// `p = p + v * dt` is a form under test, beside `v += a * dt`.
#![allow(clippy::assign_op_pattern)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

#[differentiable]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
impl Add for V2 {
    type Output = V2;
    fn add(self, o: V2) -> V2 {
        V2 {
            x: self.x + o.x,
            y: self.y + o.y,
        }
    }
}

#[differentiable]
impl Sub for V2 {
    type Output = Self;
    fn sub(self, o: Self) -> Self::Output {
        V2 {
            x: self.x - o.x,
            y: self.y - o.y,
        }
    }
}

/// Two implementations of one operator: by a float and by a struct (elementwise).
#[differentiable]
impl Mul<f64> for V2 {
    type Output = V2;
    fn mul(self, s: f64) -> V2 {
        V2 {
            x: self.x * s,
            y: self.y * s,
        }
    }
}

#[differentiable]
impl Mul for V2 {
    type Output = V2;
    fn mul(self, o: V2) -> V2 {
        V2 {
            x: self.x * o.x,
            y: self.y * o.y,
        }
    }
}

#[differentiable]
impl Div<f64> for V2 {
    type Output = V2;
    fn div(self, s: f64) -> V2 {
        V2 {
            x: self.x / s,
            y: self.y / s,
        }
    }
}

#[differentiable]
impl Neg for V2 {
    type Output = V2;
    fn neg(self) -> V2 {
        V2 {
            x: -self.x,
            y: -self.y,
        }
    }
}

#[differentiable]
impl AddAssign for V2 {
    fn add_assign(&mut self, o: V2) {
        self.x += o.x;
        self.y += o.y;
    }
}

#[differentiable]
impl SubAssign for V2 {
    fn sub_assign(&mut self, o: V2) {
        self.x -= o.x;
        self.y -= o.y;
    }
}

#[differentiable]
impl MulAssign<f64> for V2 {
    fn mul_assign(&mut self, s: f64) {
        self.x *= s;
        self.y *= s;
    }
}

/// A float on the left (`2.0 * v`, `1.0 - v`, `k / v`, `0.5 + v`): blocks of `f64`, one
/// of them the operator the other way round.
#[differentiable]
impl Mul<V2> for f64 {
    type Output = V2;
    fn mul(self, v: V2) -> V2 {
        v * self
    }
}

#[differentiable]
impl Sub<V2> for f64 {
    type Output = V2;
    fn sub(self, v: V2) -> Self::Output {
        V2 {
            x: self - v.x,
            y: self - v.y,
        }
    }
}

#[differentiable]
impl Div<V2> for f64 {
    type Output = V2;
    fn div(self, v: V2) -> V2 {
        V2 {
            x: self / (v.x * v.x + 1.0),
            y: self / v.y.exp(),
        }
    }
}

#[differentiable]
impl Add<V2> for f64 {
    type Output = V2;
    fn add(self, v: V2) -> V2 {
        let s: Self = self.sin();
        V2 {
            x: s + v.x,
            y: self + v.y,
        }
    }
}

#[differentiable]
impl V2 {
    pub fn dot(&self, o: &V2) -> f64 {
        self.x * o.x + self.y * o.y
    }
    pub fn norm(&self) -> f64 {
        self.dot(self).sqrt()
    }
}

#[differentiable]
impl V2 {
    /// Operators on `*self` inside a method.
    pub fn lerp(&self, o: &V2, t: f64) -> V2 {
        *self + (*o - *self) * t
    }

    /// `*self` bound to a local, and a result of the struct's type that only its name
    /// says is one.
    pub fn halved(&self) -> V2 {
        let v = *self;
        v * 0.5
    }
}

/// A sum assigned again in a helper (`acc = acc + *c`), and a struct a method returned
/// (its type unknown to the macro) on the left of `+`, known by the struct on the right.
#[differentiable]
fn mid3(a: &V2, b: &V2, c: &V2) -> V2 {
    let mut acc = *a + *b;
    acc = acc + *c;
    acc * (1.0 / 3.0)
}

#[autodiff_forward(blend_fwd, Dual, Dual)]
#[autodiff_reverse(blend_rev, Duplicated, Active)]
fn blend(x: &[f64]) -> f64 {
    let p0 = V2 { x: x[0], y: x[1] };
    let p1 = V2 { x: x[2], y: x[3] };
    let p2 = V2 {
        x: x[1],
        y: x[0] * x[2],
    };
    let c: V2 = mid3(&p0, &p1, &p2);
    let m = p0.lerp(&c, 0.3);
    let r = m + c * x[2];
    let d = r - p1 * x[3].sin();
    d.dot(&d) + r.dot(&m)
}

fn blend_oracle<D: Num>(x: &[D]) -> D {
    let (p0, p1, p2) = ([x[0], x[1]], [x[2], x[3]], [x[1], x[0] * x[2]]);
    let third = c::<D>(1.0 / 3.0);
    let cc = [
        (p0[0] + p1[0] + p2[0]) * third,
        (p0[1] + p1[1] + p2[1]) * third,
    ];
    let m = [
        p0[0] + (cc[0] - p0[0]) * c::<D>(0.3),
        p0[1] + (cc[1] - p0[1]) * c::<D>(0.3),
    ];
    let r = [m[0] + cc[0] * x[2], m[1] + cc[1] * x[2]];
    let d = [r[0] - p1[0] * x[3].sin(), r[1] - p1[1] * x[3].sin()];
    d[0] * d[0] + d[1] * d[1] + r[0] * m[0] + r[1] * m[1]
}

/// A damped spring integrated by semi-implicit Euler, written with the operators.
#[autodiff_forward(orbit_fwd, Dual, Dual)]
#[autodiff_reverse(orbit_rev, Duplicated, Active)]
fn orbit(x: &[f64]) -> f64 {
    let k = x[4];
    let mut p = V2 { x: x[0], y: x[1] };
    let mut v = V2 { x: x[2], y: x[3] };
    let dt = 0.1;
    for _ in 0..8 {
        let a = -p * k - v * 0.2;
        v += a * dt;
        p = p + v * dt;
    }
    let mut acc = V2 { x: 0.0, y: 0.0 };
    acc -= p / 2.0;
    acc *= k;
    acc.dot(&(v * p)) + (p - v).norm()
}

fn orbit_oracle<D: Num>(x: &[D]) -> D {
    let k = x[4];
    let (mut p, mut v) = ([x[0], x[1]], [x[2], x[3]]);
    let dt = c::<D>(0.1);
    for _ in 0..8 {
        let a = [
            -p[0] * k - v[0] * c::<D>(0.2),
            -p[1] * k - v[1] * c::<D>(0.2),
        ];
        v = [v[0] + a[0] * dt, v[1] + a[1] * dt];
        p = [p[0] + v[0] * dt, p[1] + v[1] * dt];
    }
    let acc = [-p[0] / c::<D>(2.0) * k, -p[1] / c::<D>(2.0) * k];
    let (d0, d1) = (p[0] - v[0], p[1] - v[1]);
    acc[0] * v[0] * p[0] + acc[1] * v[1] * p[1] + (d0 * d0 + d1 * d1).sqrt()
}

/// A float on the left of `*`, `/`, `+` and `-`: literals, parameters' elements, a local,
/// arithmetic of floats, in a loop and nested in other operators.
#[autodiff_forward(scaled_fwd, Dual, Dual)]
#[autodiff_reverse(scaled_rev, Duplicated, Active)]
fn scaled(x: &[f64]) -> f64 {
    let p = V2 { x: x[0], y: x[1] };
    let dt = x[2];
    let mut q = 2.0 * p + dt * (p * 0.5);
    for _ in 0..3 {
        q = q - (0.5 * dt) * q;
    }
    let h: V2 = q.halved();
    let r = 1.0 - h;
    let s = x[3] / r;
    let u = (2.0 * x[0]) + s;
    s.dot(&q) + u.norm() + (dt * u).x
}

fn scaled_oracle<D: Num>(x: &[D]) -> D {
    let (p, dt) = ([x[0], x[1]], x[2]);
    let half = c::<D>(0.5);
    let mut q = [
        c::<D>(2.0) * p[0] + dt * (p[0] * half),
        c::<D>(2.0) * p[1] + dt * (p[1] * half),
    ];
    for _ in 0..3 {
        q = [q[0] - half * dt * q[0], q[1] - half * dt * q[1]];
    }
    let r = [c::<D>(1.0) - q[0] * half, c::<D>(1.0) - q[1] * half];
    let s = [x[3] / (r[0] * r[0] + c::<D>(1.0)), x[3] / r[1].exp()];
    let k = c::<D>(2.0) * x[0];
    let u = [k.sin() + s[0], k + s[1]];
    s[0] * q[0] + s[1] * q[1] + (u[0] * u[0] + u[1] * u[1]).sqrt() + dt * u[0]
}

/// Struct values chosen by `if` and `match` (operators on structs in the branches, or calls
/// where the `let` names the type), then operands and receivers.
#[autodiff_forward(chosen_fwd, Dual, Dual)]
#[autodiff_reverse(chosen_rev, Duplicated, Active)]
fn chosen(x: &[f64]) -> f64 {
    let p = V2 { x: x[0], y: x[1] };
    let q = V2 {
        x: x[2],
        y: x[0] * x[1],
    };
    let r = if x[0] > 0.0 { p + q } else { p - q * 2.0 };
    let s = match x[1] > 0.25 {
        true => r * 3.0,
        false => r,
    };
    let t: V2 = if x[2] > 0.0 { s } else { s - r };
    let w: V2 = if x[1] > 0.0 {
        p.lerp(&q, 0.3)
    } else {
        q.lerp(&p, x[2])
    };
    r.dot(&t) + (s * x[2]).norm() + w.dot(&r)
}

fn chosen_oracle<D: Num>(x: &[D]) -> D {
    let (p, q) = ([x[0], x[1]], [x[2], x[0] * x[1]]);
    let r = if x[0].re() > 0.0 {
        [p[0] + q[0], p[1] + q[1]]
    } else {
        [p[0] - q[0] * c::<D>(2.0), p[1] - q[1] * c::<D>(2.0)]
    };
    let s = if x[1].re() > 0.25 {
        [r[0] * c::<D>(3.0), r[1] * c::<D>(3.0)]
    } else {
        r
    };
    let t = if x[2].re() > 0.0 {
        s
    } else {
        [s[0] - r[0], s[1] - r[1]]
    };
    let (a, b) = (s[0] * x[2], s[1] * x[2]);
    let lerp = |u: [D; 2], v: [D; 2], k: D| [u[0] + (v[0] - u[0]) * k, u[1] + (v[1] - u[1]) * k];
    let w = if x[1].re() > 0.0 {
        lerp(p, q, c::<D>(0.3))
    } else {
        lerp(q, p, x[2])
    };
    r[0] * t[0] + r[1] * t[1] + (a * a + b * b).sqrt() + w[0] * r[0] + w[1] * r[1]
}

/// Operators on elements of a slice of structs and on struct parameters, through a
/// `#[differentiable]` helper.
#[differentiable]
fn midpoint(a: &V2, b: &V2) -> V2 {
    (*a + *b) * 0.5
}

#[autodiff_reverse(spread_rev, Duplicated, Duplicated, Active)]
fn spread(ps: &[V2], w: &[f64]) -> f64 {
    // A closure whose parameters name the struct type, given elements and an operator's
    // value.
    let g = |a: V2, b: V2| (a - b).dot(&(a + b));
    let mut s = 0.0;
    for i in 1..ps.len() {
        let m: V2 = midpoint(&ps[i - 1], &ps[i]);
        let d = ps[i] - m * w[0];
        s += d.dot(&d) * w[1];
    }
    s + g(ps[0], ps[1] * w[1])
}

fn spread_oracle<D: Num>(z: &[D]) -> D {
    // z: the points' coordinates, then w.
    let n = (z.len() - 2) / 2;
    let w = &z[2 * n..];
    let mut s = c::<D>(0.0);
    for i in 1..n {
        let m = [
            (z[2 * i - 2] + z[2 * i]) * c::<D>(0.5),
            (z[2 * i - 1] + z[2 * i + 1]) * c::<D>(0.5),
        ];
        let d = [z[2 * i] - m[0] * w[0], z[2 * i + 1] - m[1] * w[0]];
        s += (d[0] * d[0] + d[1] * d[1]) * w[1];
    }
    // (a - b)·(a + b) = |a|² - |b|², with a = ps[0] and b = ps[1] w[1].
    let (b0, b1) = (z[2] * w[1], z[3] * w[1]);
    s + z[0] * z[0] + z[1] * z[1] - b0 * b0 - b1 * b1
}

/// Members of a struct that are structs themselves, bound by `let`s that name their type
/// (`let p: V2 = bs[i].pos;`), then operands.
#[differentiable]
#[derive(Clone, Copy, Debug)]
pub struct Body {
    pub pos: V2,
    pub vel: V2,
    pub m: f64,
}

#[autodiff_reverse(pairwise_rev, Duplicated, Active)]
fn pairwise(bs: &[Body]) -> f64 {
    let mut e = 0.0;
    for i in 0..bs.len() {
        let p: V2 = bs[i].pos;
        let v: V2 = bs[i].vel;
        let q = p + v * 0.1;
        for j in 0..i {
            let o: V2 = bs[j].pos;
            let d = q - o;
            e += bs[i].m * bs[j].m / (d.dot(&d) + 0.5).sqrt();
        }
    }
    e
}

fn pairwise_oracle<D: Num>(z: &[D]) -> D {
    // z: per body pos.x, pos.y, vel.x, vel.y, m.
    let b = |i: usize| &z[5 * i..5 * i + 5];
    let mut e = c::<D>(0.0);
    for i in 0..z.len() / 5 {
        let q = [
            b(i)[0] + b(i)[2] * c::<D>(0.1),
            b(i)[1] + b(i)[3] * c::<D>(0.1),
        ];
        for j in 0..i {
            let d = [q[0] - b(j)[0], q[1] - b(j)[1]];
            e += b(i)[4] * b(j)[4] / (d[0] * d[0] + d[1] * d[1] + c::<D>(0.5)).sqrt();
        }
    }
    e
}

/// The same operators on a struct generic over its float type.
#[differentiable]
#[derive(Clone, Copy, Debug)]
pub struct G<T: num_traits::Float> {
    pub a: T,
    pub b: T,
}

#[differentiable]
impl<T: num_traits::Float> Add for G<T> {
    type Output = G<T>;
    fn add(self, o: G<T>) -> G<T> {
        G {
            a: self.a + o.a,
            b: self.b + o.b,
        }
    }
}

#[differentiable]
impl<T: num_traits::Float> Mul<T> for G<T> {
    type Output = G<T>;
    fn mul(self, s: T) -> G<T> {
        G {
            a: self.a * s,
            b: self.b * s.sin(),
        }
    }
}

#[autodiff_forward(generic_fwd, Dual, Dual)]
#[autodiff_reverse(generic_rev, Duplicated, Active)]
fn generic(x: &[f64]) -> f64 {
    let g = G { a: x[0], b: x[1] };
    let h = (g + g * x[1]) * 0.5 + g;
    h.a * h.b
}

fn generic_oracle<D: Num>(x: &[D]) -> D {
    let (a, b) = (x[0], x[1]);
    let (sa, sb) = (a * x[1], b * x[1].sin());
    let (ha, hb) = ((a + sa) * c::<D>(0.5) + a, (b + sb) * c::<D>(0.5).sin() + b);
    ha * hb
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn operators_of_a_struct_in_a_loop(
        (x, v, s0) in slice_case(-1.0, 1.0, 5..6, 0), s in seed(),
    ) {
        check_slice("orbit", (&x, &v, &s0, s), orbit, orbit_fwd, orbit_rev, orbit_oracle::<Dual64>);
        check_hvp_of::<orbit_rev>(&x, &v, orbit_oracle);
    }

    #[test]
    fn operators_in_methods_and_helpers(
        (x, v, s0) in slice_case(-1.0, 1.0, 4..5, 0), s in seed(),
    ) {
        check_slice("blend", (&x, &v, &s0, s), blend, blend_fwd, blend_rev, blend_oracle::<Dual64>);
        check_hvp_of::<blend_rev>(&x, &v, blend_oracle);
    }

    #[test]
    fn operators_with_a_float_on_the_left(
        (x, v, s0) in slice_case(-1.0, 1.0, 4..5, 0), s in seed(),
    ) {
        check_slice("scaled", (&x, &v, &s0, s), scaled, scaled_fwd, scaled_rev, scaled_oracle::<Dual64>);
        check_hvp_of::<scaled_rev>(&x, &v, scaled_oracle);
    }

    #[test]
    fn struct_values_chosen_by_branches(
        (x, v, s0) in slice_case(-1.0, 1.0, 3..4, 0), s in seed(),
    ) {
        check_slice("chosen", (&x, &v, &s0, s), chosen, chosen_fwd, chosen_rev, chosen_oracle::<Dual64>);
        check_hvp_of::<chosen_rev>(&x, &v, chosen_oracle);
    }

    #[test]
    fn operators_on_elements_and_parameters(
        z in vecf(-1.0, 1.0, 10), w in vecf(-1.0, 1.0, 2),
    ) {
        let ps: Vec<V2> = z.chunks(2).map(|c| V2 { x: c[0], y: c[1] }).collect();
        let mut dps = vec![V2 { x: 0.0, y: 0.0 }; ps.len()];
        let mut dw = vec![0.0; 2];
        let value = spread_rev(&ps, &mut dps, &w, &mut dw, 1.0);
        let mut all = z.clone();
        all.extend_from_slice(&w);
        let (want, grad) = oracle_grad(spread_oracle, &all);
        check("spread", value, want);
        let mut got: Vec<f64> = dps.iter().flat_map(|p| [p.x, p.y]).collect();
        got.extend_from_slice(&dw);
        check_all("spread gradient", &got, &grad);
    }

    #[test]
    fn operators_on_members_that_are_structs(z in vecf(-1.0, 1.0, 15)) {
        let bs: Vec<Body> = z
            .chunks(5)
            .map(|c| Body { pos: V2 { x: c[0], y: c[1] }, vel: V2 { x: c[2], y: c[3] }, m: c[4] })
            .collect();
        let zero = V2 { x: 0.0, y: 0.0 };
        let mut dbs = vec![Body { pos: zero, vel: zero, m: 0.0 }; bs.len()];
        let value = pairwise_rev(&bs, &mut dbs, 1.0);
        let (want, grad) = oracle_grad(pairwise_oracle, &z);
        check("pairwise", value, want);
        let got: Vec<f64> = dbs
            .iter()
            .flat_map(|b| [b.pos.x, b.pos.y, b.vel.x, b.vel.y, b.m])
            .collect();
        check_all("pairwise gradient", &got, &grad);
    }

    #[test]
    fn operators_of_a_generic_struct(
        (x, v, s0) in slice_case(-1.0, 1.0, 2..3, 0), s in seed(),
    ) {
        check_slice("generic", (&x, &v, &s0, s), generic, generic_fwd, generic_rev, generic_oracle::<Dual64>);
        check_hvp_of::<generic_rev>(&x, &v, generic_oracle);
    }
}
