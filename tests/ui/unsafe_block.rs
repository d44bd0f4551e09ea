use autodiff_core::prelude::*;

#[autodiff_reverse(df, Active, Active)]
fn f(x: f64) -> f64 {
    let y = unsafe { std::ptr::read(&x) };
    y * y
}

fn main() {
    assert_eq!(f(2.0), 4.0);
}
