//! Functions and methods that return a struct by value (`fn new(..) -> Self`,
//! `fn add(&self, o: &V2) -> V2`), called from differentiated code: constructors, methods
//! built on other struct-returning calls, a struct chosen by `if` or `match`, updated
//! member by member before it is returned, returned from a callee that calls into libm
//! (whose pullback keeps its forward state), generic over the float type, a tuple struct,
//! with an integer member; the caller binds the result, reads its members, calls its
//! methods, passes it on by reference, builds it from constants, and assigns it again in
//! a loop (`acc = acc.add(..)`, also where the struct itself came from a call, `let mut acc
//! = V2::new(..)`). Methods that end with another method's struct, choose
//! one by `if` between a literal and a call, or change their receiver (`take(&mut self,
//! ..)`, named as an iterator adapter) are called once per call in the source. Named
//! companions of such a function take the seed as
//! `&V2` and return `(V2, V2)`. Checked against num-dual in both modes, and under forward
//! over reverse (H·v) against `HyperDual64`.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// Not `Copy`: a call that returns it inside a loop needs `Clone` (the reverse sweep
/// keeps a copy of each result), nothing else.
#[derive(Clone, Debug, PartialEq)]
#[differentiable]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

impl V2 {
    #[differentiable]
    pub fn new(x: f64, y: f64) -> Self {
        Self { x, y }
    }

    #[differentiable]
    pub fn norm(&self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }

    #[differentiable]
    pub fn add(&self, o: &V2) -> V2 {
        V2 {
            x: self.x + o.x,
            y: self.y + o.y,
        }
    }

    /// Through another call that returns a struct.
    #[differentiable]
    pub fn scale(&self, c: f64) -> Self {
        Self::new(self.x * c, self.y * c)
    }

    /// Named like a vector's method: of a struct, it is the struct's.
    #[differentiable]
    pub fn dot(&self, o: &V2) -> f64 {
        self.x * o.x + self.y * o.y
    }

    /// Ends with another method's struct: its type is not taken for a float alias.
    #[differentiable]
    pub fn half(&self) -> V2 {
        self.scale(0.5)
    }

    /// A struct chosen by `if`: one branch a call's, the other a literal.
    #[differentiable]
    pub fn pick(&self, o: &V2, c: bool) -> V2 {
        if c {
            self.add(o)
        } else {
            V2 { x: o.x, y: self.y }
        }
    }

    /// Calls into libm (its pullback keeps its forward state), and writes a member
    /// before it returns the struct.
    #[differentiable]
    pub fn rot(&self, t: f64) -> V2 {
        let (s, c) = t.sin_cos();
        let mut r = V2 {
            x: c * self.x - s * self.y,
            y: 0.0,
        };
        r.y = s * self.x + c * self.y;
        r
    }
}

/// Generic over the float type, with an integer member.
#[derive(Debug)]
#[differentiable]
pub struct Scaled<T: Real> {
    pub a: T,
    pub b: T,
    pub n: usize,
}

impl<T: Real> Scaled<T> {
    #[differentiable]
    pub fn build(a: T, b: T) -> Self {
        Scaled {
            a: a * b,
            b: a - b,
            n: 3,
        }
    }

    #[differentiable]
    pub fn value(&self) -> T {
        self.a * self.b + self.a * T::from(self.n).unwrap()
    }
}

#[derive(Debug)]
#[differentiable]
pub struct Pair(pub f64, pub f64);

/// A tuple struct, from libm calls.
#[differentiable]
fn polar(r: f64, t: f64) -> Pair {
    Pair(r * t.cos(), r * t.sin())
}

/// A struct chosen by `if`, one branch with a statement of its own.
#[differentiable]
fn pick(a: f64, b: f64) -> V2 {
    if a > b {
        V2 { x: a, y: b * b }
    } else {
        let t = a * a;
        V2 { x: b, y: t }
    }
}

/// A struct chosen by `match`.
#[differentiable]
fn quadrant(a: f64, b: f64, k: usize) -> V2 {
    match k % 3 {
        0 => V2 { x: a, y: b },
        1 => V2 { x: -b, y: a },
        _ => V2 { x: a * b, y: a - b },
    }
}

#[differentiable]
fn len2(v: &V2) -> f64 {
    v.x * v.x + v.y * v.y
}

/// Named companions of a function that returns a struct.
#[autodiff_forward(make_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(make_rev, Active, Active, Active)]
fn make(a: f64, b: f64) -> V2 {
    V2 {
        x: a * b,
        y: (a + b).exp(),
    }
}

/// The caller: results bound, read, chained, passed by reference, in a loop.
#[autodiff_forward(calls_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(calls_rev, Active, Active, Active)]
fn calls(a: f64, b: f64) -> f64 {
    let p = make(a, b);
    let q = p.add(&p).scale(b);
    let mut s = 0.0;
    for i in 0..3 {
        let r = q.rot(a * i as f64);
        s += r.x * r.y + V2::new(a, r.x).norm();
    }
    let w = polar(a, b);
    let k = Scaled::<f64>::build(a, b);
    s + q.norm() + p.x + make(b, a).y + len2(&pick(a, b)) + w.0 * w.1 + k.value()
}

fn calls_oracle<D: Num>(a: D, b: D) -> D {
    let v2 = |x: D, y: D| (x, y);
    let p = v2(a * b, (a + b).exp());
    let q = v2((p.0 + p.0) * b, (p.1 + p.1) * b);
    let mut s = D::zero();
    for i in 0..3 {
        let t = a * c::<D>(i as f64);
        let (sn, cs) = (t.sin(), t.cos());
        let r = v2(cs * q.0 - sn * q.1, sn * q.0 + cs * q.1);
        s += r.0 * r.1 + (a * a + r.0 * r.0).sqrt();
    }
    let w = v2(a * b.cos(), a * b.sin());
    let k = v2(a * b, a - b);
    let picked = if a.re() > b.re() {
        v2(a, b * b)
    } else {
        v2(b, a * a)
    };
    s + (q.0 * q.0 + q.1 * q.1).sqrt()
        + p.0
        + (b + a).exp()
        + (picked.0 * picked.0 + picked.1 * picked.1)
        + w.0 * w.1
        + k.0 * k.1
        + k.0 * c::<D>(3.0)
}

/// A struct updated in a loop by assigning it whole from calls, and a method of a
/// constant struct (a temporary, and one bound to a local) with an argument that carries
/// derivatives.
#[autodiff_forward(carried_fwd, Dual, Dual)]
#[autodiff_reverse(carried_rev, Duplicated, Active)]
fn carried(x: &[f64]) -> f64 {
    let mut acc = V2 { x: 0.0, y: 1.0 };
    for i in 0..x.len() {
        acc = acc.add(&V2::new(x[i], x[i] * x[i])).scale(0.9);
    }
    let mut s = acc.norm();
    for i in 0..x.len() {
        let v = V2::new(x[i], 0.5);
        s += V2::new(1.0, 2.0).add(&v).rot(x[0]).y;
        // A constant struct bound, then the receiver of a method given `v`.
        let w = V2::new(0.5, i as f64);
        s += w.add(&v).x * w.y;
    }
    s
}

fn carried_oracle<D: Num>(x: &[D]) -> D {
    let (mut ax, mut ay) = (D::zero(), D::one());
    for &v in x {
        ax = (ax + v) * c::<D>(0.9);
        ay = (ay + v * v) * c::<D>(0.9);
    }
    let mut s = (ax * ax + ay * ay).sqrt();
    for (i, &v) in x.iter().enumerate() {
        let (px, py) = (c::<D>(1.0) + v, c::<D>(2.5));
        s += x[0].sin() * px + x[0].cos() * py;
        s += (v + 0.5) * i as f64;
    }
    s
}

/// A struct chosen by `match` on a constant, its members read.
#[autodiff_forward(matched_fwd, Dual, Dual, Const, Dual)]
#[autodiff_reverse(matched_rev, Active, Active, Const, Active)]
fn matched(a: f64, b: f64, k: usize) -> f64 {
    let v = quadrant(a, b, k);
    v.x * v.y.sin()
}

fn matched_oracle<D: Num>(a: D, b: D, k: usize) -> D {
    let (x, y) = match k % 3 {
        0 => (a, b),
        1 => (-b, a),
        _ => (a * b, a - b),
    };
    x * y.sin()
}

/// A struct built in the function assigned whole from another (`p = q`).
#[autodiff_forward(copied_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(copied_rev, Active, Active, Active)]
fn copied(a: f64, b: f64) -> f64 {
    let q = V2 { x: a, y: 1.0 };
    let mut p = V2 { x: b, y: a };
    let s = p.y * p.x;
    p = q;
    s + p.x * p.y.exp() + p.scale(2.0).x.sin()
}

fn copied_oracle<D: Num>(a: D, b: D) -> D {
    a * b + a * D::one().exp() + (a + a).sin()
}

/// A stock that a method splits: it returns the part taken and keeps the rest. Its name
/// is an iterator adapter's (`take`), its receiver is `&mut self`.
#[derive(Clone, Debug)]
#[differentiable]
pub struct Stock {
    pub m: f64,
    pub x: f64,
}

impl Stock {
    #[differentiable]
    pub fn take(&mut self, f: f64) -> Stock {
        let p = Stock {
            m: self.m * f,
            x: self.x,
        };
        self.m -= p.m;
        p
    }
}

/// The call that changes `s` runs once: the part it returned is read twice, then `s`.
#[autodiff_forward(split_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(split_rev, Active, Active, Active)]
fn split(a: f64, b: f64) -> f64 {
    let mut s = Stock { m: a, x: b };
    let part = s.take(0.25);
    let rest = s.take(b.sin());
    part.m * part.x + 10.0 * s.m + rest.m
}

fn split_oracle<D: Num>(a: D, b: D) -> D {
    let part = a * c::<D>(0.25);
    let left = a - part;
    let rest = left * b.sin();
    part * b + (left - rest) * c::<D>(10.0) + rest
}

/// Methods that end with another's struct or choose one by `if`; a struct built here
/// assigned from a method of itself (`z = z.add(&z)`), and again in a loop from calls
/// on a struct built in each pass.
#[autodiff_forward(delegated_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(delegated_rev, Active, Active, Active)]
fn delegated(a: f64, b: f64) -> f64 {
    let v = V2 { x: a, y: b };
    let h = v.half();
    let p = v.pick(&h, a > 0.0);
    let mut z = V2 { x: a, y: 1.0 };
    z = z.add(&z);
    let mut s = 0.0;
    for i in 0..3 {
        let jw = V2::new(0.0, 2.0);
        let w = jw.add(&z);
        z = z.add(&w).scale(0.5);
        s += w.x * z.y + b * i as f64;
    }
    h.x * h.y + p.x * p.y + s
}

fn delegated_oracle<D: Num>(a: D, b: D) -> D {
    let half = c::<D>(0.5);
    let (hx, hy) = (a * half, b * half);
    let (px, py) = if a.re() > 0.0 {
        (a + hx, b + hy)
    } else {
        (hx, b)
    };
    let (mut zx, mut zy) = (a + a, c::<D>(2.0));
    let mut s = D::zero();
    for i in 0..3 {
        let (wx, wy) = (zx, zy + c::<D>(2.0));
        zx = (zx + wx) * half;
        zy = (zy + wy) * half;
        s += wx * zy + b * c::<D>(i as f64);
    }
    hx * hy + px * py + s
}

/// A call's struct bound with `let mut` and changed member by member, in a loop.
#[autodiff_forward(changed_fwd, Dual, Dual)]
#[autodiff_reverse(changed_rev, Duplicated, Active)]
fn changed(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let v = V2 { x: x[i], y: s };
        let mut c = v.scale(2.0);
        c.x *= x[0];
        c.y += c.x.sin();
        s += c.x * c.y;
    }
    s
}

fn changed_oracle<D: Num>(x: &[D]) -> D {
    let mut s = D::zero();
    for &v in x {
        let cx = v * c::<D>(2.0) * x[0];
        let cy = s * c::<D>(2.0) + cx.sin();
        s += cx * cy;
    }
    s
}

/// A call's struct bound with `let mut` and assigned again whole: from a method chain in
/// a loop, from a literal and from a constructor in branches, and from another local;
/// read by its members and its methods in between; and one bound in the loop's body.
#[autodiff_forward(restarted_fwd, Dual, Dual)]
#[autodiff_reverse(restarted_rev, Duplicated, Active)]
fn restarted(x: &[f64]) -> f64 {
    let mut acc = V2::new(x[0], 1.0);
    let mut s = 0.0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            acc = acc.add(&V2::new(x[i], x[i] * x[i])).scale(0.9);
        } else if x[i] > -0.5 {
            acc = V2 {
                x: acc.y * x[i],
                y: acc.x + 1.0,
            };
        } else {
            acc = V2::new(acc.norm(), x[i]);
        }
        s += acc.norm() * acc.x;
        // One bound in the loop's body, assigned again there.
        let mut q = V2::new(x[i], s);
        q = q.add(&acc).scale(0.5);
        s += q.y;
    }
    let other = acc.half();
    acc = other;
    let e = rescaled(x[0], s);
    s + acc.x * acc.y + e.x * e.y + acc.dot(&e)
}

/// A call's struct of constants (`V2::new(0.0, 0.0)`) as the accumulator, assigned again
/// whole from values with derivatives.
#[autodiff_forward(from_zero_fwd, Dual, Dual)]
#[autodiff_reverse(from_zero_rev, Duplicated, Active)]
fn from_zero(x: &[f64]) -> f64 {
    let mut acc = V2::new(0.0, 0.0);
    for i in 0..x.len() {
        acc = acc.add(&V2::new(x[i], x[i] * x[i])).scale(0.9);
    }
    acc.x * acc.y + acc.norm()
}

fn from_zero_o<D: Num>(x: &[D]) -> D {
    let (mut ax, mut ay) = (D::zero(), D::zero());
    for &v in x {
        ax = (ax + v) * c::<D>(0.9);
        ay = (ay + v * v) * c::<D>(0.9);
    }
    ax * ay + (ax * ax + ay * ay).sqrt()
}

/// Ends with a call's struct copied with `let mut` and assigned again.
#[differentiable]
fn rescaled(a: f64, b: f64) -> V2 {
    let mut p = V2::new(a, b);
    p = p.scale(a);
    p
}

fn restarted_oracle<D: Num>(x: &[D]) -> D {
    let (mut ax, mut ay) = (x[0], D::one());
    let mut s = D::zero();
    for &v in x {
        (ax, ay) = if v.re() > 0.0 {
            ((ax + v) * c::<D>(0.9), (ay + v * v) * c::<D>(0.9))
        } else if v.re() > -0.5 {
            (ay * v, ax + c::<D>(1.0))
        } else {
            ((ax * ax + ay * ay).sqrt(), v)
        };
        s += (ax * ax + ay * ay).sqrt() * ax;
        s += (s + ay) * 0.5;
    }
    let (hx, hy) = (ax * c::<D>(0.5), ay * c::<D>(0.5));
    let (ex, ey) = (x[0] * x[0], s * x[0]);
    s + hx * hy + ex * ey + hx * ex + hy * ey
}

/// A variance recursion written with methods that return floats.
pub struct Garch {
    pub omega: f64,
    pub alpha: f64,
}

impl Garch {
    #[differentiable]
    fn start(&self) -> f64 {
        self.omega * 2.0
    }

    #[differentiable]
    fn step(&self, h: f64, r: f64) -> f64 {
        self.omega + self.alpha * h + r * r
    }

    /// A float a method returned, bound with `let mut` and assigned again from another
    /// method of `self`: a float, not a struct (a struct is assigned its own method's
    /// result, `acc = acc.add(..)`).
    #[autodiff_forward(log_variance_fwd, Dual, Dual, Dual)]
    #[autodiff_reverse(log_variance_rev, Duplicated, Duplicated, Active)]
    pub fn log_variance(&self, r: &[f64]) -> f64 {
        let mut h = self.start();
        for i in 0..r.len() {
            h = self.step(h, r[i]);
        }
        h.ln()
    }
}

fn log_variance_o<D: Num>(p: &[D]) -> D {
    let (omega, alpha, r) = (p[0], p[1], &p[2..]);
    let mut h = omega * 2.0;
    for &v in r {
        h = omega + alpha * h + v * v;
    }
    h.ln()
}

/// `calls`, `matched` and `copied` on a slice, for their Hessian-vector products.
#[autodiff_reverse(calls_on_slice_rev, Duplicated, Active)]
fn calls_on_slice(x: &[f64]) -> f64 {
    calls(x[0], x[1])
}

#[autodiff_reverse(matched_on_slice_rev, Duplicated, Active)]
fn matched_on_slice(x: &[f64]) -> f64 {
    matched(x[0], x[1], 1) + matched(x[1], x[0], 2)
}

#[autodiff_reverse(copied_on_slice_rev, Duplicated, Active)]
fn copied_on_slice(x: &[f64]) -> f64 {
    copied(x[0], x[1])
}

#[autodiff_reverse(delegated_on_slice_rev, Duplicated, Active)]
fn delegated_on_slice(x: &[f64]) -> f64 {
    delegated(x[0], x[1])
}

#[autodiff_reverse(split_on_slice_rev, Duplicated, Active)]
fn split_on_slice(x: &[f64]) -> f64 {
    split(x[0], x[1])
}

proptest! {
    #![proptest_config(config())]

    /// Forward over reverse through the calls that return structs.
    #[test]
    fn hessian_vector_products_through_struct_results(
        x in vecf(-1.5, 1.5, 2),
        v in dirs(2),
        case in slice_case(-1.0, 1.0, 1..5, 0),
    ) {
        check_hvp_of::<calls_on_slice_rev>(&x, &v, |d| calls_oracle(d[0], d[1]));
        check_hvp_of::<matched_on_slice_rev>(&x, &v, |d| {
            matched_oracle(d[0], d[1], 1) + matched_oracle(d[1], d[0], 2)
        });
        check_hvp_of::<copied_on_slice_rev>(&x, &v, |d| copied_oracle(d[0], d[1]));
        check_hvp_of::<split_on_slice_rev>(&x, &v, |d| split_oracle(d[0], d[1]));
        check_hvp_of::<delegated_on_slice_rev>(&x, &v, |d| delegated_oracle(d[0], d[1]));
        let (y, w, _) = case;
        check_hvp_of::<carried_rev>(&y, &w, carried_oracle);
        check_hvp_of::<restarted_rev>(&y, &w, restarted_oracle);
        check_hvp_of::<changed_rev>(&y, &w, changed_oracle);
    }

    #[test]
    fn a_struct_assigned_from_another(x in vecf(-1.5, 1.5, 2), v in dirs(2), s in seed()) {
        check2(
            "copied",
            ([x[0], x[1]], [v[0], v[1]], s),
            copied,
            copied_fwd,
            copied_rev,
            copied_oracle,
        );
    }

    #[test]
    fn a_struct_result_of_a_method_that_changes_its_receiver(
        x in vecf(-1.5, 1.5, 2),
        v in dirs(2),
        s in seed(),
    ) {
        check2("split", ([x[0], x[1]], [v[0], v[1]], s), split, split_fwd, split_rev, split_oracle);
    }

    #[test]
    fn struct_results_of_methods_that_delegate_or_choose(
        x in vecf(-1.5, 1.5, 2),
        v in dirs(2),
        s in seed(),
    ) {
        check2(
            "delegated",
            ([x[0], x[1]], [v[0], v[1]], s),
            delegated,
            delegated_fwd,
            delegated_rev,
            delegated_oracle,
        );
    }

    #[test]
    fn struct_results_of_calls(x in vecf(-1.5, 1.5, 2), v in dirs(2), s in seed()) {
        check2(
            "calls",
            ([x[0], x[1]], [v[0], v[1]], s),
            calls,
            calls_fwd,
            calls_rev,
            calls_oracle,
        );
    }

    #[test]
    fn a_struct_result_changed_member_by_member(case in slice_seed_case(-1.0, 1.0, 1..6)) {
        let (x, v, s0, s) = case;
        check_slice("changed", (&x, &v, &s0, s), changed, changed_fwd, changed_rev, changed_oracle);
    }

    #[test]
    fn a_struct_assigned_again_in_a_loop(case in slice_seed_case(-1.0, 1.0, 1..6)) {
        let (x, v, s0, s) = case;
        check_slice("carried", (&x, &v, &s0, s), carried, carried_fwd, carried_rev, carried_oracle);
    }

    #[test]
    fn a_float_from_a_method_assigned_again(p in vecf(0.1, 1.0, 5), v in dirs(5)) {
        let g = Garch { omega: p[0], alpha: p[1] };
        let (want, grad) = oracle_grad(log_variance_o, &p);
        let mut dg = Garch { omega: 0.0, alpha: 0.0 };
        let mut dr = vec![0.0; 3];
        check("value", g.log_variance_rev(&mut dg, &p[2..], &mut dr, 1.0), want);
        check_all("gradient", &[&[dg.omega, dg.alpha][..], &dr].concat(), &grad);
        let t = Garch { omega: v[0], alpha: v[1] };
        let (value, tangent) = g.log_variance_fwd(&t, &p[2..], &v[2..]);
        check("forward value", value, want);
        check("tangent", tangent, grad.iter().zip(&v).map(|(a, b)| a * b).sum());
    }

    #[test]
    fn a_call_struct_assigned_again_whole(case in slice_seed_case(-1.0, 1.0, 1..6)) {
        let (x, v, s0, s) = case;
        check_slice(
            "restarted",
            (&x, &v, &s0, s),
            restarted,
            restarted_fwd,
            restarted_rev,
            restarted_oracle,
        );
    }

    #[test]
    fn a_constant_calls_struct_assigned_again_whole(case in slice_seed_case(-1.0, 1.0, 1..6)) {
        let (x, v, s0, s) = case;
        check_slice("from_zero", (&x, &v, &s0, s), from_zero, from_zero_fwd, from_zero_rev, from_zero_o);
        check_hvp_of::<from_zero_rev>(&x, &v, from_zero_o);
    }

    #[test]
    fn a_struct_chosen_by_match(x in vecf(-1.5, 1.5, 2), v in dirs(2), s in seed(), k in 0usize..6) {
        let f = |a, b| matched(a, b, k);
        let fwd = |a, da, b, db| matched_fwd(a, da, b, db, k);
        let rev = |a, b, s| matched_rev(a, b, k, s);
        check2("matched", ([x[0], x[1]], [v[0], v[1]], s), f, fwd, rev, |a, b| {
            matched_oracle(a, b, k)
        });
    }

    /// `make_fwd` returns the struct and its tangent; `make_rev` takes the seed by
    /// reference and returns the struct before the adjoints.
    #[test]
    fn named_companions_of_a_struct_result(
        x in vecf(-1.0, 1.0, 2),
        v in dirs(2),
        w in dirs(2),
    ) {
        let (a, b) = (x[0], x[1]);
        let oracle = |d: &[Dual64]| vec![d[0] * d[1], (d[0] + d[1]).exp()];
        let (value, tangent) = oracle_jvp(oracle, &x, &v);
        let (p, dp) = make_fwd(a, v[0], b, v[1]);
        check_all("make_fwd value", &[p.x, p.y], &value);
        check_all("make_fwd tangent", &[dp.x, dp.y], &tangent);
        let (p, da, db) = make_rev(a, b, &V2 { x: w[0], y: w[1] });
        check_all("make_rev value", &[p.x, p.y], &value);
        check_all("make_rev adjoints", &[da, db], &oracle_vjp(oracle, &x, &w));
        prop_assert_eq!(make(a, b), p);
    }
}

/// The generic struct at `f32`, in both modes, against num-dual's `Dual32`.
#[autodiff_forward(generic32_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(generic32_rev, Active, Active, Active)]
fn generic32(a: f32, b: f32) -> f32 {
    Scaled::<f32>::build(a, b).value()
}

#[test]
fn a_generic_struct_result_at_f32() {
    for (a, b) in [(0.5f32, -1.25f32), (1.5, 0.75), (-0.3, 2.0)] {
        let want = |da: f32, db: f32| {
            let (a, b) = (Dual32::new(a, da), Dual32::new(b, db));
            let (x, y) = (a * b, a - b);
            x * y + x * 3.0
        };
        let (v, ga, gb) = generic32_rev(a, b, 1.0);
        let (v2, ta) = generic32_fwd(a, 1.0, b, 0.0);
        let (_, tb) = generic32_fwd(a, 0.0, b, 1.0);
        for (what, got, exp) in [
            ("value", v, want(0.0, 0.0).re),
            ("forward value", v2, want(0.0, 0.0).re),
            ("d/da reverse", ga, want(1.0, 0.0).eps),
            ("d/db reverse", gb, want(0.0, 1.0).eps),
            ("d/da forward", ta, want(1.0, 0.0).eps),
            ("d/db forward", tb, want(0.0, 1.0).eps),
        ] {
            assert!(
                (got - exp).abs() <= 1e-5 * (1.0 + exp.abs()),
                "{what} at ({a}, {b}): got {got}, want {exp}"
            );
        }
    }
}

// ------------------------------------------------------------------ values the reverse sweep undoes

/// A struct overwritten in ways the reverse sweep undoes (`r.x *= a`, a literal built from
/// its own members): the named companion still returns its final value.
#[autodiff_reverse(grown_rev, Active, Active, Active)]
fn grown(a: f64, b: f64) -> V2 {
    let mut r = V2 { x: a, y: b };
    r.x *= a;
    r = V2 {
        x: r.x * b,
        y: r.y + r.x,
    };
    r
}

/// A call's struct assigned again in a loop.
#[autodiff_reverse(stepped_rev, Active, Active, Active)]
fn stepped(a: f64, b: f64) -> V2 {
    let mut acc = V2::new(a, b);
    for _ in 0..2 {
        acc = acc.scale(a);
    }
    acc
}

impl V2 {
    /// A method's companion returning `Self`.
    #[autodiff_reverse(grow_rev, Duplicated, Active, Active)]
    pub fn grow(&self, a: f64) -> Self {
        let mut r = V2 {
            x: self.x,
            y: self.y,
        };
        r.y *= a;
        r
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn companions_return_the_final_struct(
        a in -2.0f64..2.0, b in -2.0f64..2.0, sx in -1.0f64..1.0, sy in -1.0f64..1.0,
    ) {
        let seed = V2 { x: sx, y: sy };
        // x = a²b, y = b + a².
        let (v, da, db) = grown_rev(a, b, &seed);
        prop_assert_eq!(&v, &grown(a, b));
        prop_assert_eq!(&v, &V2 { x: a * a * b, y: b + a * a });
        check("grown a", da, sx * 2.0 * a * b + sy * 2.0 * a);
        check("grown b", db, sx * a * a + sy);
        // x = a³, y = a²b.
        let (v, da, db) = stepped_rev(a, b, &seed);
        prop_assert_eq!(&v, &stepped(a, b));
        check("stepped a", da, sx * 3.0 * a * a + sy * 2.0 * a * b);
        check("stepped b", db, sy * a * a);
        // (x, y·a) of (a, b).
        let p = V2 { x: b, y: a };
        let mut dp = V2 { x: 0.0, y: 0.0 };
        let (v, da) = p.grow_rev(&mut dp, b, &seed);
        prop_assert_eq!(&v, &p.grow(b));
        prop_assert_eq!(&dp, &V2 { x: sx, y: sy * b });
        check("grow a", da, sy * a);
    }
}

/// A struct a call returned, assigned whole again from calls, whose members the function
/// never names: only its methods show it is a struct.
#[autodiff_forward(reassigned_fwd, Dual, Dual)]
#[autodiff_reverse(reassigned_rev, Duplicated, Active)]
fn reassigned(p: &[f64]) -> f64 {
    let mut acc = V2::new(p[0], p[1]);
    let first = acc.norm();
    acc = V2::new(2.0 * p[1], p[0] * p[1]);
    for k in 0..2 {
        let r = acc.rot(0.5 * k as f64 + p[0]);
        acc = r.scale(0.9);
    }
    first + acc.dot(&acc)
}

fn reassigned_oracle<D: Num>(p: &[D]) -> D {
    let first = (p[0] * p[0] + p[1] * p[1]).sqrt();
    let mut acc = (p[1] * c::<D>(2.0), p[0] * p[1]);
    for k in 0..2 {
        let t = p[0] + c::<D>(0.5 * k as f64);
        let (sn, cs) = (t.sin(), t.cos());
        let r = (cs * acc.0 - sn * acc.1, sn * acc.0 + cs * acc.1);
        acc = (r.0 * c::<D>(0.9), r.1 * c::<D>(0.9));
    }
    first + acc.0 * acc.0 + acc.1 * acc.1
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_struct_known_by_its_methods_assigned_again(
        (x, v, s0) in slice_case(-1.5, 1.5, 2..3, 0), s in seed(),
    ) {
        check_slice("reassigned", (&x, &v, &s0, s), reassigned, reassigned_fwd, reassigned_rev, reassigned_oracle);
        check_hvp_of::<reassigned_rev>(&x, &v, reassigned_oracle);
    }
}

/// A pose with array members, returned as a literal written in place (a function's and a
/// method's last expression), passed by reference as a literal, and built from an array
/// parameter (`&[f64; 2]`).
#[differentiable]
#[derive(Clone, Copy, Debug)]
pub struct Pose {
    pub q: [f64; 2],
    pub t: [f64; 2],
}

impl Pose {
    #[differentiable]
    pub fn compose(&self, o: &Pose) -> Pose {
        Pose {
            q: [self.q[0] * o.q[0], self.q[1] + o.q[1]],
            t: [self.t[0] + o.t[0] * self.q[0], self.t[1]],
        }
    }
}

#[differentiable]
fn pose_of(v: &[f64; 2]) -> Pose {
    Pose {
        q: [v[0] * v[1], v[1].sin()],
        t: [v[0], 1.0],
    }
}

#[differentiable]
fn pose_norm(p: &Pose) -> f64 {
    p.q[0] * p.q[0] + p.q[1] * p.t[0] + p.t[1]
}

#[autodiff_forward(posed_fwd, Dual, Dual)]
#[autodiff_reverse(posed_rev, Duplicated, Active)]
fn posed(x: &[f64]) -> f64 {
    let a = pose_of(&[x[0], x[1]]);
    let b = a.compose(&a);
    pose_norm(&b)
        + pose_norm(&Pose {
            q: [x[1], x[0]],
            t: [x[0].cos(), 2.0],
        })
}

fn posed_oracle<D: Num>(x: &[D]) -> D {
    // pose_of: q = (x0 x1, sin x1), t = (x0, 1); composed with itself.
    let (q0, q1, t0, t1) = (x[0] * x[1], x[1].sin(), x[0], c::<D>(1.0));
    let (bq0, bq1, bt0, bt1) = (q0 * q0, q1 + q1, t0 + t0 * q0, t1);
    let first = bq0 * bq0 + bq1 * bt0 + bt1;
    first + x[1] * x[1] + x[0] * x[0].cos() + c::<D>(2.0)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn structs_with_array_members_returned_as_literals(
        (x, v, s0) in slice_case(-1.5, 1.5, 2..3, 0), s in seed(),
    ) {
        check_slice("posed", (&x, &v, &s0, s), posed, posed_fwd, posed_rev, posed_oracle::<Dual64>);
        check_hvp_of::<posed_rev>(&x, &v, posed_oracle);
    }
}

/// Vector arithmetic in an `impl` block marked `#[differentiable]` with no method marked:
/// the methods that build the struct from floats and values of it (`new`, `sub`, `scale`,
/// `cross`, `unit`) are made differentiable beside those returning floats (`dot`, `norm`),
/// since the struct's declaration gives it a zero shadow. A constructor that takes
/// something else (`zeros(n)`, left as written) compiles without it.
pub mod block_arithmetic {
    use autodiff_core::prelude::*;

    #[differentiable]
    #[derive(Clone, Copy, Debug)]
    pub struct P3 {
        pub x: f64,
        pub y: f64,
        pub z: f64,
    }

    #[differentiable]
    impl P3 {
        pub fn new(x: f64, y: f64, z: f64) -> P3 {
            P3 { x, y, z }
        }
        pub fn zeros(_n: usize) -> Self {
            P3 {
                x: 0.0,
                y: 0.0,
                z: 0.0,
            }
        }
        pub fn dot(&self, o: &P3) -> f64 {
            self.x * o.x + self.y * o.y + self.z * o.z
        }
        pub fn norm(&self) -> f64 {
            self.dot(self).sqrt()
        }
        pub fn sub(&self, o: &P3) -> P3 {
            P3::new(self.x - o.x, self.y - o.y, self.z - o.z)
        }
        pub fn add(&self, o: &Self) -> Self {
            P3 {
                x: self.x + o.x,
                y: self.y + o.y,
                z: self.z + o.z,
            }
        }
        pub fn scale(&self, s: f64) -> Self {
            P3 {
                x: self.x * s,
                y: self.y * s,
                z: self.z * s,
            }
        }
        pub fn cross(&self, o: &P3) -> P3 {
            P3 {
                x: self.y * o.z - self.z * o.y,
                y: self.z * o.x - self.x * o.z,
                z: self.x * o.y - self.y * o.x,
            }
        }
        pub fn unit(&self) -> P3 {
            self.scale(1.0 / self.norm())
        }
    }

    /// Two points pulled apart by a spring and moved along their cross product, the
    /// position assigned again in the loop.
    #[autodiff_forward(springs_fwd, Dual, Dual)]
    #[autodiff_reverse(springs_rev, Duplicated, Active)]
    pub fn springs(x: &[f64]) -> f64 {
        let a = P3::new(x[0], x[1], x[2]);
        let b = P3::new(x[3], x[4], 0.5);
        let d = a.sub(&b);
        let mut p = a.cross(&b).unit();
        for _ in 0..3 {
            p = p.add(&d.scale(0.25));
        }
        (d.norm() - 1.0).powi(2) + p.dot(&b) + P3::zeros(2).x
    }
}

fn springs_oracle<D: Num>(x: &[D]) -> D {
    let (a, b) = ([x[0], x[1], x[2]], [x[3], x[4], c::<D>(0.5)]);
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let cr = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ];
    let n = (cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]).sqrt();
    let mut p = [cr[0] / n, cr[1] / n, cr[2] / n];
    for _ in 0..3 {
        for k in 0..3 {
            p[k] += d[k] * c::<D>(0.25);
        }
    }
    let dn = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    (dn - c::<D>(1.0)).powi(2) + p[0] * b[0] + p[1] * b[1] + p[2] * b[2]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn struct_methods_of_an_unmarked_block_differentiated(
        (x, v, s0) in slice_case(0.3, 1.5, 5..6, 0), s in seed(),
    ) {
        use block_arithmetic::*;
        check_slice("springs", (&x, &v, &s0, s), springs, springs_fwd, springs_rev, springs_oracle::<Dual64>);
        check_hvp_of::<springs_rev>(&x, &v, springs_oracle);
    }
}
