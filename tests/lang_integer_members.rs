//! Integer members of structs in differentiated code: bound to locals (`let k = m.k;`,
//! `let shift: i32 = m.shift;`), used in integer arithmetic, converted with `as`, and
//! passed to differentiated callees; members as the right operand of `/` and `-`
//! (`w.len() / dim`). They carry no derivative, whatever the struct's
//! shadow holds in them (a copy of the count). Float members bound to locals keep
//! theirs. Checked against num-dual in both modes and under forward over reverse.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

/// Sizes and a scale, as a model's configuration holds them.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Mixture {
    pub k: usize,
    pub shift: i32,
    pub scale: f64,
}

const MIXTURE: Mixture = Mixture {
    k: 5,
    shift: -2,
    scale: 0.75,
};

#[differentiable]
fn log_weight(a: f64, k: usize) -> f64 {
    (a * a + 1.0).ln() - (k as f64).ln()
}

fn log_weight_o<D: Num>(a: D, k: usize) -> D {
    (a * a + 1.0).ln() - (k as f64).ln()
}

/// Members bound to locals, immutable and mutable, with and without a type; integer
/// arithmetic on them and on the members; conversions; a member and a local passed to a
/// callee that takes an integer.
#[autodiff_forward(sizes_fwd, Dual, Const, Dual)]
#[autodiff_reverse(sizes_rev, Duplicated, Const, Active)]
fn sizes(x: &[f64], m: &Mixture) -> f64 {
    let k = m.k;
    let shift: i32 = m.shift;
    let half = k / 2;
    let twice = m.k * 2;
    let mut count = m.k;
    count += 1;
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i] * shift as f64 + log_weight(x[i], k) + log_weight(x[i], m.k);
    }
    for i in 0..half {
        s += x[i % x.len()] * twice as f64;
    }
    let scale = m.scale;
    s * scale + (k as f64).sqrt() * x[0] + ((m.k + 1) as f64) * x[x.len() - 1] * count as f64
}

fn sizes_o<D: Num>(x: &[D], m: &Mixture) -> D {
    let (k, shift) = (m.k, m.shift);
    let mut s = c::<D>(0.0);
    for i in 0..x.len() {
        s += x[i] * x[i] * shift as f64 + log_weight_o(x[i], k) * 2.0;
    }
    for i in 0..k / 2 {
        s += x[i % x.len()] * (2 * k) as f64;
    }
    s * m.scale + x[0] * (k as f64).sqrt() + x[x.len() - 1] * ((k + 1) * (k + 1)) as f64
}

/// The configuration built in the function and passed by reference, for H·v.
#[autodiff_reverse(sizes_here_rev, Duplicated, Active)]
fn sizes_here(x: &[f64]) -> f64 {
    let m = Mixture {
        k: 5,
        shift: -2,
        scale: 0.75,
    };
    sizes(x, &m)
}

impl Mixture {
    /// A method reading its members into locals: the float member's derivative reaches
    /// the shadow's `scale`, the integer members' none.
    #[autodiff_reverse(energy_rev, Duplicated, Duplicated, Active)]
    #[autodiff_forward(energy_fwd, Dual, Dual, Dual)]
    pub fn energy(&self, x: &[f64]) -> f64 {
        let n = self.k;
        let scale = self.scale;
        let mut e = 0.0;
        for i in 0..x.len() {
            e += scale * x[i] * x[i] * (n - i % n) as f64;
        }
        e + self.shift as f64 * scale
    }
}

fn energy_o<D: Num>(scale: D, x: &[D], m: &Mixture) -> D {
    let mut e = c::<D>(0.0);
    for i in 0..x.len() {
        e += scale * x[i] * x[i] * (m.k - i % m.k) as f64;
    }
    e + scale * m.shift as f64
}

/// Weights in blocks of `dim`, and a list of indices.
#[differentiable]
#[derive(Clone, Debug)]
pub struct Blocks {
    pub w: Vec<f64>,
    pub dim: usize,
    pub ids: Vec<usize>,
}

/// Integer members as the right operand of `/`, `-` and `%` (`w.len() / dim`, `4 -
/// ids[1]`), beside a length, a literal or a local bound to one, with the struct itself
/// differentiated (its shadow holds copies of the counts).
#[autodiff_forward(blocks_fwd, Dual, Dual)]
#[autodiff_reverse(blocks_rev, Duplicated, Active)]
fn blocks(b: &Blocks) -> f64 {
    let n = b.w.len() / b.dim;
    let d = b.dim;
    let last = b.w.len() - d;
    let q = 4 - b.ids[1];
    let mut s = 0.0;
    for i in 0..n {
        s += b.w[i * d] * b.w[i * d + d - 1];
    }
    s + b.w[last] * q as f64
        + b.w[b.dim - 1].sin() * (b.w.len() % b.dim + 1) as f64
        + b.w[b.ids[1] * 2 - b.dim + 1] * 0.5
}

fn blocks_o<D: Num>(w: &[D]) -> D {
    let mut s = c::<D>(0.0);
    for i in 0..w.len() / 2 {
        s += w[2 * i] * w[2 * i + 1];
    }
    s + w[w.len() - 2] * 3.0 + w[1].sin() * (w.len() % 2 + 1) as f64 + w[1] * 0.5
}

fn with_weights(w: &[f64]) -> Blocks {
    Blocks {
        w: w.to_vec(),
        dim: 2,
        ids: vec![0, 1],
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn integer_members_divide_and_subtract((x, v, s0) in slice_case(-1.5, 1.5, 2..7, 0), s in seed()) {
        check_slice(
            "blocks",
            (&x, &v, &s0, s),
            |x| blocks(&with_weights(x)),
            |x, v| blocks_fwd(&with_weights(x), &with_weights(v)),
            |x, dx, s| {
                let mut shadow = with_weights(dx);
                let y = blocks_rev(&with_weights(x), &mut shadow, s);
                dx.copy_from_slice(&shadow.w);
                assert_eq!(shadow.dim, 2);
                y
            },
            blocks_o,
        );
    }

    #[test]
    fn integer_members_bound_to_locals((x, v, s0) in slice_case(-1.5, 1.5, 1..6, 0), s in seed()) {
        check_slice(
            "sizes",
            (&x, &v, &s0, s),
            |x| sizes(x, &MIXTURE),
            |x, v| sizes_fwd(x, v, &MIXTURE),
            |x, dx, s| sizes_rev(x, dx, &MIXTURE, s),
            |d| sizes_o(d, &MIXTURE),
        );
        check_hvp_of::<sizes_here_rev>(&x, &v, |d| sizes_o(d, &MIXTURE));
    }

    #[test]
    fn float_members_bound_to_locals_keep_their_derivative(
        (x, v, s0) in slice_case(-1.5, 1.5, 1..7, 1),
        s in seed(),
    ) {
        // The shadow holds copies of the counts, as a caller's zeroed clone does.
        let mut shadow = Mixture { scale: s0[0], ..MIXTURE.clone() };
        let mut dx = s0.clone();
        let y = MIXTURE.energy_rev(&mut shadow, &x, &mut dx, s);
        let mut z = vec![MIXTURE.scale];
        z.extend_from_slice(&x);
        let (value, grad) = oracle_grad(|d| energy_o(d[0], &d[1..], &MIXTURE), &z);
        check("energy", y, value);
        check("d scale", shadow.scale - s0[0], s * grad[0]);
        for i in 0..x.len() {
            check(&format!("d x[{i}]"), dx[i] - s0[i], s * grad[i + 1]);
        }
        prop_assert_eq!(shadow.k, MIXTURE.k);
        prop_assert_eq!(shadow.shift, MIXTURE.shift);

        let tangent = Mixture { scale: v[x.len()], ..MIXTURE.clone() };
        let (y, dy) = MIXTURE.energy_fwd(&tangent, &x, &v[..x.len()]);
        let mut dz = vec![v[x.len()]];
        dz.extend_from_slice(&v[..x.len()]);
        let (_, want) = oracle_jvp(|d| vec![energy_o(d[0], &d[1..], &MIXTURE)], &z, &dz);
        check("energy (forward)", y, value);
        check("d energy", dy, want[0]);
    }
}
