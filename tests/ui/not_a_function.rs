use autodiff_core::prelude::*;

#[autodiff_reverse(df, Active, Active)]
struct Point {
    x: f64,
}

fn main() {
    let p = Point { x: 1.0 };
    assert_eq!(p.x, 1.0);
}
