//! Items inside a differentiated function: `use`, `const` and `static`, at the top of the
//! body, inside a loop, inside a closure and inside a `#[differentiable]` callee, in both
//! modes and under forward over reverse, against num-dual.

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;
mod nested_common;

use autodiff_core::prelude::*;
use lang_common::*;
use nested_common::{assert_all_close, fd_hvp, grad_of};
use proptest::prelude::*;

#[differentiable]
fn scaled(v: f64) -> f64 {
    const K: f64 = 3.0;
    use std::f64::consts::E;
    K * v.sin() + E * v
}

#[autodiff_forward(items_fwd, Dual, Dual)]
#[autodiff_reverse(items_rev, Duplicated, Active)]
fn items(x: &[f64]) -> f64 {
    use std::f64::consts::PI;
    let mut s = 0.0;
    for i in 0..x.len() {
        const W: f64 = 0.25;
        static OFFSET: f64 = 1.5;
        s += scaled(x[i]) * W + OFFSET * (PI * x[i]).cos();
        let g = |t: f64| {
            const Q: f64 = 2.0;
            t * t * Q
        };
        s += g(x[i]);
    }
    s
}

fn items_o<D: Num>(x: &[D]) -> D {
    let e = std::f64::consts::E;
    let pi = std::f64::consts::PI;
    let mut s = c::<D>(0.0);
    for v in x {
        s += (v.sin() * 3.0 + *v * e) * 0.25 + (*v * pi).cos() * 1.5 + *v * *v * 2.0;
    }
    s
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn use_const_and_static_items((x, v, s0) in slice_case(-1.5, 1.5, 0..8, 0), s in seed()) {
        check_slice("items", (&x, &v, &s0, s), items, items_fwd, items_rev, items_o::<Dual64>);
    }

    #[test]
    fn items_under_forward_over_reverse((x, v, _s0) in slice_case(-1.5, 1.5, 1..8, 0)) {
        let hv = autodiff_core::hvp::<items_rev>(&x, &v);
        assert_all_close("items H·v", &hv, &fd_hvp(grad_of(items_rev), &x, &v), 1e-6);
    }
}
