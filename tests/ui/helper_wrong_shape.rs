use autodiff_core::prelude::*;

#[autodiff_reverse(d_loss, Duplicated, Const, Active)]
fn loss(w: &[f64], xs: &[f64]) -> f64 {
    w[0] * xs[0]
}

fn main() {
    let _ = gradient::<d_loss>(&[1.0]);
}
