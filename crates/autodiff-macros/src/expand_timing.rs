//! How long the macro takes to expand one annotated function (a ten-line Rosenbrock with
//! a reverse and a forward companion, with every nested variant): a measurement to run by
//! hand, under a profiler when needed, not a test of anything.
//!
//! ```text
//! cargo test --release -p autodiff-macros expand_timing -- --ignored --nocapture
//! ```

use crate::activity::Mode;
use crate::expand::{Trigger, expand};

#[test]
#[ignore]
fn expand_timing() {
    let item = quote::quote! {
        #[autodiff_forward(rosen_jvp, Dual, Dual)]
        fn rosen(x: &[f64]) -> f64 {
            let mut s = 0.0;
            for i in 0..x.len() - 1 {
                let a = 1.0 - x[i];
                let b = x[i + 1] - x[i] * x[i];
                s += a * a + 100.0 * b * b;
            }
            s
        }
    };
    let args = quote::quote!(d_rosen, Duplicated, Active);
    let runs = 50;
    let start = std::time::Instant::now();
    let mut chars = 0;
    for _ in 0..runs {
        let out = expand(
            Trigger::Companion(Mode::Reverse, args.clone()),
            item.clone(),
        );
        chars += out.to_string().len();
    }
    eprintln!(
        "{runs} expansions in {:?}: {:?} each, {} characters of code each",
        start.elapsed(),
        start.elapsed() / runs,
        chars / runs as usize
    );
}
