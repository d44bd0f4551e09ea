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

// Functions whose bodies, passed in whole, use iterator chains and locals (the generated
// code derives names from the user's, `__b_x` from `x`, and writes its own; both must
// resolve alike), and a helper and a rule the macro writes, called from them.
macro_rules! objective {
    ($name:ident, $fwd:ident, $rev:ident, |$x:ident| $body:expr) => {
        #[autodiff_forward($fwd, Dual, Dual)]
        #[autodiff_reverse($rev, Duplicated, Active)]
        fn $name($x: &[f64]) -> f64 {
            $body
        }
    };
}

macro_rules! helper_and_rule {
    ($helper:ident, $ruled:ident, $ruled_fwd:ident, $ruled_rev:ident) => {
        #[differentiable]
        fn $helper(a: f64, b: f64) -> f64 {
            let t = a * b;
            t.sin() + a
        }

        /// `3x²` with its rules, the reverse one claiming `7x` (wrong, to be seen).
        #[custom_rule(forward = $ruled_fwd, reverse = $ruled_rev)]
        fn $ruled(x: f64) -> f64 {
            3.0 * x * x
        }

        fn $ruled_fwd(x: f64, dx: f64) -> (f64, f64) {
            (3.0 * x * x, 6.0 * x * dx)
        }

        fn $ruled_rev(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
            (3.0 * x * x, move |g: f64| 7.0 * x * g)
        }
    };
}

helper_and_rule!(mixed, tripled, tripled_fwd, tripled_rev);

objective!(adjacent, adjacent_fwd, adjacent_rev, |x| x
    .windows(2)
    .map(|w| w[0] * w[1])
    .sum());
objective!(shifted, shifted_fwd, shifted_rev, |x| x
    .iter()
    .zip(x.iter().skip(1))
    .map(|(a, b)| (a - b).powi(2))
    .sum::<f64>());
objective!(calls, calls_fwd, calls_rev, |v| {
    let mut s = 0.0;
    for i in 1..v.len() {
        s += mixed(v[i - 1], v[i]) + tripled(v[i]);
    }
    s
});

fn adjacent_o<D: Num>(x: &[D]) -> D {
    x.windows(2).fold(D::zero(), |s, w| s + w[0] * w[1])
}

fn shifted_o<D: Num>(x: &[D]) -> D {
    (1..x.len()).fold(D::zero(), |s, i| s + (x[i - 1] - x[i]).powi(2))
}

/// `calls` with `tripled`'s derivative `6x`, as its forward rule says.
fn calls_o<D: Num>(x: &[D]) -> D {
    (1..x.len()).fold(D::zero(), |s, i| {
        s + (x[i - 1] * x[i]).sin() + x[i - 1] + x[i] * x[i] * D::from(3.0)
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn iterator_bodies_written_by_macro_rules(
        (x, v, s0) in slice_case(-1.5, 1.5, 2..6, 0), s in seed(),
    ) {
        check_slice("adjacent", (&x, &v, &s0, s), adjacent, adjacent_fwd, adjacent_rev, adjacent_o::<Dual64>);
        check_slice("shifted", (&x, &v, &s0, s), shifted, shifted_fwd, shifted_rev, shifted_o::<Dual64>);
        // The forward companion follows the forward rule (6x), the reverse one the
        // reverse rule (7x).
        let (y, t) = calls_fwd(&x, &v);
        let want = calls_o(&x.iter().zip(&v).map(|(a, b)| Dual64::new(*a, *b)).collect::<Vec<_>>());
        check("calls value", y, want.re);
        check("calls tangent", t, want.eps);
        let mut g = vec![0.0; x.len()];
        calls_rev(&x, &mut g, 1.0);
        let mut by_hand = vec![0.0; x.len()];
        for i in 1..x.len() {
            let c = (x[i - 1] * x[i]).cos();
            by_hand[i - 1] += c * x[i] + 1.0;
            by_hand[i] += c * x[i - 1] + 7.0 * x[i];
        }
        check_all("calls gradient", &g, &by_hand);
    }
}
