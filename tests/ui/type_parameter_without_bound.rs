use autodiff_core::prelude::*;

// `T` has no `Real`/`Float` bound, so `x` is not a float to the macro.
#[autodiff_forward(df, Dual, Dual, Dual)]
fn f<T: Copy + std::ops::Mul<Output = T>>(x: T, s: f64) -> f64 {
    let _ = x * x;
    s
}

// Nor is a result of type `T`.
#[differentiable]
fn sq<T: Copy + std::ops::Mul<Output = T>>(x: T) -> T {
    x * x
}

fn main() {
    assert_eq!(f(3.0f64, 1.0), 1.0);
    assert_eq!(sq(3.0f64), 9.0);
}
