use autodiff_core::prelude::*;

#[autodiff_reverse(df, Active, Active, Active)]
fn f(x: f64, y: f64) -> f64 {
    let pair = (x * y, x + y);
    match pair {
        (p, s) if s > 0.0 => p / s,
        _ => x,
    }
}

fn main() {
    assert_eq!(f(2.0, 2.0), 1.0);
}
