// A struct behind `&mut` whose methods are called in reverse mode is saved before each
// call and put back in the reverse sweep, so it must be `Clone`: the error says so.
use autodiff_core::prelude::*;

#[differentiable]
pub struct Counter {
    pub total: f64,
}

#[differentiable]
impl Counter {
    pub fn add(&mut self, v: f64) {
        self.total += v * v;
    }
}

#[autodiff_reverse(df, Duplicated, Duplicated)]
fn f(x: &[f64], c: &mut Counter) {
    for v in x {
        c.add(*v);
    }
}

fn main() {
    let mut c = Counter { total: 0.0 };
    f(&[1.0], &mut c);
}
