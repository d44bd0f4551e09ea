// A `Vec` of structs or of tuples built in the function: each member needs a vector of
// its own, and the error says which value cannot go in.
use autodiff_core::prelude::*;

#[derive(Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
}

#[autodiff_reverse(d_points, Duplicated, Active)]
fn points(p: &[f64]) -> f64 {
    let pts: Vec<Point> = p.chunks(2).map(|c| Point { x: c[0], y: c[1] }).collect();
    pts[0].x * pts[1].y
}

#[autodiff_reverse(d_pairs, Duplicated, Active)]
fn pairs(p: &[f64]) -> f64 {
    let mut v = Vec::new();
    for i in 0..p.len() / 2 {
        v.push((p[2 * i], p[2 * i + 1]));
    }
    v[0].0 * v[1].1
}

fn main() {}
