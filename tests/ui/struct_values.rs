// Struct values built in differentiated code hold floats, constants and owned buffers,
// and are built from literals that name every member.
use autodiff_core::prelude::*;

#[derive(Clone, Copy, Default)]
struct Point {
    x: f64,
    y: f64,
}

struct View<'a> {
    w: &'a [f64],
    b: f64,
}

#[autodiff_reverse(d_update_syntax, Active, Active)]
fn update_syntax(a: f64) -> f64 {
    let p = Point {
        x: a,
        ..Default::default()
    };
    p.x
}

#[autodiff_reverse(d_buffer_member, Duplicated, Active)]
fn buffer_member(x: &[f64]) -> f64 {
    let m = View { w: x, b: x[0] };
    m.b
}

fn main() {
    update_syntax(1.0);
    buffer_member(&[1.0]);
    mutable_copy(1.0);
    captured(1.0);
}

#[autodiff_reverse(d_mutable_copy, Active, Active)]
fn mutable_copy(a: f64) -> f64 {
    let p = Point { x: a, y: 1.0 };
    let mut q = p;
    q.x *= 2.0;
    q.x
}

#[differentiable]
fn twice<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
    2.0 * f(x)
}

#[autodiff_reverse(d_captured, Active, Active)]
fn captured(a: f64) -> f64 {
    let p = Point { x: a, y: 1.0 };
    twice(|t: f64| t * p.x, a)
}
