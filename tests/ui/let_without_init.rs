use autodiff_core::prelude::*;

// A `let` without an initial value declares one float; a pattern or another type is
// refused at the `let`.
#[autodiff_forward(df, Dual, Dual)]
fn f(x: f64) -> f64 {
    let (y, z);
    (y, z) = (x * x, x);
    let v: Vec<f64>;
    v = vec![y, z];
    v[0] + v[1]
}

fn main() {
    assert_eq!(f(2.0), 6.0);
}
