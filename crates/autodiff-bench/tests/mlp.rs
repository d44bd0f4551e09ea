//! The `ndarray` perceptron: the generated gradient against the hand-written one and
//! against central differences, and the generated H·v (of the index loops and of the
//! whole-array version) against central differences of the hand-written gradient.

use autodiff_bench::mlp::{Mlp, flatten, mlp_loss, mlp_loss_grad_hand};
use ndarray::{Array1, Array2};

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} against {w}"
        );
    }
}

/// `p` with its parameters replaced by `flat` (laid out as [`flatten`]).
fn with_params(p: &Mlp, flat: &[f64]) -> (Array2<f64>, Array1<f64>, Array1<f64>) {
    let (n1, nb) = (p.w1.len(), p.b1.len());
    (
        Array2::from_shape_vec(p.w1.dim(), flat[..n1].to_vec()).unwrap(),
        Array1::from_vec(flat[n1..n1 + nb].to_vec()),
        Array1::from_vec(flat[n1 + nb..].to_vec()),
    )
}

#[test]
fn gradient_matches_hand_written_and_differences() {
    let p = Mlp::new(5, 7, 11);
    let mut g = p.zero_grads();
    let f = p.gradient(&mut g);
    assert!((f - p.objective()).abs() <= 1e-14 * f.abs().max(1.0));
    let mut h = p.zero_grads();
    let fh = p.gradient_hand(&mut h);
    assert!((f - fh).abs() <= 1e-12 * f.abs().max(1.0));
    close("against hand-written", &flatten(&g), &flatten(&h), 1e-12);

    let x = flatten(&(p.w1.clone(), p.b1.clone(), p.w2.clone()));
    let eps = 1e-6;
    let fd: Vec<f64> = (0..x.len())
        .map(|i| {
            let (mut a, mut b) = (x.clone(), x.clone());
            a[i] += eps;
            b[i] -= eps;
            let (w1, b1, w2) = with_params(&p, &a);
            let fa = mlp_loss(&w1, &b1, &w2, &p.xs, &p.ys);
            let (w1, b1, w2) = with_params(&p, &b);
            let fb = mlp_loss(&w1, &b1, &w2, &p.xs, &p.ys);
            (fa - fb) / (2.0 * eps)
        })
        .collect();
    close("against central differences", &flatten(&g), &fd, 1e-6);
}

#[test]
fn whole_array_version_matches_the_index_loops() {
    let p = Mlp::new(5, 7, 11);
    let f = p.objective();
    assert!((p.objective_arrays() - f).abs() <= 1e-12 * f.abs().max(1.0));
    let (mut g, mut h) = (p.zero_grads(), p.zero_grads());
    let fa = p.gradient_arrays(&mut g);
    assert!((fa - f).abs() <= 1e-12 * f.abs().max(1.0));
    p.gradient_hand(&mut h);
    close("whole-array gradient", &flatten(&g), &flatten(&h), 1e-12);
}

#[test]
fn hvp_matches_differences_of_the_gradient() {
    let p = Mlp::new(4, 6, 9);
    let n = p.num_params();
    let v: Vec<f64> = (0..n).map(|i| ((i * 7 % 11) as f64 - 5.0) * 0.1).collect();
    let vv = with_params(&p, &v);
    let (mut g, mut hv) = (p.zero_grads(), p.zero_grads());
    p.hvp(&vv, &mut g, &mut hv);
    let (mut g_arrays, mut hv_arrays) = (p.zero_grads(), p.zero_grads());
    p.hvp_arrays(&vv, &mut g_arrays, &mut hv_arrays);
    let mut gh = p.zero_grads();
    p.gradient_hand(&mut gh);
    close("gradient under H·v", &flatten(&g), &flatten(&gh), 1e-12);

    let x = flatten(&(p.w1.clone(), p.b1.clone(), p.w2.clone()));
    let eps = 1e-5;
    let grad_at = |t: f64| {
        let xt: Vec<f64> = x.iter().zip(&v).map(|(a, d)| a + t * d).collect();
        let (w1, b1, w2) = with_params(&p, &xt);
        let mut g = p.zero_grads();
        mlp_loss_grad_hand(&w1, &b1, &w2, &p.xs, &p.ys, &mut g.0, &mut g.1, &mut g.2);
        flatten(&g)
    };
    let (ga, gb) = (grad_at(eps), grad_at(-eps));
    let fd: Vec<f64> = ga
        .iter()
        .zip(&gb)
        .map(|(a, b)| (a - b) / (2.0 * eps))
        .collect();
    close("H·v against differences", &flatten(&hv), &fd, 1e-6);
    close(
        "whole-array gradient under H·v",
        &flatten(&g_arrays),
        &flatten(&gh),
        1e-12,
    );
    close(
        "whole-array H·v against differences",
        &flatten(&hv_arrays),
        &fd,
        1e-6,
    );
}
