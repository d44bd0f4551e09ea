//! Struct values built inside differentiated code: `Point { x, y }` literals and tuple
//! structs `Pair(a, b)` from values that carry derivatives, bound with `let`, built in an
//! argument or a method receiver, their members read, written and assigned again from a
//! literal, given to `#[differentiable]` functions and methods, in both modes against
//! num-dual and under forward over reverse against `HyperDual64`.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// Neither `Clone` nor `Copy`: struct values built in differentiated code need neither.
#[derive(Debug)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    #[differentiable]
    pub fn norm2(&self) -> f64 {
        self.x * self.x + self.y * self.y
    }
}

#[derive(Debug)]
pub struct Pair(pub f64, pub f64);

/// A struct with a constant member that is not a float.
#[derive(Debug)]
pub struct Tagged {
    pub value: f64,
    pub weight: usize,
}

#[differentiable]
fn cross(a: &Point, b: &Point) -> f64 {
    a.x * b.y - a.y * b.x
}

/// Immutable struct values: bound with `let`, built as an argument and as a receiver,
/// with a constant member, a tuple struct, and read member by member.
#[autodiff_forward(built_fwd, Dual, Dual)]
#[autodiff_reverse(built_rev, Duplicated, Active)]
fn built(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let p = Point {
            x: x[i] * x[i + 1],
            y: x[i + 1].sin(),
        };
        let q = Point { x: 0.5, y: x[i] };
        let pair = Pair(p.x - q.y, 2.0);
        let t = Tagged {
            value: pair.0 * pair.1,
            weight: i + 1,
        };
        s += (1.0 + p.norm2()).sqrt()
            + cross(
                &p,
                &Point {
                    x: pair.1,
                    y: pair.0,
                },
            );
        if t.weight % 2 == 1 {
            s -= t.value;
        } else {
            s += t.value;
        }
        s += Point { x: q.y, y: p.y }.norm2() * cross(&q, &p);
    }
    s
}

fn built_o<D: Num>(x: &[D]) -> D {
    let norm2 = |a: D, b: D| a * a + b * b;
    let cross = |ax: D, ay: D, bx: D, by: D| ax * by - ay * bx;
    let mut s = c::<D>(0.0);
    for i in 0..x.len() - 1 {
        let (px, py) = (x[i] * x[i + 1], x[i + 1].sin());
        let (qx, qy) = (c::<D>(0.5), x[i]);
        let (p0, p1) = (px - qy, c::<D>(2.0));
        let value = p0 * p1;
        s += (norm2(px, py) + 1.0).sqrt() + cross(px, py, p1, p0);
        if (i + 1) % 2 == 1 {
            s -= value;
        } else {
            s += value;
        }
        s += norm2(qy, py) * cross(qx, qy, px, py);
    }
    s
}

/// A mutable struct value: members updated, the whole assigned again from a literal that
/// reads its old members, passed by reference (no method call on it, so it nests).
#[autodiff_forward(state_fwd, Dual, Dual)]
#[autodiff_reverse(state_rev, Duplicated, Active)]
fn state(x: &[f64]) -> f64 {
    let mut st = Point { x: 1.0, y: 0.0 };
    let mut s = 0.0;
    for i in 0..x.len() {
        st = Point {
            x: st.x * x[i] + st.y,
            y: st.x,
        };
        s += cross(&st, &Point { x: x[i], y: 1.0 });
        st.y *= 0.9;
        st.x += 0.1 * x[i].cos();
    }
    s + st.x * st.y
}

fn state_o<D: Num>(x: &[D]) -> D {
    let (mut sx, mut sy) = (c::<D>(1.0), c::<D>(0.0));
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        let (nx, ny) = (sx * x[i] + sy, sx);
        (sx, sy) = (nx, ny);
        s += sx * 1.0 - sy * x[i];
        sy *= 0.9;
        sx += x[i].cos() * 0.1;
    }
    s + sx * sy
}

/// A mutable struct value whose method is called: the reverse sweep saves its members
/// around the call (the struct need not be `Clone`).
#[autodiff_forward(stepped_fwd, Dual, Dual)]
#[autodiff_reverse(stepped_rev, Duplicated, Active)]
fn stepped(x: &[f64]) -> f64 {
    let mut q = Point { x: 1.0, y: 0.0 };
    let mut s = 0.0;
    for i in 0..x.len() {
        q = Point {
            x: q.x * x[i] + q.y,
            y: q.x,
        };
        s += q.norm2();
        q.y *= 0.9;
    }
    s
}

fn stepped_o<D: Num>(x: &[D]) -> D {
    let (mut qx, mut qy) = (c::<D>(1.0), c::<D>(0.0));
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        (qx, qy) = (qx * x[i] + qy, qx);
        s += qx * qx + qy * qy;
        qy *= 0.9;
    }
    s
}

/// A struct value of constants only (`k` is `Const`), given to a method and a function that
/// differentiate it: it gets a zero shadow built member by member.
#[autodiff_forward(constant_fwd, Dual, Const, Dual)]
#[autodiff_reverse(constant_rev, Duplicated, Const, Active)]
fn constant(x: &[f64], k: f64) -> f64 {
    let c = Point { x: k, y: 2.0 * k };
    let mut s = 0.0;
    for i in 0..x.len() {
        s += c.norm2() * x[i] + cross(&c, &Point { x: x[i], y: 1.0 }) * x[i];
    }
    s
}

fn constant_o<D: Num>(x: &[D], k: f64) -> D {
    let (cx, cy) = (k, 2.0 * k);
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        s += x[i] * (cx * cx + cy * cy) + (c::<D>(cx) - x[i] * cy) * x[i];
    }
    s
}

/// A struct parameter with an integer member converted by `as`: no derivative, whatever
/// the shadow's copy of the member holds.
#[derive(Clone, Debug)]
pub struct Counted {
    pub w: f64,
    pub n: usize,
}

#[autodiff_forward(counted_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(counted_rev, Duplicated, Duplicated, Active)]
fn counted(c: &Counted, x: &[f64]) -> f64 {
    let k = Tagged {
        value: c.w,
        weight: 3,
    };
    let mut s = 0.0;
    for i in 0..x.len() {
        s += c.w * x[i] * x[i] / c.n as f64 + k.value * k.weight as f64;
    }
    s
}

/// Generic over the float type: the struct's type is inferred from its members.
#[derive(Clone, Copy, Debug)]
pub struct Vec2<T> {
    pub x: T,
    pub y: T,
}

#[autodiff_forward(polar_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(polar_rev, Active, Active, Active)]
fn polar<T: Real>(r: T, t: T) -> T {
    let (x, y) = (r * t.cos(), r * t.sin());
    let v = Vec2 { x, y };
    let w = Vec2 {
        x: v.y,
        y: v.x * v.x,
    };
    (v.x * w.x + v.y * w.y).tanh()
}

fn polar_o<D: Num>(r: D, t: D) -> D {
    let (vx, vy) = (r * t.cos(), r * t.sin());
    (vx * vy + vy * vx * vx).tanh()
}

/// An accumulator whose state starts at constants and that `&mut self` methods update
/// from values that carry derivatives.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Acc {
    pub s: f64,
    pub k: f64,
}

impl Acc {
    #[differentiable]
    fn add(&mut self, v: f64) {
        self.s += v;
    }

    #[differentiable]
    fn bump(&mut self, v: f64) {
        self.k += v;
    }

    #[differentiable]
    fn apply(&self, v: f64) -> f64 {
        self.k * v * v + self.s
    }

    /// A nonlinear update: its reverse sweep needs the state before it (the caller
    /// saves the whole struct around the call and puts it back).
    #[differentiable]
    fn grow(&mut self, v: f64) {
        self.s *= (v * self.k).sin();
        self.k += self.s * v;
    }

    #[differentiable]
    fn dot(&self, o: &Acc) -> f64 {
        self.s * o.s + self.k * o.k
    }
}

/// A mutable struct value given twice to one method, as its receiver and its argument
/// (`a.dot(&a)`). A member assigned from itself, written out.
#[allow(clippy::assign_op_pattern)]
#[autodiff_forward(self_dot_fwd, Dual, Dual)]
#[autodiff_reverse(self_dot_rev, Duplicated, Active)]
fn self_dot(x: &[f64]) -> f64 {
    let mut a = Acc { s: x[0], k: 1.0 };
    for i in 0..x.len() {
        a.k *= x[i].cos();
    }
    a.s = a.s * a.k;
    a.dot(&a)
}

fn self_dot_o<D: Num>(x: &[D]) -> D {
    let k = x.iter().fold(D::one(), |k, v| k * v.cos());
    let s = x[0] * k;
    s * s + k * k
}

/// Struct values built from constants that methods then make depend on `x`.
#[autodiff_forward(accumulated_fwd, Dual, Dual)]
#[autodiff_reverse(accumulated_rev, Duplicated, Active)]
fn accumulated(x: &[f64]) -> f64 {
    let mut a = Acc { s: 0.0, k: 2.0 };
    a.add(x[0] * x[0]);
    let mut c = Acc { s: 1.0, k: 2.0 };
    for i in 0..x.len() {
        c.bump(x[i]);
    }
    a.s + c.apply(x[0]) + a.apply(x[x.len() - 1])
}

fn accumulated_o<D: Num>(x: &[D]) -> D {
    let a_s = x[0] * x[0];
    let c_k = x.iter().fold(c::<D>(2.0), |k, v| k + *v);
    let last = x[x.len() - 1];
    a_s + c_k * x[0] * x[0] + 1.0 + last * last * 2.0 + a_s
}

/// A struct value built from the input, changed by a nonlinear `&mut self` method in a
/// loop.
#[autodiff_forward(grown_fwd, Dual, Dual)]
#[autodiff_reverse(grown_rev, Duplicated, Active)]
fn grown(x: &[f64]) -> f64 {
    let mut a = Acc { s: x[0], k: 1.5 };
    for i in 0..x.len() {
        a.grow(x[i]);
    }
    a.s * a.k
}

fn grown_o<D: Num>(x: &[D]) -> D {
    let (mut s, mut k) = (x[0], c::<D>(1.5));
    for &v in x {
        s *= (v * k).sin();
        k += s * v;
    }
    s * k
}

/// A state with buffers, built where it is bound: `#[differentiable]` gives it a zero
/// shadow, and `Clone` lets the reverse sweep save it around its `&mut self` method.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Chain {
    pub pos: Vec<f64>,
    pub vel: Vec<f64>,
    pub mass: [f64; 2],
    pub t: f64,
}

#[differentiable]
impl Chain {
    fn step(&mut self, dt: f64) {
        for i in 0..self.pos.len() {
            self.vel[i] -= dt * self.mass[i % 2] * self.pos[i].sin();
            self.pos[i] += dt * self.vel[i];
        }
        self.t += dt;
    }

    fn energy(&self) -> f64 {
        let mut e = self.t;
        for i in 0..self.pos.len() {
            e += 0.5 * self.vel[i] * self.vel[i] - self.mass[i % 2] * self.pos[i].cos();
        }
        e
    }
}

/// Members from `to_vec`, `vec![..]`, an array of values and a moved local vector
/// (shorthand), a copy by `clone()`, and `&mut self` steps on both.
#[autodiff_forward(chained_fwd, Dual, Dual)]
#[autodiff_reverse(chained_rev, Duplicated, Active)]
fn chained(x: &[f64]) -> f64 {
    let n = x.len();
    let vel: Vec<f64> = x.iter().map(|v| 0.5 * v).collect();
    let mut c = Chain {
        pos: x.to_vec(),
        vel,
        mass: [1.0, x[0] * x[0]],
        t: 0.1 * x[n - 1],
    };
    c.step(0.1);
    let mut d = c.clone();
    d.step(0.2);
    let e = Chain {
        pos: vec![0.0; n],
        vel: c.pos.clone(),
        mass: [2.0, 0.5],
        t: 0.0,
    };
    c.step(0.1);
    c.energy() + 0.5 * d.energy() + e.energy() * x[0]
}

/// A struct with buffers given `&mut` to a free function; a constant call's struct
/// filled, copied by `clone()` and stepped.
#[autodiff_forward(kicked_fwd, Dual, Dual)]
#[autodiff_reverse(kicked_rev, Duplicated, Active)]
fn kicked(x: &[f64]) -> f64 {
    let n = x.len();
    let mut c = Chain {
        pos: x.to_vec(),
        vel: vec![0.0; n],
        mass: [1.0, 2.0],
        t: 0.0,
    };
    kick(&mut c, 0.3);
    let mut z = Chain::at_rest(n);
    z.pos.copy_from_slice(x);
    let before = z.clone();
    z.step(0.1);
    c.energy() + before.pos[0] * z.vel[n - 1]
}

impl Chain {
    fn at_rest(n: usize) -> Chain {
        Chain {
            pos: vec![0.0; n],
            vel: vec![0.0; n],
            mass: [1.0, 2.0],
            t: 0.0,
        }
    }
}

#[differentiable]
fn kick(c: &mut Chain, s: f64) {
    for i in 0..c.pos.len() {
        c.vel[i] += s * c.pos[i] * c.pos[i];
    }
    c.t += s;
}

fn kicked_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mass = [c::<D>(1.0), c::<D>(2.0)];
    let (pos, mut vel) = (x.to_vec(), vec![c::<D>(0.0); n]);
    for i in 0..n {
        vel[i] += pos[i] * pos[i] * 0.3;
    }
    let e = chain_energy(&pos, &vel, mass, c(0.3));
    let (mut zp, mut zv, mut zt) = (x.to_vec(), vec![c::<D>(0.0); n], c::<D>(0.0));
    chain_step(&mut zp, &mut zv, mass, &mut zt, 0.1);
    e + x[0] * zv[n - 1]
}

fn chain_step<D: Num>(pos: &mut [D], vel: &mut [D], mass: [D; 2], t: &mut D, dt: f64) {
    for i in 0..pos.len() {
        vel[i] -= mass[i % 2] * pos[i].sin() * dt;
        pos[i] += vel[i] * dt;
    }
    *t += c::<D>(dt);
}

fn chain_energy<D: Num>(pos: &[D], vel: &[D], mass: [D; 2], t: D) -> D {
    let mut e = t;
    for i in 0..pos.len() {
        e += vel[i] * vel[i] * 0.5 - mass[i % 2] * pos[i].cos();
    }
    e
}

fn chained_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mass = [c::<D>(1.0), x[0] * x[0]];
    let (mut pos, mut vel) = (x.to_vec(), x.iter().map(|v| *v * 0.5).collect::<Vec<D>>());
    let mut t = x[n - 1] * 0.1;
    chain_step(&mut pos, &mut vel, mass, &mut t, 0.1);
    let (mut dpos, mut dvel, mut dt) = (pos.clone(), vel.clone(), t);
    chain_step(&mut dpos, &mut dvel, mass, &mut dt, 0.2);
    let e = chain_energy(&vec![c::<D>(0.0); n], &pos, [c(2.0), c(0.5)], c(0.0));
    chain_step(&mut pos, &mut vel, mass, &mut t, 0.1);
    chain_energy(&pos, &vel, mass, t) + chain_energy(&dpos, &dvel, mass, dt) * 0.5 + e * x[0]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn immutable_struct_values((x, v, s0) in slice_case(-1.5, 1.5, 2..7, 0), s in seed()) {
        check_slice("built", (&x, &v, &s0, s), built, built_fwd, built_rev, built_o::<Dual64>);
        check_hvp_of::<built_rev>(&x, &v, built_o);
    }

    #[test]
    fn mutable_struct_value_assigned_again((x, v, s0) in slice_case(-1.2, 1.2, 1..7, 0), s in seed()) {
        check_slice("state", (&x, &v, &s0, s), state, state_fwd, state_rev, state_o::<Dual64>);
        check_hvp_of::<state_rev>(&x, &v, state_o);
    }

    #[test]
    fn method_of_a_mutable_struct_value((x, v, s0) in slice_case(-1.2, 1.2, 1..7, 0), s in seed()) {
        check_slice("stepped", (&x, &v, &s0, s), stepped, stepped_fwd, stepped_rev, stepped_o::<Dual64>);
        check_hvp_of::<stepped_rev>(&x, &v, stepped_o);
    }

    #[test]
    fn mutable_struct_value_given_twice((x, v, s0) in slice_case(-1.2, 1.2, 1..6, 0), s in seed()) {
        check_slice("self_dot", (&x, &v, &s0, s), self_dot, self_dot_fwd, self_dot_rev, self_dot_o::<Dual64>);
        check_hvp_of::<self_dot_rev>(&x, &v, self_dot_o);
    }

    #[test]
    fn constant_struct_values_updated_by_methods((x, v, s0) in slice_case(-1.2, 1.2, 1..6, 0), s in seed()) {
        check_slice("accumulated", (&x, &v, &s0, s), accumulated, accumulated_fwd, accumulated_rev, accumulated_o::<Dual64>);
        check_hvp_of::<accumulated_rev>(&x, &v, accumulated_o);
    }

    #[test]
    fn struct_values_with_buffer_members((x, v, s0) in slice_case(-1.2, 1.2, 1..6, 0), s in seed()) {
        check_slice("chained", (&x, &v, &s0, s), chained, chained_fwd, chained_rev, chained_o::<Dual64>);
        check_hvp_of::<chained_rev>(&x, &v, chained_o);
    }

    #[test]
    fn struct_values_with_buffers_given_mutably((x, v, s0) in slice_case(-1.2, 1.2, 1..6, 0), s in seed()) {
        check_slice("kicked", (&x, &v, &s0, s), kicked, kicked_fwd, kicked_rev, kicked_o::<Dual64>);
        check_hvp_of::<kicked_rev>(&x, &v, kicked_o);
    }

    #[test]
    fn a_nonlinear_mut_self_method_on_a_struct_value(
        case in slice_seed_case(-1.0, 1.0, 1..5),
        w in dirs(5),
    ) {
        let (x, v, s0, s) = case;
        check_slice("grown", (&x, &v, &s0, s), grown, grown_fwd, grown_rev, grown_o);
        check_hvp_of::<grown_rev>(&x, &w, grown_o);
    }

    #[test]
    fn constant_struct_values((x, v, s0) in slice_case(-1.2, 1.2, 1..7, 0), k in float(-1.0, 1.0), s in seed()) {
        check_slice(
            "constant",
            (&x, &v, &s0, s),
            |x| constant(x, k),
            |x, dx| constant_fwd(x, dx, k),
            |x, bx, s| constant_rev(x, bx, k, s),
            |d| constant_o::<Dual64>(d, k),
        );
    }

    #[test]
    fn integer_members_converted_with_as(w in float(-1.0, 1.0), n in 1usize..6, (x, v, s0) in slice_case(-1.2, 1.2, 1..6, 0), dw in dir(), s in seed()) {
        let oracle = |w: Dual64, x: &[Dual64]| {
            let mut t = Dual64::from(0.0);
            for xi in x {
                t += w * *xi * *xi / (n as f64) + w * 3.0;
            }
            t
        };
        let c = Counted { w, n };
        // The shadow holds a copy of the count, as a clone of the struct would.
        let (value, tangent) = counted_fwd(&c, &Counted { w: dw, n }, &x, &v[..x.len()]);
        let d = oracle(Dual64::new(w, dw), &seeded(&x, &v[..x.len()]));
        check("value", value, d.re);
        check("tangent", tangent, d.eps);
        let mut bc = Counted { w: 0.0, n };
        let mut bx = s0[..x.len()].to_vec();
        let value = counted_rev(&c, &mut bc, &x, &mut bx, s);
        check("reverse value", value, d.re);
        let xs: Vec<Dual64> = x.iter().map(|&a| Dual64::from(a)).collect();
        check("adjoint of w", bc.w, s * oracle(Dual64::new(w, 1.0), &xs).eps);
        prop_assert_eq!(bc.n, n, "the integer member of the shadow is left alone");
        let grad = oracle_vjp(|d| vec![oracle(Dual64::from(w), d)], &x, &[s]);
        for i in 0..x.len() {
            check(&format!("adjoint of x[{i}]"), bx[i] - s0[i], grad[i]);
        }
    }

    #[test]
    fn generic_struct_values(r in float(0.2, 1.5), t in float(-2.0, 2.0), dr in dir(), dt in dir(), s in seed()) {
        let (value, tangent) = polar_fwd(r, dr, t, dt);
        let d = polar_o(Dual64::new(r, dr), Dual64::new(t, dt));
        check("value", value, d.re);
        check("tangent", tangent, d.eps);
        let (value, br, bt) = polar_rev(r, t, s);
        check("reverse value", value, d.re);
        check("adjoint of r", br, s * polar_o(Dual64::new(r, 1.0), Dual64::from(t)).eps);
        check("adjoint of t", bt, s * polar_o(Dual64::from(r), Dual64::new(t, 1.0)).eps);
        let (value32, _) = polar_fwd(r as f32, 1.0, t as f32, 0.0);
        check_tol("f32 value", f64::from(value32), d.re, 1e-4);
    }
}

/// A struct whose own methods are named like the standard library's (`sum`, `get`): they
/// are its methods, not reductions or element reads.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Bag {
    pub v: Vec<f64>,
    pub k: f64,
}

impl Bag {
    #[differentiable]
    fn sum(&self) -> f64 {
        let mut s = 0.0;
        for i in 0..self.v.len() {
            s += self.v[i];
        }
        s * self.k
    }

    #[differentiable]
    fn get(&self) -> f64 {
        self.k * 2.0
    }
}

#[autodiff_reverse(d_bag_total, Duplicated, Active)]
#[autodiff_forward(j_bag_total, Dual, Dual)]
fn bag_total(b: &Bag) -> f64 {
    b.sum() + b.get()
}

/// The same methods on a struct value built in the function.
#[differentiable]
pub struct Scalar2 {
    pub k: f64,
}

impl Scalar2 {
    #[differentiable]
    fn sum(&self) -> f64 {
        self.k * self.k
    }

    #[differentiable]
    fn get(&self) -> f64 {
        self.k * 2.0
    }
}

#[autodiff_reverse(d_scalar_total, Active, Active)]
fn scalar_total(x: f64) -> f64 {
    let b = Scalar2 { k: x };
    b.sum() + b.get()
}

#[test]
fn methods_named_like_the_standard_librarys() {
    let b = Bag {
        v: vec![1.0, 2.0, -0.5],
        k: 3.0,
    };
    // f = k Σv + 2k: ∂f/∂v_i = k, ∂f/∂k = Σv + 2.
    let mut db = Bag {
        v: vec![0.0; 3],
        k: 0.0,
    };
    let f = d_bag_total(&b, &mut db, 1.0);
    assert_eq!(f, 3.0 * 2.5 + 6.0);
    assert_eq!(db.v, vec![3.0; 3]);
    assert_eq!(db.k, 2.5 + 2.0);
    let t = Bag {
        v: vec![1.0, 0.0, 0.0],
        k: 1.0,
    };
    assert_eq!(j_bag_total(&b, &t).1, 3.0 + 2.5 + 2.0);
    // g = x² + 2x.
    assert_eq!(d_scalar_total(3.0, 1.0), (15.0, 8.0));
}

/// A point, marked so that slices of it have shadows.
#[differentiable]
#[derive(Clone, Debug, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
}

#[differentiable]
fn spread(ps: &[Pt]) -> f64 {
    let mut s = 0.0;
    for p in ps {
        s += p.x * p.x * p.y;
    }
    s
}

/// A `&Vec` of structs given to a callee that takes a slice of them (the `&Vec` is the
/// case under test).
#[allow(clippy::ptr_arg)]
#[autodiff_reverse(d_spread_vec, Duplicated, Active)]
#[autodiff_forward(j_spread_vec, Dual, Dual)]
fn spread_vec(ps: &Vec<Pt>) -> f64 {
    spread(ps)
}

#[allow(clippy::ptr_arg)]
#[autodiff_forward(hvp_spread_vec, Dual, Dual)]
fn spread_vec_grad(ps: &Vec<Pt>, g: &mut Vec<Pt>) {
    d_spread_vec(ps, g, 1.0);
}

#[test]
fn a_vec_of_structs_given_where_a_slice_is_taken() {
    let ps = vec![Pt { x: 1.5, y: 2.0 }, Pt { x: -0.5, y: 3.0 }];
    let zero = || vec![Pt { x: 0.0, y: 0.0 }; 2];
    // f = Σ x² y: ∂f/∂x = 2xy, ∂f/∂y = x².
    let mut g = zero();
    let f = d_spread_vec(&ps, &mut g, 1.0);
    assert_eq!(f, 2.25 * 2.0 + 0.25 * 3.0);
    assert_eq!(g, vec![Pt { x: 6.0, y: 2.25 }, Pt { x: -3.0, y: 0.25 }]);
    let dir = vec![Pt { x: 1.0, y: 0.5 }, Pt { x: 0.0, y: 1.0 }];
    assert_eq!(j_spread_vec(&ps, &dir).1, 6.0 + 0.5 * 2.25 + 0.25);
    // H·v: ∂²f/∂x² = 2y, ∂²f/∂x∂y = 2x, ∂²f/∂y² = 0.
    let (mut g, mut hv) = (zero(), zero());
    hvp_spread_vec(&ps, &dir, &mut g, &mut hv);
    assert_eq!(
        hv,
        vec![
            Pt {
                x: 2.0 * 2.0 * 1.0 + 2.0 * 1.5 * 0.5,
                y: 2.0 * 1.5 * 1.0
            },
            Pt {
                x: 2.0 * -0.5 * 1.0,
                y: 0.0
            },
        ]
    );
}

/// A body whose position is an array member.
#[differentiable]
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    pub pos: [f64; 2],
    pub m: f64,
}

/// An array member copied out of a slice element (`let a = ps[i].pos;`), then indexed.
#[autodiff_reverse(d_moment, Duplicated, Active)]
#[autodiff_forward(j_moment, Dual, Dual)]
fn moment(ps: &[Body]) -> f64 {
    let mut s = 0.0;
    for i in 0..ps.len() {
        for j in i + 1..ps.len() {
            let a = ps[i].pos;
            let b = ps[j].pos;
            s += ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)) * ps[i].m * ps[j].m;
        }
    }
    s
}

#[autodiff_forward(hvp_moment, Dual, Dual)]
fn moment_grad(ps: &[Body], g: &mut [Body]) {
    d_moment(ps, g, 1.0);
}

/// The bodies' numbers, in the order `pos[0], pos[1], m` per body.
fn body_numbers(ps: &[Body]) -> Vec<f64> {
    ps.iter().flat_map(|p| [p.pos[0], p.pos[1], p.m]).collect()
}

fn bodies(v: &[f64]) -> Vec<Body> {
    v.chunks(3)
        .map(|c| Body {
            pos: [c[0], c[1]],
            m: c[2],
        })
        .collect()
}

#[test]
fn an_array_member_copied_out_of_a_slice_element() {
    let x = [0.3, -0.2, 1.5, 1.1, 0.4, 0.7, -0.6, 0.9, 2.0];
    let v = [0.5, -1.0, 0.25, 0.0, 1.0, -0.5, 0.75, 0.2, 1.0];
    let ps = bodies(&x);
    let h = 1e-5;
    let at = |t: f64| -> Vec<Body> {
        bodies(&x.iter().zip(&v).map(|(a, b)| a + t * b).collect::<Vec<_>>())
    };
    // The directional derivative by central differences, against both modes.
    let fd = (moment(&at(h)) - moment(&at(-h))) / (2.0 * h);
    let (_, tangent) = j_moment(&ps, &bodies(&v));
    check_tol("forward", tangent, fd, 1e-7);
    let mut g = bodies(&[0.0; 9]);
    d_moment(&ps, &mut g, 1.0);
    let along: f64 = body_numbers(&g).iter().zip(&v).map(|(a, b)| a * b).sum();
    check_tol("reverse", along, fd, 1e-7);
    // H·v by central differences of the gradient.
    let grad_at = |t: f64| {
        let mut g = bodies(&[0.0; 9]);
        d_moment(&at(t), &mut g, 1.0);
        body_numbers(&g)
    };
    let (mut g, mut hv) = (bodies(&[0.0; 9]), bodies(&[0.0; 9]));
    hvp_moment(&ps, &bodies(&v), &mut g, &mut hv);
    let (up, down) = (grad_at(h), grad_at(-h));
    for (k, got) in body_numbers(&hv).iter().enumerate() {
        check_tol(
            &format!("H·v[{k}]"),
            *got,
            (up[k] - down[k]) / (2.0 * h),
            1e-6,
        );
    }
}

/// A filter's coefficients: an array member beside a float.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Taps {
    pub b: [f64; 2],
    pub z: f64,
}

/// A struct value built from a parameter's members, an array among them (`b: f.b`): the
/// macro cannot see that `f.b` is an array, and adds its adjoint as a call's result's.
#[autodiff_reverse(d_run_taps, Duplicated, Active)]
#[autodiff_forward(j_run_taps, Dual, Dual)]
fn run_taps(f: &Taps) -> f64 {
    let st = Taps { b: f.b, z: f.z };
    (st.b[0] * st.b[1] + st.z).sin()
}

#[test]
fn a_struct_value_takes_an_array_member_of_a_parameter() {
    let f = Taps {
        b: [2.0, 3.0],
        z: 1.0,
    };
    let c = (2.0f64 * 3.0 + 1.0).cos();
    let mut df = Taps {
        b: [0.0; 2],
        z: 0.0,
    };
    let y = d_run_taps(&f, &mut df, 1.0);
    check("value", y, 7.0f64.sin());
    check_all(
        "gradient",
        &[df.b[0], df.b[1], df.z],
        &[3.0 * c, 2.0 * c, c],
    );
    let v = Taps {
        b: [0.5, -1.0],
        z: 0.25,
    };
    let (y, t) = j_run_taps(&f, &v);
    check("forward value", y, 7.0f64.sin());
    check("tangent", t, (3.0 * 0.5 - 2.0 + 0.25) * c);
}
