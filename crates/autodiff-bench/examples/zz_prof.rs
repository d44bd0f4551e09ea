use autodiff_bench::adbench::load_gmm;
use autodiff_bench::gmm::*;
fn main() {
    let which = std::env::args().nth(1).unwrap_or("grad".into());
    let g = load_gmm("gmm_d10_K25");
    let c = constant(g.d, g.k, g.n, g.gamma, g.m);
    let mut ga = vec![0.0; g.alphas.len()];
    let mut gm = vec![0.0; g.means.len()];
    let mut gi = vec![0.0; g.icf.len()];
    let t = std::time::Instant::now();
    let mut s = 0.0;
    let reps = 600;
    for _ in 0..reps {
        if which == "grad" {
            s += gmm_objective_grad(&g.alphas, &mut ga, &g.means, &mut gm, &g.icf, &mut gi, &g.x, g.d, g.k, g.gamma, g.m, c, 1.0);
        } else {
            s += gmm_objective(&g.alphas, &g.means, &g.icf, &g.x, g.d, g.k, g.gamma, g.m, c);
        }
    }
    println!("{which} {:.3} ms/call {s}", t.elapsed().as_secs_f64() * 1e3 / reps as f64);
}
