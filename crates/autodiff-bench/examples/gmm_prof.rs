use autodiff_bench::adbench::load_gmm;
use autodiff_bench::gmm::Gmm;
use std::hint::black_box;
fn main() {
    let which = std::env::args().nth(1).unwrap_or("ours".into());
    let gmm = Gmm::new(load_gmm("gmm_d10_K25"));
    let mut g = vec![0.0; gmm.num_params()];
    let t = std::time::Instant::now();
    for _ in 0..1500 {
        match which.as_str() {
            "ours" => {
                black_box(&gmm).gradient(&mut g);
            }
            "hand" => {
                black_box(&gmm).gradient_hand(&mut g);
            }
            _ => {
                black_box(black_box(&gmm).objective());
            }
        }
    }
    eprintln!("{which}: {:?}/call", t.elapsed() / 1500);
}
