// A copy of a whole struct inside differentiated code.
use autodiff_core::prelude::*;

#[derive(Clone)]
pub struct Osc {
    pub x: f64,
    pub v: f64,
}

#[autodiff_reverse(d_energy, Duplicated, Active)]
fn energy(o: &Osc) -> f64 {
    let s = o.clone();
    s.x * s.x + s.v * s.v
}

fn main() {}

#[autodiff_forward(d_first, Dual, Dual)]
fn first(a: &[Vec<f64>]) -> f64 {
    let m = a.to_vec();
    m[0][0] * m[1][1]
}
