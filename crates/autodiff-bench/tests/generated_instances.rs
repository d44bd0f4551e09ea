//! Seeded ADBench instances (`autodiff_bench::generate`): they survive a trip through
//! ADBench's file layout, and on them every gradient (generated, hand-written) agrees with
//! the others and with central differences, so that the benchmarks can run at sizes
//! ADBench's files do not have.

use autodiff_bench::adbench::{load_gmm, load_lstm, parse_gmm, parse_lstm, write_gmm, write_lstm};
use autodiff_bench::generate::{gmm_instance, lstm_instance};
use autodiff_bench::gmm::Gmm;
use autodiff_bench::lstm::Lstm;
use autodiff_bench::{max_rel_error, rel_diff};

#[test]
fn instances_survive_the_file_layout() {
    let g = gmm_instance(4, 3, 20, 9);
    assert_eq!(parse_gmm(&write_gmm(&g)), g);
    let l = lstm_instance(2, 8, 5, 9);
    assert_eq!(parse_lstm(&write_lstm(&l)), l);
    // ADBench's own files too: the layout written is the one read.
    let g = load_gmm("gmm_d2_K5");
    assert_eq!(parse_gmm(&write_gmm(&g)), g);
    let l = load_lstm("lstm_l2_c1024");
    assert_eq!(parse_lstm(&write_lstm(&l)), l);
}

/// Central differences of `f` at `p`, one component at a time.
fn central(p: &[f64], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let h = 1e-6;
    (0..p.len())
        .map(|i| {
            let mut q = p.to_vec();
            q[i] = p[i] + h;
            let up = f(&q);
            q[i] = p[i] - h;
            (up - f(&q)) / (2.0 * h)
        })
        .collect()
}

#[test]
fn gmm_gradients_agree_on_generated_instances() {
    for (d, k, n, seed) in [(5, 4, 60, 3), (1, 2, 10, 4), (7, 3, 25, 5)] {
        let gmm = Gmm::new(gmm_instance(d, k, n, seed));
        let what = format!("d={d} k={k} n={n} seed={seed}");
        let f = gmm.objective();
        assert!(f.is_finite(), "{what}: objective {f}");
        assert!(rel_diff(gmm.objective_nobuf(), f) < 1e-12, "{what}");
        assert!(rel_diff(gmm.objective_helpers(), f) < 1e-12, "{what}");

        let np = gmm.num_params();
        let mut hand = vec![0.0; np];
        assert!(rel_diff(gmm.gradient_hand(&mut hand), f) < 1e-12, "{what}");
        type Grad<'a> = &'a dyn Fn(&mut [f64]) -> f64;
        let generated: [(&str, Grad); 3] = [
            ("generated", &|g| gmm.gradient(g)),
            ("no buffers", &|g| gmm.gradient_nobuf(g)),
            ("helper functions", &|g| gmm.gradient_helpers(g)),
        ];
        for (name, grad) in generated {
            let mut g = vec![0.0; np];
            assert!(rel_diff(grad(&mut g), f) < 1e-12, "{what}: {name}");
            let e = max_rel_error(&g, &hand);
            assert!(e < 1e-10, "{what}: {name} off the hand-written by {e:e}");
        }

        let (ka, km) = (k, k * d);
        let fd = central(&gmm.input.params(), |p| {
            let mut input = gmm.input.clone();
            input.alphas = p[..ka].to_vec();
            input.means = p[ka..ka + km].to_vec();
            input.icf = p[ka + km..].to_vec();
            Gmm::new(input).objective()
        });
        let e = max_rel_error(&hand, &fd);
        assert!(e < 1e-5, "{what}: hand-written off differences by {e:e}");
    }
}

#[test]
fn lstm_gradients_agree_on_generated_instances() {
    for (l, c, b, seed) in [(2, 12, 4, 5), (1, 3, 2, 6)] {
        let lstm = Lstm::new(lstm_instance(l, c, b, seed));
        let what = format!("l={l} c={c} b={b} seed={seed}");
        let f = lstm.objective();
        assert!(f.is_finite(), "{what}: objective {f}");
        assert!(rel_diff(lstm.objective_inline(), f) < 1e-12, "{what}");

        let np = lstm.num_params();
        let mut hand = vec![0.0; np];
        assert!(rel_diff(lstm.gradient_hand(&mut hand), f) < 1e-12, "{what}");
        for (name, grad) in [
            (
                "generated",
                &(|g: &mut [f64]| lstm.gradient(g)) as &dyn Fn(&mut [f64]) -> f64,
            ),
            ("no calls", &|g: &mut [f64]| lstm.gradient_inline(g)),
        ] {
            let mut g = vec![0.0; np];
            assert!(rel_diff(grad(&mut g), f) < 1e-12, "{what}: {name}");
            let e = max_rel_error(&g, &hand);
            assert!(e < 1e-10, "{what}: {name} off the hand-written by {e:e}");
        }

        let nm = lstm.input.main.len();
        let fd = central(&lstm.input.params(), |p| {
            let mut input = lstm.input.clone();
            input.main = p[..nm].to_vec();
            input.extra = p[nm..].to_vec();
            Lstm::new(input).objective()
        });
        let e = max_rel_error(&hand, &fd);
        assert!(e < 1e-5, "{what}: hand-written off differences by {e:e}");
    }
}
