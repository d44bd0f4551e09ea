// Two elements of one struct's field passed to one call: their shadows would be borrowed
// mutably twice, and `P`, not marked `#[differentiable]`, has no zero for a separate one.
use autodiff_core::prelude::*;

#[derive(Clone, Debug)]
struct P {
    pos: [f64; 3],
}

impl P {
    #[differentiable]
    fn dist2(&self, other: &P) -> f64 {
        let d = self.pos[0] - other.pos[0];
        d * d
    }
}

#[derive(Clone, Debug)]
struct Sys {
    ps: Vec<P>,
}

#[autodiff_reverse(f_rev, Duplicated, Active)]
fn f(s: &Sys) -> f64 {
    s.ps[0].dist2(&s.ps[1])
}

fn main() {}
