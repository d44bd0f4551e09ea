// A struct member's `dim()` (and `nrows()`, `shape()`, ..) is read as the shape of an
// `ndarray` array, which carries no derivative: a member of another type is an error at
// the call, not a derivative lost.
use autodiff_core::prelude::*;

struct Grid {
    n: usize,
}

impl Grid {
    fn dim(&self) -> usize {
        self.n
    }
}

struct Mesh {
    grid: Grid,
}

#[autodiff_reverse(d_f, Const, Duplicated, Active)]
fn f(m: &Mesh, x: &[f64]) -> f64 {
    let n = m.grid.dim();
    x[0] * n as f64
}

fn main() {
    let m = Mesh { grid: Grid { n: 2 } };
    let _ = d_f(&m, &[1.0], &mut [0.0], 1.0);
}
