// Code under `#[cfg(..)]` inside a differentiated function is refused: the derivatives
// would differentiate it whatever the configuration. The function itself still compiles.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_q, Active, Active)]
fn q(x: f64) -> f64 {
    let mut s = x * x;
    s *= 1.0;
    #[cfg(any())]
    {
        s += x * 100.0;
    }
    s
}

fn main() {
    let _ = q(0.5);
}
