use autodiff_core::prelude::*;

macro_rules! square {
    ($e:expr) => {
        $e * $e
    };
}

#[autodiff_reverse(df, Active, Active)]
fn f(x: f64) -> f64 {
    square!(x)
}

fn main() {
    assert_eq!(f(2.0), 4.0);
}
