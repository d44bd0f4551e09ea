// A conversion to a float type named by an alias, which the macro cannot tell from an
// integer type: refused, since its derivative would be dropped.
use autodiff_core::prelude::*;

type Real = f64;

#[autodiff_reverse(d_sum_sq, Duplicated, Active)]
fn sum_sq(x: &[f32]) -> f64 {
    let mut s = 0.0;
    for &v in x {
        let w = v as Real;
        s += w * w;
    }
    s
}

fn main() {
    let mut g = [0.0; 2];
    d_sum_sq(&[1.0, 2.0], &mut g, 1.0);
    let _ = sum_sq(&[1.0]);
}
