//! Checks of derivatives against central finite differences, for use in tests.
//!
//! They play the role of JAX's `check_grads`: call them with a function, its generated
//! companion (or custom rule) wrapped in a closure, and the points to check at. On a
//! mismatch they return an error that names the component, both values and the tolerance.
//!
//! ```
//! use autodiff_core::prelude::*;
//! use autodiff_core::testing::check_gradient;
//!
//! #[autodiff_reverse(d_f, Duplicated, Active)]
//! fn f(x: &[f64]) -> f64 { x[0] * x[1].sin() }
//!
//! check_gradient(
//!     |x| f(x),
//!     |x| { let mut g = vec![0.0; x.len()]; d_f(x, &mut g, 1.0); g },
//!     &[0.3, 1.2],
//!     1e-6,
//! ).unwrap();
//! ```

/// The central finite-difference gradient of `f` at `x`, with relative step `h`.
pub fn central_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            let step = h * (1.0 + x[i].abs());
            xp[i] = x[i] + step;
            let fp = f(&xp);
            xp[i] = x[i] - step;
            let fm = f(&xp);
            xp[i] = x[i];
            (fp - fm) / (2.0 * step)
        })
        .collect()
}

/// The central finite-difference directional derivative of `f` at `x` along `v`.
pub fn central_directional(f: impl Fn(&[f64]) -> f64, x: &[f64], v: &[f64], h: f64) -> f64 {
    let xp: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
    (f(&xp) - f(&xm)) / (2.0 * h)
}

/// `Ok` when `got` and `want` agree to `tol`, relative to the larger magnitude (or
/// absolute below 1).
pub fn close(what: &str, got: f64, want: f64, tol: f64) -> Result<(), String> {
    let scale = 1.0_f64.max(got.abs()).max(want.abs());
    if (got - want).abs() <= tol * scale && got.is_finite() == want.is_finite() {
        Ok(())
    } else {
        Err(format!(
            "{what}: got {got:e}, expected {want:e} (difference {:e}, tolerance {tol:e} relative to {scale:e})",
            (got - want).abs()
        ))
    }
}

/// Compares a gradient (e.g. from a reverse companion) with central finite differences.
pub fn check_gradient(
    f: impl Fn(&[f64]) -> f64,
    grad: impl Fn(&[f64]) -> Vec<f64>,
    x: &[f64],
    tol: f64,
) -> Result<(), String> {
    let g = grad(x);
    if g.len() != x.len() {
        return Err(format!(
            "gradient has {} components, expected {}",
            g.len(),
            x.len()
        ));
    }
    let fd = central_gradient(&f, x, 1e-6);
    for (i, (a, b)) in g.iter().zip(&fd).enumerate() {
        close(&format!("d/dx[{i}] at x = {x:?}"), *a, *b, tol)?;
    }
    Ok(())
}

/// Compares a directional derivative (e.g. from a forward companion) with central finite
/// differences, for each direction given.
pub fn check_directional(
    f: impl Fn(&[f64]) -> f64,
    jvp: impl Fn(&[f64], &[f64]) -> f64,
    x: &[f64],
    directions: &[&[f64]],
    tol: f64,
) -> Result<(), String> {
    for v in directions {
        let got = jvp(x, v);
        let want = central_directional(&f, x, v, 1e-6);
        close(
            &format!("derivative at x = {x:?} along {v:?}"),
            got,
            want,
            tol,
        )?;
    }
    Ok(())
}

/// Checks that forward and reverse agree: `⟨∇f(x), v⟩ = J(x)·v`.
pub fn check_consistent(
    grad: impl Fn(&[f64]) -> Vec<f64>,
    jvp: impl Fn(&[f64], &[f64]) -> f64,
    x: &[f64],
    v: &[f64],
    tol: f64,
) -> Result<(), String> {
    let g = grad(x);
    let lhs: f64 = g.iter().zip(v).map(|(a, b)| a * b).sum();
    close("⟨∇f, v⟩ against J·v", lhs, jvp(x, v), tol)
}
