//! The remainder `%` of floats, which carries a derivative (`a % b = a - trunc(a / b) · b`:
//! 1 in `a`, `-trunc(a / b)` in `b`), and the compound assignments beyond `+= -= *= /=`
//! (`%=`, `|=`, `&=`, `^=`, `<<=`, `>>=`) on floats, integers, bools and elements, whose
//! updates the companions must make as the function does. Both modes at random points
//! against a num-dual oracle (the remainder written there as `a - trunc(a / b) · b`), and
//! under forward over reverse.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// `a % b` in the oracle: the quotient truncated on the values, the rest differentiated.
fn rem<D: Num>(a: D, b: D) -> D {
    a - b * (a.re() / b.re()).trunc()
}

// ---------------------------------------------------------------- `%` of floats

/// A phase wrapped into `[0, 1)`, then used.
#[autodiff_forward(phase_fwd, Dual, Dual)]
#[autodiff_reverse(phase_rev, Active, Active)]
fn phase(x: f64) -> f64 {
    let p = (x * 3.0) % 1.0;
    p * p + x
}

fn phase_o<D: Num>(x: D) -> D {
    let p = rem(x * 3.0, c(1.0));
    p * p + x
}

/// Both operands active, the remainder bound and read again, and `%` of a negative value.
#[autodiff_forward(both_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(both_rev, Active, Active, Active)]
fn both(a: f64, b: f64) -> f64 {
    let r = a % b;
    let s = (a - 7.0) % (b * 0.5);
    r * b + s.sin() + r * s
}

fn both_o<D: Num>(a: D, b: D) -> D {
    let r = rem(a, b);
    let s = rem(a - 7.0, b * 0.5);
    r * b + s.sin() + r * s
}

/// A periodic boundary: pair distances wrapped into the box `[-l/2, l/2)`.
#[autodiff_forward(periodic_fwd, Dual, Dual)]
#[autodiff_reverse(periodic_rev, Duplicated, Active)]
fn periodic(x: &[f64]) -> f64 {
    let l = 2.5;
    let mut e = 0.0;
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let mut d = (x[i] - x[j]) % l;
            if d >= 0.5 * l {
                d -= l;
            } else if d < -0.5 * l {
                d += l;
            }
            e += (d * d + 0.1).recip();
        }
    }
    e
}

fn periodic_o<D: Num>(x: &[D]) -> D {
    let l = c::<D>(2.5);
    let mut e = c::<D>(0.0);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let mut d = rem(x[i] - x[j], l);
            if d.re() >= 1.25 {
                d -= l;
            } else if d.re() < -1.25 {
                d += l;
            }
            e += (d * d + 0.1).recip();
        }
    }
    e
}

// ---------------------------------------------------------------- compound assignments

/// `%=` of a float local, and of a buffer element.
#[autodiff_forward(rem_assign_fwd, Dual, Dual)]
#[autodiff_reverse(rem_assign_rev, Duplicated, Active)]
fn rem_assign(x: &[f64]) -> f64 {
    let mut a = x[0] * 5.0;
    a %= 2.0;
    let mut v = x.to_vec();
    for i in 0..v.len() {
        v[i] %= 0.75 + x[0] * x[0];
    }
    let mut s = a * x[1];
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    s
}

fn rem_assign_o<D: Num>(x: &[D]) -> D {
    let a = rem(x[0] * 5.0, c(2.0));
    let v: Vec<D> = x.iter().map(|&e| rem(e, x[0] * x[0] + 0.75)).collect();
    let mut s = a * x[1];
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    s
}

/// Integer cursors updated by `%=`, `>>=`, `<<=`, `^=`, `&=` and `|=`, which pick the
/// elements read; a bool flag set by `|=` and `&=`, which picks a branch.
#[autodiff_forward(int_ops_fwd, Dual, Dual)]
#[autodiff_reverse(int_ops_rev, Duplicated, Active)]
fn int_ops(x: &[f64]) -> f64 {
    let n = x.len();
    let mut k = 0usize;
    let mut s = 0.0;
    let mut any_big = false;
    let mut all_small = true;
    for i in 0..n {
        k += 2;
        k %= n;
        s += x[k] * (i as f64 + 1.0);
        any_big |= x[i] > 1.0;
        all_small &= x[i].abs() < 0.5;
    }
    let mut m = 13u32;
    let mut bits = 0usize;
    while m > 0 {
        m >>= 1;
        bits += 1;
    }
    let mut h = 1usize;
    h <<= 2;
    h ^= 1;
    h &= 7;
    h |= 8;
    s += x[h % n] * bits as f64;
    if any_big {
        s.sqrt()
    } else if all_small {
        s * s
    } else {
        s
    }
}

fn int_ops_o<D: Num>(x: &[D]) -> D {
    let n = x.len();
    let mut s = c::<D>(0.0);
    for i in 0..n {
        s += x[(2 * (i + 1)) % n] * (i as f64 + 1.0);
    }
    s += x[13 % n] * 4.0;
    let any_big = x.iter().any(|v| v.re() > 1.0);
    let all_small = x.iter().all(|v| v.re().abs() < 0.5);
    if any_big {
        s.sqrt()
    } else if all_small {
        s * s
    } else {
        s
    }
}

/// Repeated squaring with a shifted exponent: `x^13`.
#[autodiff_forward(pow13_fwd, Dual, Dual)]
#[autodiff_reverse(pow13_rev, Active, Active)]
fn pow13(x: f64) -> f64 {
    let mut n: u32 = 13;
    let mut base = x;
    let mut r = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            r *= base;
        }
        base *= base;
        n >>= 1;
    }
    r
}

/// The H·v of a function with `%` and `%=` (forward over reverse).
#[autodiff_reverse(wrapped_grad, Duplicated, Active)]
fn wrapped(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let mut t = x[i] * x[i] + 0.25 * x[0];
        t %= 1.5;
        s += t * t * x[i] + (x[i] % 0.7) * x[0];
    }
    s
}

fn wrapped_o<D: Num>(x: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        let t = rem(x[i] * x[i] + x[0] * 0.25, c(1.5));
        s += t * t * x[i] + rem(x[i], c(0.7)) * x[0];
    }
    s
}

#[autodiff_forward(wrapped_hvp, Dual, Dual)]
fn wrapped_gradient(x: &[f64], g: &mut [f64]) {
    g.fill(0.0);
    wrapped_grad(x, g, 1.0);
}

/// Keeps a point away from the remainder's jumps, where finite precision could put the
/// companions and the oracle on different sides.
fn away_from_jump(a: f64, b: f64) -> bool {
    let q = a / b;
    (q - q.round()).abs() > 1e-6
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn float_remainder(x in float(-3.0, 3.0), v in dir(), s in seed()) {
        prop_assume!(away_from_jump(x * 3.0, 1.0));
        check1("phase", (x, v, s), phase, phase_fwd, phase_rev, phase_o);
    }

    #[test]
    fn remainder_of_two_active_operands(
        a in float(-6.0, 6.0), b in float(0.4, 3.0), v in dirs(2), s in seed()
    ) {
        prop_assume!(away_from_jump(a, b) && away_from_jump(a - 7.0, b * 0.5));
        check2("both", ([a, b], [v[0], v[1]], s), both, both_fwd, both_rev, both_o);
        prop_assert!(both(a, -b).is_finite());
    }

    #[test]
    fn periodic_boundary(x in vecf(-4.0, 4.0, 4), v in dirs(4), s in seed()) {
        for i in 0..4 {
            for j in i + 1..4 {
                prop_assume!(away_from_jump(x[i] - x[j], 2.5));
                let d = (x[i] - x[j]) % 2.5;
                prop_assume!((d.abs() - 1.25).abs() > 1e-6);
            }
        }
        check_slice("periodic", (&x, &v, &[0.5; 4], s), periodic, periodic_fwd, periodic_rev, periodic_o::<Dual64>);
    }

    #[test]
    fn remainder_assignments(x in vecf(-2.0, 2.0, 3), v in dirs(3), s in seed()) {
        let b = 0.75 + x[0] * x[0];
        prop_assume!(away_from_jump(x[0] * 5.0, 2.0));
        prop_assume!(x.iter().all(|&e| away_from_jump(e, b)));
        check_slice("rem_assign", (&x, &v, &[0.0; 3], s), rem_assign, rem_assign_fwd, rem_assign_rev, rem_assign_o::<Dual64>);
    }

    #[test]
    fn integer_and_bool_compound_assignments(x in vecf(-1.5, 1.5, 5), v in dirs(5), s in seed()) {
        prop_assume!(int_ops(&x) > 0.0 || !x.iter().any(|&e| e > 1.0));
        check_slice("int_ops", (&x, &v, &[0.0; 5], s), int_ops, int_ops_fwd, int_ops_rev, int_ops_o::<Dual64>);
    }

    #[test]
    fn shifted_exponent(x in float(-1.3, 1.3), v in dir(), s in seed()) {
        check1("pow13", (x, v, s), pow13, pow13_fwd, pow13_rev, |d| d.powi(13));
    }

    #[test]
    fn hvp_through_remainders(x in vecf(-1.5, 1.5, 3), v in dirs(3)) {
        for &e in &x {
            prop_assume!(away_from_jump(e * e + 0.25 * x[0], 1.5) && away_from_jump(e, 0.7));
        }
        let (mut g, mut hv) = (vec![0.0; 3], vec![0.0; 3]);
        wrapped_hvp(&x, &v, &mut g, &mut hv);
        let (_, want) = oracle_grad(wrapped_o::<Dual64>, &x);
        check_all("gradient", &g, &want);
        check_hvp(&hv, &x, &v, wrapped_o);
    }
}
