//! Structs marked `#[differentiable]`: a constant value of one is passed where a callee
//! differentiates it (`net.run(x)` with `net` constant and `x` active), in both modes and
//! under forward over reverse, and one value is passed twice to one call. The struct's
//! zero shadow has zeros for its floats, buffers and marked structs, and copies of its
//! other members (an enum, a `String`, a `usize`). Checked against num-dual.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use num_dual::HyperDual64;
use proptest::prelude::*;

/// An enum member is marked too: its zero is itself (it holds no floats).
#[differentiable]
#[derive(Clone, Debug, PartialEq)]
pub enum Activation {
    Tanh,
    Identity,
}

/// One neuron, with members that carry no derivatives: a marked enum, a name and a count.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Neuron {
    pub w: Vec<f64>,
    pub b: f64,
    pub act: Activation,
    pub name: String,
    pub n: usize,
}

impl Neuron {
    #[differentiable]
    pub fn fire(&self, x: &[f64]) -> f64 {
        let mut s = self.b;
        for i in 0..self.n {
            s += self.w[i] * x[i];
        }
        if self.act == Activation::Tanh {
            s.tanh()
        } else {
            s
        }
    }
}

/// A marked struct holding another one and an array.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Net {
    pub hidden: Neuron,
    pub out: [f64; 2],
}

impl Net {
    #[differentiable]
    pub fn run(&self, x: &[f64]) -> f64 {
        self.out[0] * self.hidden.fire(x) + self.out[1]
    }
}

/// A tuple struct.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Pair(pub f64, pub f64);

#[differentiable]
fn bump(p: &Pair, t: f64) -> f64 {
    p.0 * t * t + p.1 * t.sin()
}

/// The loss of a constant network at the input `x`, and a constant pair.
#[autodiff_forward(loss_fwd, Const, Const, Dual, Dual)]
#[autodiff_reverse(loss_rev, Const, Const, Duplicated, Active)]
fn loss(net: &Net, pair: &Pair, x: &[f64]) -> f64 {
    let r = net.run(x) - 0.25;
    r * r + bump(pair, x[0]) + bump(&Pair(0.5, -1.5), x[1])
}

fn net() -> Net {
    Net {
        hidden: Neuron {
            w: vec![0.3, -0.7, 0.45],
            b: 0.1,
            act: Activation::Tanh,
            name: "hidden".into(),
            n: 3,
        },
        out: [1.75, -0.4],
    }
}

const PAIR: Pair = Pair(0.8, -0.35);

fn loss_o<D: Num>(x: &[D]) -> D {
    let n = net();
    let mut s = c::<D>(n.hidden.b);
    for i in 0..3 {
        s += x[i] * n.hidden.w[i];
    }
    let r = s.tanh() * n.out[0] + n.out[1] - 0.25;
    let bump = |p0: f64, p1: f64, t: D| t * t * p0 + t.sin() * p1;
    r * r + bump(PAIR.0, PAIR.1, x[0]) + bump(0.5, -1.5, x[1])
}

/// The gradient of [`loss`] into `g` (overwritten), whose forward companion is H·v with
/// the network and the pair still constant.
#[autodiff_forward(loss_hvp, Const, Const, Dual, Dual)]
fn loss_grad(net: &Net, pair: &Pair, x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    loss_rev(net, pair, x, g, 1.0);
}

/// A generic struct: members of the float parameter get zeros at `f32` and `f64`.
#[differentiable]
pub struct Poly<T: Real> {
    pub c: Vec<T>,
    pub label: &'static str,
}

impl<T: Real> Poly<T> {
    #[differentiable]
    pub fn eval(&self, t: T) -> T {
        let mut acc = T::zero();
        for i in (0..self.c.len()).rev() {
            acc = acc * t + self.c[i];
        }
        acc
    }
}

#[autodiff_forward(poly_sum_fwd, Const, Dual, Dual)]
#[autodiff_reverse(poly_sum_rev, Const, Duplicated, Active)]
fn poly_sum<T: Real>(p: &Poly<T>, x: &[T]) -> T {
    let mut s = T::zero();
    for i in 0..x.len() {
        s += p.eval(x[i]);
    }
    s
}

const COEFFS: [f64; 4] = [0.5, -1.25, 0.75, 0.2];

fn poly_sum_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for &t in x {
        let mut acc = c::<D>(0.0);
        for &k in COEFFS.iter().rev() {
            acc = acc * t + k;
        }
        s += acc;
    }
    s
}

/// A point given twice to one call, and two elements of one struct's buffer given to a
/// method: each extra argument gets a zero shadow, added into the real one after the call.
#[differentiable]
#[derive(Clone, Debug)]
pub struct V3 {
    pub p: [f64; 3],
}

impl V3 {
    #[differentiable]
    fn dot(&self, o: &V3) -> f64 {
        self.p[0] * o.p[0] + self.p[1] * o.p[1] + self.p[2] * o.p[2]
    }
}

#[differentiable]
#[derive(Clone, Debug)]
pub struct Cloud {
    pub pts: Vec<V3>,
}

#[autodiff_forward(twice_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(twice_rev, Duplicated, Duplicated, Active)]
fn twice(v: &V3, cloud: &Cloud) -> f64 {
    v.dot(v) * cloud.pts[0].dot(&cloud.pts[1]) + cloud.pts[1].dot(v)
}

fn twice_o<D: Num>(z: &[D]) -> D {
    let dot = |a: &[D], b: &[D]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let (v, p0, p1) = (&z[0..3], &z[3..6], &z[6..9]);
    dot(v, v) * dot(p0, p1) + dot(p1, v)
}

fn unpack(z: &[f64]) -> (V3, Cloud) {
    let v3 = |s: &[f64]| V3 {
        p: [s[0], s[1], s[2]],
    };
    let cloud = Cloud {
        pts: vec![v3(&z[3..6]), v3(&z[6..9])],
    };
    (v3(&z[0..3]), cloud)
}

fn flatten(v: &V3, cloud: &Cloud) -> Vec<f64> {
    let mut z = v.p.to_vec();
    for q in &cloud.pts {
        z.extend_from_slice(&q.p);
    }
    z
}

/// A simulation state that a plain (not differentiated) constructor builds with zeros.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Swing {
    pub pos: Vec<f64>,
    pub vel: Vec<f64>,
    pub t: f64,
}

impl Swing {
    fn at_rest(n: usize) -> Swing {
        Swing {
            pos: vec![0.0; n],
            vel: vec![0.0; n],
            t: 0.0,
        }
    }
}

#[differentiable]
impl Swing {
    fn step(&mut self, dt: f64) {
        for i in 0..self.pos.len() {
            self.vel[i] -= dt * self.pos[i].sin();
            self.pos[i] += dt * self.vel[i];
        }
        self.t += dt;
    }

    fn energy(&self) -> f64 {
        let mut e = 0.0;
        for i in 0..self.pos.len() {
            e += 0.5 * self.vel[i] * self.vel[i] - self.pos[i].cos();
        }
        e + self.t
    }
}

/// A struct a constant call returned, bound with `let mut`, filled with active values
/// and changed by its `&mut self` method in a loop: the method's tangent is lent
/// mutably, and the reverse sweep puts the struct back before each step's pullback.
#[autodiff_forward(swing_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(swing_rev, Duplicated, Active, Active)]
fn swing(x: &[f64], dt: f64) -> f64 {
    let mut s = Swing::at_rest(x.len());
    s.pos.copy_from_slice(x);
    for _ in 0..4 {
        s.step(dt);
    }
    s.energy() + s.pos[0]
}

fn swing_o<D: Num>(x: &[D], dt: D) -> D {
    let (mut pos, mut vel) = (x.to_vec(), vec![c::<D>(0.0); x.len()]);
    let mut t = c::<D>(0.0);
    for _ in 0..4 {
        for i in 0..x.len() {
            vel[i] -= dt * pos[i].sin();
            pos[i] += dt * vel[i];
        }
        t += dt;
    }
    let mut e = t;
    for i in 0..x.len() {
        e += vel[i] * vel[i] * 0.5 - pos[i].cos();
    }
    e + pos[0]
}

/// H·v of [`swing`] in `x`, `dt` held at 0.1.
#[autodiff_forward(swing_hvp, Dual, Dual)]
fn swing_grad(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    swing_rev(x, g, 0.1, 1.0);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn constant_network_and_pair(case in slice_seed_case(-1.5, 1.5, 3..4)) {
        let (n, x) = (net(), case.0.clone());
        check_slice(
            "loss",
            (&x, &case.1, &case.2, case.3),
            |x| loss(&n, &PAIR, x),
            |x, dx| loss_fwd(&n, &PAIR, x, dx),
            |x, dx, seed| loss_rev(&n, &PAIR, x, dx, seed),
            loss_o,
        );
    }

    #[test]
    fn constant_network_under_forward_over_reverse(
        x in vecf(-1.5, 1.5, 3),
        v in dirs(3),
    ) {
        let n = net();
        let (mut g, mut hv) = (vec![0.0; 3], vec![0.0; 3]);
        loss_hvp(&n, &PAIR, &x, &v, &mut g, &mut hv);
        let (_, want) = oracle_grad(loss_o, &x);
        check_all("gradient beside H·v", &g, &want);
        check_hvp(&hv, &x, &v, |d: &[HyperDual64]| loss_o(d));
    }

    #[test]
    fn a_constant_calls_struct_changed_by_its_methods(
        case in slice_case(-1.5, 1.5, 1..5, 1),
        dt in float(0.05, 0.3),
        seed in seed(),
    ) {
        let (x, v, shadow0) = case;
        check_slice_scalar(
            "swing",
            (&x, dt, &v, &shadow0, seed),
            swing,
            swing_fwd,
            swing_rev,
            swing_o,
        );
        let (mut g, mut hv) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        swing_hvp(&x, &v[..x.len()], &mut g, &mut hv);
        check_hvp(&hv, &x, &v[..x.len()], |d: &[HyperDual64]| swing_o(d, c(0.1)));
    }

    #[test]
    fn generic_constant_struct_f64(case in slice_seed_case(-1.5, 1.5, 1..6)) {
        let p = Poly { c: COEFFS.to_vec(), label: "p" };
        check_slice(
            "poly_sum",
            (&case.0, &case.1, &case.2, case.3),
            |x| poly_sum(&p, x),
            |x, dx| poly_sum_fwd(&p, x, dx),
            |x, dx, seed| poly_sum_rev(&p, x, dx, seed),
            poly_sum_o,
        );
    }

    #[test]
    fn generic_constant_struct_f32(x in vecf(-1.5, 1.5, 4), v in dirs(4)) {
        let p = Poly { c: COEFFS.map(|k| k as f32).to_vec(), label: "p" };
        let x32: Vec<f32> = x.iter().map(|&a| a as f32).collect();
        let v32: Vec<f32> = v.iter().map(|&a| a as f32).collect();
        let (_, t) = poly_sum_fwd(&p, &x32, &v32);
        let mut g = vec![0.0f32; 4];
        poly_sum_rev(&p, &x32, &mut g, 1.0);
        let x64: Vec<f64> = x32.iter().map(|&a| f64::from(a)).collect();
        let (_, want) = oracle_grad(poly_sum_o, &x64);
        for i in 0..4 {
            check_tol("f32 gradient", f64::from(g[i]), want[i], 1e-4);
        }
        let jv: f64 = want.iter().zip(&v32).map(|(a, b)| a * f64::from(*b)).sum();
        check_tol("f32 tangent", f64::from(t), jv, 1e-4);
    }

    #[test]
    fn one_struct_twice_in_one_call(
        z in vecf(-1.5, 1.5, 9),
        w in dirs(9),
        seed in seed(),
    ) {
        let (v, cloud) = unpack(&z);
        let (dv, dcloud) = unpack(&w);
        let (value, tangent) = twice_fwd(&v, &dv, &cloud, &dcloud);
        let (mut bv, mut bcloud) = unpack(&[0.0; 9]);
        let r = twice_rev(&v, &mut bv, &cloud, &mut bcloud, seed);
        check_scalar(
            "twice",
            &z,
            &w,
            seed,
            Got { primal: twice(&v, &cloud), fwd: (value, tangent), rev: r, grad: flatten(&bv, &bcloud) },
            twice_o,
        );
    }
}

#[test]
fn the_zero_shadow_zeroes_floats_and_copies_the_rest() {
    let n = net();
    let z = autodiff_core::__private::zero_like(&n);
    assert_eq!(z.hidden.w, vec![0.0; 3]);
    assert_eq!((z.hidden.b, z.out), (0.0, [0.0, 0.0]));
    assert_eq!(z.hidden.act, Activation::Tanh);
    assert_eq!(z.hidden.name, "hidden");
    assert_eq!(z.hidden.n, 3);
}

/// An enum whose variants hold floats: their zeros, and sums within one variant.
#[differentiable]
#[derive(Clone, Debug, PartialEq)]
pub enum Penalty {
    Free,
    Ridge(f64),
    Box { lo: f64, hi: f64, tag: u8 },
}

/// An enum of one variant, and an empty one: their sums have no other case to match.
#[differentiable]
#[derive(Clone, Debug, PartialEq)]
pub enum Only {
    One(f64, usize),
}

#[differentiable]
pub enum Never {}

#[test]
fn an_enum_has_zeros_in_its_variants() {
    use autodiff_core::__private::{AddInto, zero_like};
    assert_eq!(zero_like(&Penalty::Free), Penalty::Free);
    assert_eq!(zero_like(&Penalty::Ridge(3.0)), Penalty::Ridge(0.0));
    let b = Penalty::Box {
        lo: -1.0,
        hi: 2.0,
        tag: 7,
    };
    assert_eq!(
        zero_like(&b),
        Penalty::Box {
            lo: 0.0,
            hi: 0.0,
            tag: 7
        }
    );
    let mut s = Penalty::Box {
        lo: 1.0,
        hi: 1.0,
        tag: 7,
    };
    s.add_into(&b);
    assert_eq!(
        s,
        Penalty::Box {
            lo: 0.0,
            hi: 3.0,
            tag: 7
        }
    );
    // Shadows of different variants have nothing to add.
    let mut r = Penalty::Ridge(1.0);
    r.add_into(&b);
    assert_eq!(r, Penalty::Ridge(1.0));
    let mut o = Only::One(2.0, 4);
    assert_eq!(zero_like(&o), Only::One(0.0, 4));
    o.add_into(&Only::One(0.5, 9));
    assert_eq!(o, Only::One(2.5, 4));
}

/// A kind of unit, a plain enum: passed by value, it carries no derivative.
#[differentiable]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Square,
    Cube,
}

#[differentiable]
fn shaped(kind: Kind, z: f64) -> f64 {
    match kind {
        Kind::Square => z * z,
        Kind::Cube => z * z * z,
    }
}

/// A unit whose kind is a member, read from a duplicated reference.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Unit {
    pub w: f64,
    pub kind: Kind,
}

#[autodiff_reverse(d_unit_output, Duplicated, Active, Active)]
#[autodiff_forward(unit_output_jvp, Dual, Dual, Dual)]
fn unit_output(u: &Unit, x: f64) -> f64 {
    shaped(u.kind, u.w * x)
}

#[test]
fn an_enum_member_passed_by_value() {
    let (w, x) = (0.7, -1.3);
    for (kind, p) in [(Kind::Square, 2), (Kind::Cube, 3)] {
        let u = Unit { w, kind };
        let mut du = Unit { w: 0.0, kind };
        let (v, dx) = d_unit_output(&u, &mut du, x, 1.0);
        let pf = p as f64;
        assert!((v - (w * x).powi(p)).abs() < 1e-14);
        // d/dw (w x)^p = p (w x)^(p-1) x, d/dx = p (w x)^(p-1) w.
        assert!((du.w - pf * (w * x).powi(p - 1) * x).abs() < 1e-14);
        assert!((dx - pf * (w * x).powi(p - 1) * w).abs() < 1e-14);
        let (_, t) = unit_output_jvp(&u, &Unit { w: 1.0, kind }, x, 0.5);
        let want = pf * (w * x).powi(p - 1) * (x + 0.5 * w);
        assert!((t - want).abs() < 1e-14, "{t} {want}");
    }
}
