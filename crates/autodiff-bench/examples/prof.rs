use autodiff_bench::adbench::load_gmm;
use autodiff_bench::gmm::Gmm;
use std::time::Instant;
mod expgrad;
fn run(g: &Gmm, which: &str, grad: &mut [f64]) -> f64 {
    match which {
        "grad" => g.gradient(grad),
        "hand" => g.gradient_hand(grad),
        "helpers" => g.gradient_helpers(grad),
        "objh" => g.objective_helpers(),
        "exp" => {
            let p = &g.input;
            let (ga, rest) = grad.split_at_mut(p.k);
            let (gm, gi) = rest.split_at_mut(p.k * p.d);
            expgrad::exp_grad(
                &p.alphas, ga, &p.means, gm, &p.icf, gi, &p.x, p.d, p.k, p.gamma, p.m, g.constant,
                1.0,
            )
        }
        _ => g.objective(),
    }
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).cloned().unwrap_or("gmm_d10_K25".into());
    let whiches: Vec<&str> = if args.len() > 2 {
        args[2..].iter().map(|s| s.as_str()).collect()
    } else {
        vec!["obj", "grad", "exp", "hand"]
    };
    let g = Gmm::new(load_gmm(&name));
    let mut grad = vec![0.0; g.num_params()];
    let mut best = vec![f64::INFINITY; whiches.len()];
    let mut refg: Option<Vec<f64>> = None;
    for (wi, w) in whiches.iter().enumerate() {
        grad.iter_mut().for_each(|v| *v = 0.0);
        run(&g, w, &mut grad);
        if *w != "obj" {
            if let Some(r) = &refg {
                let e = autodiff_bench::max_rel_error(&grad, r);
                if e > 1e-8 {
                    println!("{w} MISMATCH {e}");
                }
            } else {
                refg = Some(grad.clone());
            }
        }
        let _ = wi;
    }
    if whiches.contains(&"obj") {
        // only set for grads
    }
    for _round in 0..40 {
        for (wi, w) in whiches.iter().enumerate() {
            let t = Instant::now();
            for _ in 0..10 {
                std::hint::black_box(run(&g, w, &mut grad));
            }
            best[wi] = best[wi].min(t.elapsed().as_secs_f64() * 1e3 / 10.0);
        }
    }
    let base = best[0];
    for (wi, w) in whiches.iter().enumerate() {
        println!("{w:6} {:.3} ms  {:.2}x", best[wi], best[wi] / base);
    }
}
