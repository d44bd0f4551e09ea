//! Formatting macros inside differentiated code, with names captured by the format string
//! (`println!("{s:.3}")`, `{x:>width$}`) as well as positional and named arguments: the
//! captured names read the same values in the companions as in the function (checked by
//! assertions inside it), and the derivatives are unaffected (checked against num-dual).

// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

mod lang_common;

use autodiff_core::prelude::*;
use lang_common::*;
use proptest::prelude::*;

#[autodiff_forward(logged_fwd, Dual, Dual)]
#[autodiff_reverse(logged_rev, Duplicated, Active)]
fn logged(x: &[f64]) -> f64 {
    let s = x[0] * x[1];
    let width = 12;
    // The captured `s` is the product, in every companion.
    assert_eq!(format!("{s:.9}"), format!("{:.9}", x[0] * x[1]));
    assert_eq!(format!("{s:>width$.3}"), format!("{:>12.3}", x[0] * x[1]));
    assert!(s.is_finite(), "s = {s}, width = {width}");
    let mut t = 0.0;
    for (i, v) in x.iter().enumerate() {
        debug_assert_eq!(format!("{i}: {v}",), format!("{}: {}", i, x[i]));
        t += v * v;
    }
    debug_assert!(!format_args!("{t:.0}").to_string().is_empty());
    s.sin() + t
}

fn logged_o<D: Num>(x: &[D]) -> D {
    (x[0] * x[1]).sin() + x.iter().fold(D::zero(), |a, v| a + *v * *v)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn captured_format_arguments((x, v, s0) in slice_case(-1.5, 1.5, 2..5, 0), s in seed()) {
        check_slice("logged", (&x, &v, &s0, s), logged, logged_fwd, logged_rev, logged_o::<Dual64>);
        check_hvp_of::<logged_rev>(&x, &v, logged_o);
    }
}
