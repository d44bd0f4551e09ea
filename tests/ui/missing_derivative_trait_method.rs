use autodiff_core::prelude::*;

trait Cube {
    fn cube(self) -> f64;
}

impl Cube for f64 {
    fn cube(self) -> f64 {
        self * self * self
    }
}

#[autodiff_forward(df, Dual, Dual)]
fn f(x: f64) -> f64 {
    let y = 2.0 * x;
    y.cube()
}

fn main() {
    assert_eq!(f(1.0), 8.0);
}
