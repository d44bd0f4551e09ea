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

// A function written by a `macro_rules!`, its parameter's name passed in: the macro's
// hygiene applies to the tokens it writes itself (`.hypot(3.0)`), and the generated code
// still finds the parameter.
macro_rules! define_norm {
    ($name:ident, $fwd:ident, $rev:ident, $x:ident) => {
        #[autodiff_forward($fwd, Dual, Dual)]
        #[autodiff_reverse($rev, Active, Active)]
        fn $name($x: f64) -> f64 {
            $x.hypot(3.0) + $x.powi(-3)
        }
    };
}

define_norm!(norm_plus, norm_plus_fwd, norm_plus_rev, x);

#[test]
fn a_function_written_by_macro_rules() {
    for x in [4.0_f64, -1.5, 0.25] {
        let want = x / x.hypot(3.0) - 3.0 * x.powi(-4);
        let (y, t) = norm_plus_fwd(x, 1.0);
        let (y2, g) = norm_plus_rev(x, 1.0);
        assert_eq!((y, y2), (norm_plus(x), norm_plus(x)));
        assert!(
            (t - want).abs() < 1e-13 * want.abs().max(1.0),
            "{t} vs {want}"
        );
        assert!(
            (g - want).abs() < 1e-13 * want.abs().max(1.0),
            "{g} vs {want}"
        );
    }
}
