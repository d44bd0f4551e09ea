use autodiff_core::prelude::*;

// A function that returns `()` has a forward rule that returns `()` too (as the forward
// companion of such a function does); this one returns a float.
#[custom_rule(forward = fill_fwd)]
fn fill(x: &[f64], out: &mut [f64]) {
    out[0] = x[0];
}

fn fill_fwd(x: &[f64], dx: &[f64], out: &mut [f64], dout: &mut [f64]) -> f64 {
    out[0] = x[0];
    dout[0] = dx[0];
    x[0]
}

#[autodiff_forward(g_jvp, Dual, Dual)]
fn g(x: &[f64]) -> f64 {
    let mut out = [0.0];
    fill(x, &mut out);
    out[0]
}

fn main() {
    let _ = g_jvp(&[1.0], &[1.0]);
}
