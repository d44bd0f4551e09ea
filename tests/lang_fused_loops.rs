//! Losses summed over data points, whose reverse companions reverse each iteration of the
//! loop right after it runs (scratch buffers refilled per point, sums whose adjoint is ±
//! the seed, or the seed scaled, as for a mean), and near misses that must be reversed as a whole (a value carried from one
//! iteration to the next, a sum used non-linearly): in both modes and under forward over
//! reverse, at random points against a num-dual oracle.

// Index loops in the oracles mirror the constructs under test.
#![allow(clippy::needless_range_loop)]
// `loss` overwrites a scalar in every iteration before reading it: its initial value is
// never read, which is the point.
#![allow(unused_assignments)]
// Scratch `Vec`s are what the loops under test reuse (`wxc` is an array, the other form).
#![allow(clippy::useless_vec)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

const D: usize = 3;

#[differentiable]
fn softplus(t: f64) -> f64 {
    if t > 20.0 { t } else { (1.0 + t.exp()).ln() }
}

fn softplus_o<T: Num>(t: T) -> T {
    if t.re() > 20.0 {
        t
    } else {
        (t.exp() + 1.0).ln()
    }
}

/// Points `x[3 i..3 i + 3]` against parameters `p = [μ (3), a (3)]`: a centred point and
/// a weighted copy in buffers reused per point, a scalar overwritten per point, a call per
/// point, two sums (one subtracted, through a copy), then a regulariser (a loop of its own).
#[autodiff_forward(loss_fwd, Dual, Dual)]
#[autodiff_reverse(loss_rev, Duplicated, Active)]
fn loss(p: &[f64]) -> f64 {
    let x = [
        0.3, -1.2, 0.7, 1.5, 0.1, -0.4, -0.8, 0.9, 0.2, 0.05, -0.3, 1.1,
    ];
    let n = x.len() / D;
    let mut w = vec![0.0; D];
    for j in 0..D {
        w[j] = p[D + j].exp();
    }
    let mut xc = vec![0.0; D];
    let mut wxc = [0.0; D];
    let mut t = 0.0;
    let mut fit = 0.0;
    let mut pen = 0.0;
    for i in 0..n {
        for j in 0..D {
            xc[j] = x[i * D + j] - p[j];
        }
        for j in 0..D {
            wxc[j] = w[j] * xc[j];
        }
        // A lower-triangle update after the diagonal, as in a Cholesky factor.
        for j in 1..D {
            wxc[j] += p[D + j - 1] * xc[j - 1];
        }
        t = wxc[0] * wxc[1];
        let mut sq = 0.0;
        for j in 0..D {
            sq += wxc[j] * wxc[j];
        }
        if t > 0.0 {
            fit += softplus(sq - t);
        } else {
            fit += 0.5 * sq;
        }
        pen -= t.sin();
    }
    let mut reg = 0.0;
    for j in 0..D {
        reg += w[j] * w[j];
    }
    let both = fit - pen;
    let copy = both;
    copy - reg
}

fn loss_o<T: Num>(p: &[T]) -> T {
    let x = [
        0.3, -1.2, 0.7, 1.5, 0.1, -0.4, -0.8, 0.9, 0.2, 0.05, -0.3, 1.1,
    ];
    let n = x.len() / D;
    let w: Vec<T> = (0..D).map(|j| p[D + j].exp()).collect();
    let mut fit = T::zero();
    let mut pen = T::zero();
    for i in 0..n {
        let xc: Vec<T> = (0..D).map(|j| -p[j] + x[i * D + j]).collect();
        let mut wxc: Vec<T> = (0..D).map(|j| w[j] * xc[j]).collect();
        for j in 1..D {
            wxc[j] += p[D + j - 1] * xc[j - 1];
        }
        let t = wxc[0] * wxc[1];
        let sq = wxc.iter().fold(T::zero(), |a, &v| a + v * v);
        if t.re() > 0.0 {
            fit += softplus_o(sq - t);
        } else {
            fit += sq * 0.5;
        }
        pen -= t.sin();
    }
    let reg = w.iter().fold(T::zero(), |a, &v| a + v * v);
    fit - pen - reg
}

/// [`loss`] as a callee: its pullback runs both sweeps with the seed known, so its loop
/// over points is reversed a point at a time there too.
#[autodiff_forward(outer_fwd, Dual, Dual)]
#[autodiff_reverse(outer_rev, Duplicated, Active)]
fn outer(p: &[f64]) -> f64 {
    let a = loss(p);
    a * a.sin() + p[0] * loss(p)
}

fn outer_o<T: Num>(p: &[T]) -> T {
    let a = loss_o(p);
    a * a.sin() + p[0] * loss_o(p)
}

/// A mean over points, scaled, weighted by a parameter and negated after the loop: the
/// sum's adjoint is the seed so scaled (`-seed · p[0] · 0.5 / n`), known before the loop,
/// which is reversed a point at a time with it.
#[autodiff_forward(mean_fwd, Dual, Dual)]
#[autodiff_reverse(mean_rev, Duplicated, Active)]
fn mean(p: &[f64]) -> f64 {
    let x = [0.4, -1.1, 0.6, 1.3, -0.2, 0.8];
    let n = x.len() / 2;
    let mut r = vec![0.0; 2];
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..2 {
            r[j] = (x[2 * i + j] - p[j]).tanh();
        }
        s += r[0] * r[0] + p[2] * r[1];
    }
    let m = s / n as f64;
    -(0.5 * m * p[0]) + p[1]
}

fn mean_o<T: Num>(p: &[T]) -> T {
    let x = [0.4, -1.1, 0.6, 1.3, -0.2, 0.8];
    let n = x.len() / 2;
    let mut s = T::zero();
    for i in 0..n {
        let r0 = (-p[0] + x[2 * i]).tanh();
        let r1 = (-p[1] + x[2 * i + 1]).tanh();
        s += r0 * r0 + p[2] * r1;
    }
    let m = s / n as f64;
    -(m * 0.5 * p[0]) + p[1]
}

/// A linear model with an active scalar bias: the loop reads the scalar parameter `b`,
/// whose adjoint is declared before the forward sweep so that each point's reverse can
/// add into it.
#[autodiff_forward(fit_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(fit_rev, Duplicated, Active, Active)]
fn fit(w: &[f64], b: f64) -> f64 {
    let x = [0.4, -1.1, 0.6, 1.3, -0.2, 0.8];
    let y = [0.5, -0.3, 1.2];
    let mut feat = [0.0; 2];
    let mut s = 0.0;
    for i in 0..3 {
        for j in 0..2 {
            feat[j] = x[2 * i + j].sin();
        }
        let r = w[0] * feat[0] + w[1] * feat[1] + b - y[i];
        s += r * r;
    }
    s / 3.0
}

fn fit_o<T: Num>(w: &[T], b: T) -> T {
    let x = [0.4f64, -1.1, 0.6, 1.3, -0.2, 0.8];
    let y = [0.5, -0.3, 1.2];
    let mut s = T::zero();
    for i in 0..3 {
        let r = w[0] * x[2 * i].sin() + w[1] * x[2 * i + 1].sin() + b - y[i];
        s += r * r;
    }
    s / 3.0
}

/// [`fit`] as a callee: its pullback declares the bias's adjoint before its forward
/// sweep too.
#[autodiff_reverse(fit_outer_rev, Duplicated, Active, Active)]
fn fit_outer(w: &[f64], b: f64) -> f64 {
    fit(w, b) * b.cos() + fit(w, 0.5 * b)
}

fn fit_outer_o<T: Num>(w: &[T], b: T) -> T {
    fit_o(w, b) * b.cos() + fit_o(w, b * 0.5)
}

/// A near miss: the buffer keeps a value from the previous point, so the loop's
/// iterations depend on one another.
#[autodiff_forward(carried_fwd, Dual, Dual)]
#[autodiff_reverse(carried_rev, Duplicated, Active)]
fn carried(x: &[f64]) -> f64 {
    let mut prev = vec![0.0; 2];
    let mut s = 0.0;
    for i in 0..x.len() {
        s += prev[0] * x[i] + prev[1];
        prev[0] = x[i].sin();
        prev[1] = prev[0] * x[i];
    }
    s
}

fn carried_o<T: Num>(x: &[T]) -> T {
    let mut prev = [T::zero(), T::zero()];
    let mut s = T::zero();
    for i in 0..x.len() {
        s += prev[0] * x[i] + prev[1];
        prev[0] = x[i].sin();
        prev[1] = prev[0] * x[i];
    }
    s
}

/// A near miss: the sum is used non-linearly after the loop.
#[autodiff_forward(squared_fwd, Dual, Dual)]
#[autodiff_reverse(squared_rev, Duplicated, Active)]
fn squared(x: &[f64]) -> f64 {
    let mut b = vec![0.0; 1];
    let mut s = 0.0;
    for i in 0..x.len() {
        b[0] = x[i] * x[i];
        s += b[0].cos();
    }
    s * s + s
}

fn squared_o<T: Num>(x: &[T]) -> T {
    let s = x.iter().fold(T::zero(), |a, &v| a + (v * v).cos());
    s * s + s
}

/// A `Const` work buffer that the function fills and reads back (its shadow is made only
/// after the forward sweep), read in a loop with a scratch buffer of its own.
#[autodiff_forward(workspace_fwd, Dual, Const, Dual)]
#[autodiff_reverse(workspace_rev, Duplicated, Const, Active)]
fn workspace(x: &[f64], ws: &mut [f64]) -> f64 {
    let n = x.len();
    for i in 0..n {
        ws[i] = x[i].cos();
    }
    let mut b = vec![0.0; 2];
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..2 {
            b[j] = ws[i] * x[(i + j) % n];
        }
        s += b[0] * b[1];
    }
    s
}

fn workspace_o<T: Num>(x: &[T]) -> T {
    let n = x.len();
    let mut s = T::zero();
    for i in 0..n {
        s += x[i].cos() * x[i] * x[i].cos() * x[(i + 1) % n];
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sums_over_points_reversed_per_point(
        p in vecf(-1.0, 1.0, 2 * D),
        v in dirs(2 * D),
        s0 in dirs(2 * D),
        s in seed(),
    ) {
        check_slice("loss", (&p, &v, &s0, s), loss, loss_fwd, loss_rev, loss_o::<Dual64>);
        check_hvp_of::<loss_rev>(&p, &v, loss_o);
        check_slice("outer", (&p, &v, &s0, s), outer, outer_fwd, outer_rev, outer_o::<Dual64>);
        check_hvp_of::<outer_rev>(&p, &v, outer_o);
        let (p3, v3, s3) = (&p[..3], &v[..3], &s0[..3]);
        check_slice("mean", (p3, v3, s3, s), mean, mean_fwd, mean_rev, mean_o::<Dual64>);
        check_hvp_of::<mean_rev>(p3, v3, mean_o);
    }

    #[test]
    fn a_loop_reading_an_active_scalar_parameter(
        p in vecf(-1.0, 1.0, 3),
        v in dirs(3),
        s in seed(),
    ) {
        let (w, b) = (&p[..2], p[2]);
        let (value, grad) = oracle_grad(|d| fit_o(&d[..2], d[2]), &p);
        let mut gw = vec![0.0; 2];
        let (f, gb) = fit_rev(w, &mut gw, b, s);
        check("fit", f, value);
        check_all("fit: gradient", &[gw[0], gw[1], gb], &[grad[0] * s, grad[1] * s, grad[2] * s]);
        let (f2, t) = fit_fwd(w, &v[..2], b, v[2]);
        check("fit: forward value", f2, value);
        check("fit: tangent", t, grad.iter().zip(&v).map(|(g, d)| g * d).sum());

        let (value, grad) = oracle_grad(|d| fit_outer_o(&d[..2], d[2]), &p);
        let mut gw = vec![0.0; 2];
        let (f, gb) = fit_outer_rev(w, &mut gw, b, s);
        check("fit_outer", f, value);
        check_all("fit_outer: gradient", &[gw[0], gw[1], gb], &[grad[0] * s, grad[1] * s, grad[2] * s]);
    }

    #[test]
    fn loops_that_cannot_be_reversed_per_iteration(
        (x, v, s0, s) in slice_seed_case(-1.5, 1.5, 1..6),
    ) {
        check_slice("carried", (&x, &v, &s0, s), carried, carried_fwd, carried_rev, carried_o::<Dual64>);
        check_hvp_of::<carried_rev>(&x, &v, carried_o);
        check_slice("squared", (&x, &v, &s0, s), squared, squared_fwd, squared_rev, squared_o::<Dual64>);
        check_hvp_of::<squared_rev>(&x, &v, squared_o);
        let n = x.len();
        check_slice(
            "workspace",
            (&x, &v, &s0, s),
            |x| workspace(x, &mut vec![7.0; n]),
            |x, v| workspace_fwd(x, v, &mut vec![7.0; n]),
            |x, b, s| workspace_rev(x, b, &mut vec![7.0; n], s),
            workspace_o::<Dual64>,
        );
    }
}
