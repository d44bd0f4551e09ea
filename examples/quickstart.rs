//! `cargo run --release --example quickstart`: a short tour. Each derivative is printed
//! beside a central finite difference.

use autodiff_core::prelude::*;
use autodiff_core::testing::{central_directional, central_gradient};

/// Rosenbrock's function: a loop over a slice.
#[autodiff_reverse(d_rosen, Duplicated, Active)]
#[autodiff_forward(rosen_jvp, Dual, Dual)]
fn rosen(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

/// Two scalars in, one out: reverse mode returns both partial derivatives.
#[autodiff_reverse(d_polar, Active, Active, Active)]
fn polar(r: f64, theta: f64) -> f64 {
    let (s, c) = theta.sin_cos();
    (r * c).hypot(r * s * 0.5).ln()
}

/// A softmax cross-entropy written with iterators, differentiated with respect to the
/// logits; the label is a constant.
#[autodiff_reverse(d_xent, Duplicated, Const, Active)]
fn xent(z: &[f64], label: usize) -> f64 {
    let m = z.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
    s.ln() + m - z[label]
}

/// A model with a method. `Duplicated` model: the gradient with respect to its
/// parameters, added into a shadow model. `Const` model: `#[differentiable]` on the
/// struct gives it a zero shadow, and the gradient is with respect to the input alone.
#[differentiable]
struct Model {
    w: Vec<f64>,
    b: f64,
}

impl Model {
    #[differentiable]
    fn predict(&self, x: &[f64]) -> f64 {
        let mut s = self.b;
        for (w, xi) in self.w.iter().zip(x) {
            s += w * xi;
        }
        s.tanh()
    }
}

#[autodiff_reverse(d_loss, Duplicated, Duplicated, Active)]
#[autodiff_reverse(d_loss_dx, Const, Duplicated, Active)]
fn loss(m: &Model, x: &[f64]) -> f64 {
    let e = m.predict(x) - 0.5;
    e * e
}

fn main() {
    let x = [1.5, 2.0, -0.5];
    println!("Rosenbrock at {x:?}: f = {}", rosen(&x));

    // Reverse mode: one sweep gives the whole gradient, added into `g`.
    let mut g = [0.0; 3];
    d_rosen(&x, &mut g, 1.0);
    println!("  gradient          {g:?}");
    println!(
        "  finite difference {:?}",
        central_gradient(rosen, &x, 1e-7)
    );

    // Forward mode: the derivative along a direction.
    let v = [1.0, -1.0, 0.5];
    let (_, dv) = rosen_jvp(&x, &v);
    println!(
        "  along {v:?}: {dv:.6} (finite difference {:.6})",
        central_directional(rosen, &x, &v, 1e-6)
    );

    let (f, dr, dtheta) = d_polar(2.0, 0.7, 1.0);
    let fd = central_gradient(|p| polar(p[0], p[1]), &[2.0, 0.7], 1e-7);
    println!(
        "polar(2, 0.7) = {f:.6}: d/dr = {dr:.6}, d/dθ = {dtheta:.6} (finite differences {:.6}, {:.6})",
        fd[0], fd[1]
    );

    let z = [0.5, -1.0, 2.0, 0.0];
    let mut gz = [0.0; 4];
    let xent_value = d_xent(&z, &mut gz, 2, 1.0);
    println!("cross-entropy of {z:?} for label 2 = {xent_value:.6}");
    println!("  gradient          {gz:?}");
    println!(
        "  finite difference {:?}",
        central_gradient(|z| xent(z, 2), &z, 1e-7)
    );

    let m = Model {
        w: vec![0.3, -0.8, 0.5],
        b: 0.1,
    };
    let input = [1.0, 0.5, -2.0];
    let mut dm = Model {
        w: vec![0.0; 3],
        b: 0.0,
    };
    let mut dinput = [0.0; 3];
    let l = d_loss(&m, &mut dm, &input, &mut dinput, 1.0);
    let loss_of_w = |w: &[f64]| {
        let m = Model {
            w: w.to_vec(),
            b: 0.1,
        };
        loss(&m, &input)
    };
    println!("model loss = {l:.6}");
    println!("  d/dw              {:?}", dm.w);
    println!(
        "  finite difference {:?}",
        central_gradient(loss_of_w, &m.w, 1e-7)
    );
    let mut dx_only = [0.0; 3];
    d_loss_dx(&m, &input, &mut dx_only, 1.0);
    println!("  d/dinput, model constant {dx_only:?}");
    println!(
        "  finite difference        {:?}",
        central_gradient(|x| loss(&m, x), &input, 1e-7)
    );

    let worst = g
        .iter()
        .zip(central_gradient(rosen, &x, 1e-7))
        .chain(gz.iter().zip(central_gradient(|z| xent(z, 2), &z, 1e-7)))
        .chain(dm.w.iter().zip(central_gradient(loss_of_w, &m.w, 1e-7)))
        .chain(
            dx_only
                .iter()
                .zip(central_gradient(|x| loss(&m, x), &input, 1e-7)),
        )
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-6,
        "a derivative disagrees with finite differences"
    );
    println!("all derivatives agree with finite differences (worst relative gap {worst:.1e})");
}
