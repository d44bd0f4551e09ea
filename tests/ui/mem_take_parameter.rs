use autodiff_core::prelude::*;

#[autodiff_reverse(d_drain, Duplicated, Active)]
fn drain(x: &mut Vec<f64>) -> f64 {
    let taken = std::mem::take(x);
    taken[0] * 2.0
}

fn main() {
    let mut x = vec![1.0];
    let _ = drain(&mut x);
}
