//! Differentiating through a numerical integral with a custom rule.
//!
//! `quad(f, a, b, opts)` integrates a closure by adaptive Gauss–Kronrod (7–15) quadrature.
//! Its rules differentiate the *integral*, not the quadrature's arithmetic: by Leibniz's
//! rule, `d/db ∫ f = f(b)`, `d/da ∫ f = -f(a)`, and the derivative with respect to what `f`
//! captured is `∫ ∂f`, integrated by the same scheme. The closure arrives in the rules as
//! a `DiffFn`, which carries the derivatives of the captured `p` and `q`. The options are
//! constant: tolerances are not differentiated.
//!
//! Run: `cargo run --release --example quadrature`

// The Gauss–Kronrod tables are quoted to the digits of the published tables.
#![allow(clippy::excessive_precision)]

use autodiff_core::prelude::*;

/// Options of the quadrature; constant for differentiation.
#[derive(Clone, Copy, Debug)]
struct QuadOpts {
    tol: f64,
    max_depth: usize,
}

// Gauss–Kronrod 7–15 nodes and weights on [-1, 1].
const XGK: [f64; 8] = [
    0.991455371120812639206854697526329,
    0.949107912342758524526189684047851,
    0.864864423359769072789712788640926,
    0.741531185599394439863864773280788,
    0.586087235467691130294144845693013,
    0.405845151377397166906606412076961,
    0.207784955007898467600689403773245,
    0.000000000000000000000000000000000,
];
const WGK: [f64; 8] = [
    0.022935322010529224963732008058970,
    0.063092092629978553290700663189204,
    0.104790010322250183839876322541518,
    0.140653259715525918745189590510238,
    0.169004726639267902826583426598550,
    0.190350578064785409913256402421014,
    0.204432940075298892414161999234649,
    0.209482141084727828012999174891714,
];
const WG: [f64; 4] = [
    0.129484966168869693270611432679082,
    0.279705391489276667901467771423780,
    0.381830050505118944950369775488975,
    0.417959183673469387755102040816327,
];

/// The nodes and weights of an adaptive integration of `f` over `[a, b]`: the integral is
/// `Σ w_i f(x_i)`. The rules reuse them to integrate derivatives.
fn adaptive_nodes(f: &dyn Fn(f64) -> f64, a: f64, b: f64, opts: QuadOpts) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut stack = vec![(a, b, 0usize)];
    while let Some((lo, hi, depth)) = stack.pop() {
        let c = 0.5 * (lo + hi);
        let h = 0.5 * (hi - lo);
        let (mut kronrod, mut gauss) = (0.0, 0.0);
        let mut nodes = Vec::with_capacity(15);
        for k in 0..8 {
            let xs: &[f64] = if k == 7 {
                &[c]
            } else {
                &[c - h * XGK[k], c + h * XGK[k]]
            };
            for &x in xs {
                let y = f(x);
                kronrod += WGK[k] * y;
                if k % 2 == 1 {
                    gauss += WG[k / 2] * y;
                }
                nodes.push((x, h * WGK[k]));
            }
        }
        if ((kronrod - gauss) * h).abs() <= opts.tol || depth >= opts.max_depth {
            out.extend(nodes);
        } else {
            stack.push((lo, c, depth + 1));
            stack.push((c, hi, depth + 1));
        }
    }
    out
}

#[custom_rule(forward = quad_fwd, reverse = quad_rev)]
fn quad<F: Fn(f64) -> f64>(f: F, a: f64, b: f64, #[constant] opts: QuadOpts) -> f64 {
    adaptive_nodes(&f, a, b, opts)
        .iter()
        .map(|&(x, w)| w * f(x))
        .sum()
}

/// Forward rule: the tangent of the integral along `(da, db)` and the tangents that `f`
/// captured.
fn quad_fwd<F: DiffFn<f64, f64>>(
    f: F,
    a: f64,
    da: f64,
    b: f64,
    db: f64,
    opts: QuadOpts,
) -> (f64, f64) {
    let nodes = adaptive_nodes(&|x| f.call(x), a, b, opts);
    let (mut y, mut dy) = (0.0, 0.0);
    for (x, w) in nodes {
        // A zero input tangent: only the captured variables move.
        let (fx, dfx) = f.jvp(x, 0.0);
        y += w * fx;
        dy += w * dfx;
    }
    (y, dy + f.call(b) * db - f.call(a) * da)
}

/// Reverse rule: the pullback integrates the cotangent of what `f` captured and returns
/// the adjoints of `a` and `b`.
fn quad_rev<F: DiffFn<f64, f64>>(
    f: F,
    a: f64,
    b: f64,
    opts: QuadOpts,
) -> (f64, impl FnOnce(f64) -> (f64, f64)) {
    let nodes = adaptive_nodes(&|x| f.call(x), a, b, opts);
    let y = nodes.iter().map(|&(x, w)| w * f.call(x)).sum();
    (y, move |ybar: f64| {
        for (x, w) in nodes {
            f.vjp(x, ybar * w);
        }
        (-ybar * f.call(a), ybar * f.call(b))
    })
}

const OPTS: QuadOpts = QuadOpts {
    tol: 1e-13,
    max_depth: 12,
};

/// `∫_a^b sin(p·x)·exp(-q·x) dx`.
#[autodiff_reverse(d_damped, Active, Active, Active, Active, Active)]
#[autodiff_forward(damped_jvp, Dual, Dual, Dual, Dual, Dual)]
fn damped(p: f64, q: f64, a: f64, b: f64) -> f64 {
    quad(|x| (p * x).sin() * (-q * x).exp(), a, b, OPTS)
}

/// The antiderivative `F(x) = e^{-qx}(-q sin px - p cos px)/(p² + q²)` and its partial
/// derivatives with respect to `p` and `q`.
fn antiderivative(p: f64, q: f64, x: f64) -> (f64, f64, f64) {
    let r = p * p + q * q;
    let e = (-q * x).exp();
    let (s, c) = (p * x).sin_cos();
    let g = -q * s - p * c;
    let dg_dp = -q * x * c - c + p * x * s;
    let dg_dq = -s;
    let f = e * g / r;
    let df_dp = e * (dg_dp * r - g * 2.0 * p) / (r * r);
    let df_dq = (-x * e * g + e * dg_dq) / r - e * g * 2.0 * q / (r * r);
    (f, df_dp, df_dq)
}

fn main() {
    let (p, q, a, b) = (3.0, 0.7, 0.2, 2.5);
    let integrand = |x: f64| (p * x).sin() * (-q * x).exp();
    let (fa, dpa, dqa) = antiderivative(p, q, a);
    let (fb, dpb, dqb) = antiderivative(p, q, b);
    let exact = [fb - fa, dpb - dpa, dqb - dqa, -integrand(a), integrand(b)];

    let (value, dp, dq, da, db) = d_damped(p, q, a, b, 1.0);
    let got = [value, dp, dq, da, db];
    println!("∫_a^b sin(p x) exp(-q x) dx at p = {p}, q = {q}, a = {a}, b = {b}");
    println!(
        "{:>8} {:>22} {:>22} {:>10}",
        "", "reverse rule", "analytic", "error"
    );
    let names = ["value", "d/dp", "d/dq", "d/da", "d/db"];
    let mut worst: f64 = 0.0;
    for i in 0..5 {
        let err = (got[i] - exact[i]).abs();
        worst = worst.max(err);
        println!(
            "{:>8} {:>22.15} {:>22.15} {:>10.1e}",
            names[i], got[i], exact[i], err
        );
    }

    // Forward mode, one direction per input.
    let mut fwd = [0.0; 4];
    for (i, t) in fwd.iter_mut().enumerate() {
        let e = |k: usize| if k == i { 1.0 } else { 0.0 };
        *t = damped_jvp(p, e(0), q, e(1), a, e(2), b, e(3)).1;
    }
    println!(
        "forward rule: d/dp {:.15}, d/dq {:.15}, d/da {:.15}, d/db {:.15}",
        fwd[0], fwd[1], fwd[2], fwd[3]
    );
    for i in 0..4 {
        worst = worst.max((fwd[i] - exact[i + 1]).abs());
    }
    assert!(worst < 1e-10, "quadrature derivatives off by {worst:e}");
    println!("largest error against the analytic values: {worst:.1e}");
}
