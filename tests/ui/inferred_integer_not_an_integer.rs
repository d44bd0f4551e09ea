// A value taken for an integer from how the code after its `let` uses it (compared with an
// integer literal) that is not one: rustc says so, rather than a derivative being dropped.
use autodiff_core::prelude::*;

#[derive(Clone, Copy)]
struct Level(f64);

impl PartialEq<i32> for Level {
    fn eq(&self, other: &i32) -> bool {
        self.0 == f64::from(*other)
    }
}

fn level(x: f64) -> Level {
    Level(x * x)
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let l = level(x);
    if l == 0 { 0.0 } else { x * 2.0 }
}

fn main() {
    let _ = d_f(1.0, 1.0);
}
