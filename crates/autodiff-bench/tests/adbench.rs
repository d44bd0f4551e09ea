//! Validates the benchmark problems against ADBench's expected objective and gradient
//! files (computed by the ADBench C++ reference), so that the benchmarks cannot drift
//! from the real problems; and every gradient (generated, hand-written, peers) against
//! the others.

use autodiff_bench::adbench::{load_expected, load_gmm, load_lstm};
use autodiff_bench::gmm::Gmm;
use autodiff_bench::lstm::Lstm;
use autodiff_bench::peers::{adtrait, candle, numdual};
use autodiff_bench::{max_rel_error, rel_diff, rosenbrock};

const TOL: f64 = 1e-8;

/// Checks one gradient against ADBench's expected value `f_exp` and gradient `j_exp`:
/// `grad` adds the gradient into a zeroed buffer and returns the objective.
fn check_against_expected(
    name: &str,
    what: &str,
    f_exp: f64,
    j_exp: &[f64],
    grad: impl FnOnce(&mut [f64]) -> f64,
) {
    let mut g = vec![0.0; j_exp.len()];
    let f = grad(&mut g);
    assert!(rel_diff(f, f_exp) < TOL, "{name}: {what}: value {f}");
    let e = max_rel_error(&g, j_exp);
    assert!(e < TOL, "{name}: {what}: gradient off by {e:e}");
}

fn check_gmm(name: &str, expected: &str, with_adtrait: bool) {
    let gmm = Gmm::new(load_gmm(name));
    let f_exp = load_expected(&format!("{expected}_F.txt"))[0];
    let j_exp = load_expected(&format!("{expected}_J.txt"));
    assert_eq!(j_exp.len(), gmm.num_params());
    let f = gmm.objective();
    assert!(
        rel_diff(f, f_exp) < TOL,
        "{name}: objective {f} vs expected {f_exp}"
    );
    let f = gmm.objective_nobuf();
    assert!(
        rel_diff(f, f_exp) < TOL,
        "{name}: objective without buffers {f}"
    );
    let f = gmm.objective_helpers();
    assert!(
        rel_diff(f, f_exp) < TOL,
        "{name}: objective with helper functions {f}"
    );

    let check = |what: &str, grad: &dyn Fn(&mut [f64]) -> f64| {
        check_against_expected(name, what, f_exp, &j_exp, grad)
    };
    check("generated", &|g| gmm.gradient(g));
    check("generated (no buffers)", &|g| gmm.gradient_nobuf(g));
    check("generated (helper functions)", &|g| gmm.gradient_helpers(g));
    check("hand-written", &|g| gmm.gradient_hand(g));
    if with_adtrait {
        let p = &gmm.input;
        check("ad_trait", &|g| {
            adtrait::gradient(&p.params(), g, |v| {
                adtrait::gmm(v, &p.x, p.d, p.k, p.gamma, p.m, gmm.constant)
            })
        });
    }
}

/// `H·v` by central differences (step `1e-5`) of the gradient `grad` at `params`.
fn fd_hvp(params: &[f64], v: &[f64], grad: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let h = 1e-5;
    let at = |s: f64| -> Vec<f64> {
        let p: Vec<f64> = params.iter().zip(v).map(|(a, b)| a + s * b).collect();
        grad(&p)
    };
    at(h)
        .iter()
        .zip(at(-h))
        .map(|(a, b)| (a - b) / (2.0 * h))
        .collect()
}

/// The generated Hessian-vector product: its gradient is ADBench's, and `H·v` matches
/// central differences of the hand-written gradient.
fn check_gmm_hvp(name: &str, expected: &str) {
    let gmm = Gmm::new(load_gmm(name));
    let j_exp = load_expected(&format!("{expected}_J.txt"));
    let n = gmm.num_params();
    let v = autodiff_bench::pseudo_random(n, 7, -1.0, 1.0);
    let (mut g, mut hv) = (vec![1.0; n], vec![1.0; n]);
    gmm.hvp(&v, &mut g, &mut hv);
    let e = max_rel_error(&g, &j_exp);
    assert!(e < TOL, "{name}: H·v's gradient off by {e:e}");
    let fd = fd_hvp(&gmm.input.params(), &v, |p| {
        let mut input = gmm.input.clone();
        let (k, kd) = (input.k, input.k * input.d);
        input.alphas = p[..k].to_vec();
        input.means = p[k..k + kd].to_vec();
        input.icf = p[k + kd..].to_vec();
        let mut g = vec![0.0; n];
        Gmm::new(input).gradient_hand(&mut g);
        g
    });
    let e = max_rel_error(&hv, &fd);
    assert!(e < 1e-5, "{name}: H·v off by {e:e} from finite differences");
}

#[test]
fn gmm_hvp_test_instance_and_d2_k5() {
    check_gmm_hvp("test", "gmm_test");
    check_gmm_hvp("gmm_d2_K5", "gmm_1k_gmm_d2_K5");
}

#[test]
fn gmm_test_instance() {
    check_gmm("test", "gmm_test", true);
}

#[test]
fn gmm_d2_k5() {
    check_gmm("gmm_d2_K5", "gmm_1k_gmm_d2_K5", true);
}

#[test]
fn gmm_d10_k25() {
    check_gmm("gmm_d10_K25", "gmm_1k_gmm_d10_K25", false);
}

fn check_lstm(name: &str, with_adtrait: bool) {
    let lstm = Lstm::new(load_lstm(name));
    let f_exp = load_expected(&format!("lstm_{name}_F.txt"))[0];
    let j_exp = load_expected(&format!("lstm_{name}_J.txt"));
    assert_eq!(j_exp.len(), lstm.num_params());
    let f = lstm.objective();
    assert!(
        rel_diff(f, f_exp) < TOL,
        "{name}: objective {f} vs expected {f_exp}"
    );
    let f = lstm.objective_inline();
    assert!(
        rel_diff(f, f_exp) < TOL,
        "{name}: objective without calls {f}"
    );

    let check = |what: &str, grad: &dyn Fn(&mut [f64]) -> f64| {
        check_against_expected(name, what, f_exp, &j_exp, grad)
    };
    check("generated", &|g| lstm.gradient(g));
    check("generated (no calls)", &|g| lstm.gradient_inline(g));
    check("hand-written", &|g| lstm.gradient_hand(g));
    if with_adtrait {
        let p = &lstm.input;
        check("ad_trait", &|g| {
            adtrait::gradient(&p.params(), g, |v| {
                adtrait::lstm(v, &p.state, &p.seq, p.l, p.b)
            })
        });
    }
}

#[test]
fn lstm_hvp_l2_c1024() {
    let lstm = Lstm::new(load_lstm("lstm_l2_c1024"));
    let j_exp = load_expected("lstm_lstm_l2_c1024_J.txt");
    let n = lstm.num_params();
    let v = autodiff_bench::pseudo_random(n, 11, -1.0, 1.0);
    let (mut g, mut hv) = (vec![1.0; n], vec![1.0; n]);
    lstm.hvp(&v, &mut g, &mut hv);
    let e = max_rel_error(&g, &j_exp);
    assert!(e < TOL, "H·v's gradient off by {e:e}");
    let nm = lstm.input.main.len();
    let fd = fd_hvp(&lstm.input.params(), &v, |p| {
        let mut input = lstm.input.clone();
        input.main = p[..nm].to_vec();
        input.extra = p[nm..].to_vec();
        let mut g = vec![0.0; n];
        Lstm::new(input).gradient_hand(&mut g);
        g
    });
    let e = max_rel_error(&hv, &fd);
    assert!(e < 1e-5, "H·v off by {e:e} from finite differences");
}

#[test]
fn lstm_l2_c1024() {
    check_lstm("lstm_l2_c1024", true);
}

#[test]
fn lstm_l4_c1024() {
    check_lstm("lstm_l4_c1024", false);
}

#[test]
fn rosenbrock_gradients_agree() {
    let x = rosenbrock::input(200);
    let f = rosenbrock::rosenbrock(&x);
    assert!(rel_diff(rosenbrock::rosenbrock_iter(&x), f) < 1e-14);

    let mut hand = vec![0.0; x.len()];
    assert!(rel_diff(rosenbrock::rosenbrock_grad_hand(&x, &mut hand), f) < 1e-14);

    // Hand-written against central differences.
    let fd = autodiff_core::testing::central_gradient(rosenbrock::rosenbrock, &x, 1e-6);
    assert!(max_rel_error(&hand, &fd) < 1e-6);

    type Grad = Box<dyn Fn(&[f64], &mut [f64]) -> f64>;
    let others: Vec<(&str, Grad)> = vec![
        (
            "generated",
            Box::new(|x, g| rosenbrock::rosenbrock_grad(x, g, 1.0)),
        ),
        (
            "hand-written loop",
            Box::new(rosenbrock::rosenbrock_grad_hand_loop),
        ),
        (
            "generated (iterators)",
            Box::new(|x, g| rosenbrock::rosenbrock_iter_grad(x, g, 1.0)),
        ),
        (
            "generated (generic)",
            Box::new(|x, g| rosenbrock::rosenbrock_generic_grad(x, g, 1.0)),
        ),
        (
            "ad_trait",
            Box::new(|x, g| adtrait::gradient(x, g, adtrait::rosenbrock)),
        ),
        (
            "candle-core",
            Box::new(|x, g| candle::rosenbrock_grad(x, g).unwrap()),
        ),
        ("num-dual gradient", Box::new(numdual::rosenbrock_grad_vec)),
        (
            "num-dual directions",
            Box::new(numdual::rosenbrock_grad_dirs),
        ),
    ];
    for (name, grad) in others {
        let mut g = vec![0.0; x.len()];
        let v = grad(&x, &mut g);
        assert!(rel_diff(v, f) < 1e-12, "{name}: value {v} vs {f}");
        let e = max_rel_error(&g, &hand);
        assert!(e < 1e-12, "{name}: gradient off by {e:e}");
        // Shadows accumulate: a second call doubles the gradient.
        grad(&x, &mut g);
        let e = max_rel_error(&g, &hand.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
        assert!(e < 1e-12, "{name}: second call off by {e:e}");
    }
    assert!(rel_diff(candle::rosenbrock_value(&x).unwrap(), f) < 1e-12);
}

#[test]
fn rosenbrock_hessian_vector_products_agree() {
    let x = rosenbrock::input(200);
    let v: Vec<f64> = x.iter().rev().copied().collect();
    let n = x.len();
    let (mut g_hand, mut hv_hand) = (vec![0.0; n], vec![0.0; n]);
    let f = rosenbrock::rosenbrock_hvp_hand(&x, &v, &mut g_hand, &mut hv_hand);
    assert!(rel_diff(f, rosenbrock::rosenbrock(&x)) < 1e-14);
    // Hand-written against central differences of the gradient.
    let fd = fd_hvp(&x, &v, |x| {
        let mut g = vec![0.0; x.len()];
        rosenbrock::rosenbrock_grad_hand(x, &mut g);
        g
    });
    assert!(max_rel_error(&hv_hand, &fd) < 1e-6);
    let (mut g, mut hv) = (vec![1.0; n], vec![1.0; n]);
    rosenbrock::rosenbrock_hvp(&x, &v, &mut g, &mut hv);
    assert!(max_rel_error(&g, &g_hand) < 1e-12);
    assert!(max_rel_error(&hv, &hv_hand) < 1e-12);
    let mut hv_ad = vec![0.0; n];
    adtrait::hvp_by_differences(&x, &v, &mut hv_ad, adtrait::rosenbrock);
    assert!(max_rel_error(&hv_ad, &hv_hand) < 1e-5);
}
