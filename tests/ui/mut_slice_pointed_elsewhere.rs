use autodiff_core::prelude::*;

#[autodiff_forward(d_shift, Dual, Dual)]
fn shift(x: &[f64], out: &mut [f64]) {
    let mut cur = &mut out[..];
    let mut k = 0;
    while cur.len() > 1 {
        cur[0] = cur[0] * cur[1] + x[k];
        cur = &mut cur[1..];
        k += 1;
    }
}

fn main() {
    let mut out = [1.0, 2.0, 3.0];
    shift(&[0.5, 0.25], &mut out);
}
