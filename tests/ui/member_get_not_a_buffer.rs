// A struct member's `get(i)` (and `first()`, `last()`) is read as a buffer's element: a
// member of another type with a `get` of its own is an error at the call, not an element
// read by index.
use autodiff_core::prelude::*;

struct Table {
    v: Vec<f64>,
}

impl Table {
    fn get(&self, i: usize) -> Option<f64> {
        self.v.get(i + 1).copied()
    }
}

impl std::ops::Index<usize> for Table {
    type Output = f64;
    fn index(&self, i: usize) -> &f64 {
        &self.v[i]
    }
}

struct Model {
    t: Table,
}

#[autodiff_reverse(d_f, Const, Duplicated, Active)]
fn f(m: &Model, x: &[f64]) -> f64 {
    x[0] * m.t.get(0).unwrap()
}

fn main() {
    let m = Model {
        t: Table { v: vec![1.0, 2.0] },
    };
    let _ = d_f(&m, &[1.0], &mut [0.0], 1.0);
}
