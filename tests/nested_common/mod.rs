//! Shared helpers of the tests of Hessian-vector products (`nested.rs`, `nested_calls.rs`
//! and the H·v checks of the `lang_*` tests).

use autodiff_core::testing::close;

/// Each `got[i]` within `tol` (relative, see `close`) of `want[i]`.
pub fn assert_all_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        close(&format!("{what}[{i}]"), *a, *b, tol).unwrap();
    }
}

/// `H·v` by central differences of a gradient.
pub fn fd_hvp(grad: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], v: &[f64]) -> Vec<f64> {
    let h = 1e-6;
    let xp: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
    let (gp, gm) = (grad(&xp), grad(&xm));
    gp.iter()
        .zip(&gm)
        .map(|(a, b)| (a - b) / (2.0 * h))
        .collect()
}

/// The gradient `x ↦ ∇f(x)` by a reverse companion `(Duplicated, Active)`, seeded with 1.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn grad_of(rev: impl Fn(&[f64], &mut [f64], f64) -> f64) -> impl Fn(&[f64]) -> Vec<f64> {
    move |z: &[f64]| {
        let mut g = vec![0.0; z.len()];
        rev(z, &mut g, 1.0);
        g
    }
}
