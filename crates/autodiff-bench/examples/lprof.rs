use autodiff_bench::adbench::load_lstm;
use autodiff_bench::lstm::Lstm;
use std::time::Instant;
mod lexp;
fn run(g: &Lstm, which: &str, grad: &mut [f64]) -> f64 {
    match which {
        "grad" => g.gradient(grad),
        "hand" => g.gradient_hand(grad),
        "gradi" => g.gradient_inline(grad),
        "obji" => g.objective_inline(),
        "exp" => {
            let p = &g.input;
            let (gm, ge) = grad.split_at_mut(p.main.len());
            gm.fill(0.0);
            ge.fill(0.0);
            lexp::exp_grad(&p.main, gm, &p.extra, ge, &p.state, &p.seq, p.l, p.b, 1.0)
        }
        _ => g.objective(),
    }
}
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).cloned().unwrap_or("lstm_l2_c1024".into());
    let whiches: Vec<&str> = if args.len() > 2 {
        args[2..].iter().map(|s| s.as_str()).collect()
    } else {
        vec!["obj", "grad", "exp", "hand", "obji", "gradi"]
    };
    let g = Lstm::new(load_lstm(&name));
    let mut grad = vec![0.0; g.num_params()];
    {
        let mut a = vec![0.0; g.num_params()];
        let mut b2 = vec![0.0; g.num_params()];
        let fa = run(&g, "grad", &mut a);
        let fb = run(&g, "exp", &mut b2);
        println!(
            "check f {} {} maxrel {}",
            fa,
            fb,
            autodiff_bench::max_rel_error(&b2, &a)
        );
    }
    {
        let b = 14;
        let pr = vec![0.1; 8 * b];
        let mut h = vec![0.0; b];
        let mut c = vec![0.0; b];
        let x = vec![0.0; b];
        let st = autodiff_bench::lstm::lstm_model::__ad_aug(b, &pr, &mut h, &mut c, &x).1;
        println!("lstm_model state {} bytes", std::mem::size_of_val(&st));
        let st2 = lexp::predict_aug(1, b, &pr, &pr, &mut h, &mut c, &x, &mut x.clone()).1;
        println!("predict state {} bytes", std::mem::size_of_val(&st2));
    }
    let mut best = vec![f64::INFINITY; whiches.len()];
    for _round in 0..20 {
        for (wi, w) in whiches.iter().enumerate() {
            let t = Instant::now();
            for _ in 0..5 {
                std::hint::black_box(run(&g, w, &mut grad));
            }
            best[wi] = best[wi].min(t.elapsed().as_secs_f64() * 1e3 / 5.0);
        }
    }
    let base = best[0];
    for (wi, w) in whiches.iter().enumerate() {
        println!("{w:6} {:.3} ms  {:.2}x", best[wi], best[wi] / base);
    }
}
