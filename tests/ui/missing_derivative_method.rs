use autodiff_core::prelude::*;

struct Model {
    k: f64,
}

impl Model {
    fn energy(&self, x: f64) -> f64 {
        self.k * x * x
    }
}

#[autodiff_reverse(df, Const, Active, Active)]
fn f(m: &Model, x: f64) -> f64 {
    m.energy(x)
}

fn main() {
    assert_eq!(f(&Model { k: 2.0 }, 3.0), 18.0);
}
