//! ADBench GMM (d2_K5 and d10_K25, N = 1000): objective, generated gradient,
//! hand-written gradient, ad_trait.

use autodiff_bench::adbench::load_gmm;
use autodiff_bench::gmm::Gmm;
use autodiff_bench::peers::adtrait;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    for name in ["gmm_d2_K5", "gmm_d10_K25"] {
        let gmm = Gmm::new(load_gmm(name));
        let p = &gmm.input;
        let params = p.params();
        let mut g = vec![0.0; gmm.num_params()];
        let mut group = c.benchmark_group(format!("gmm/{name}"));
        group.bench_function("objective", |b| b.iter(|| black_box(&gmm).objective()));
        group.bench_function("ours", |b| {
            b.iter(|| black_box(&gmm).gradient(black_box(&mut g)))
        });
        group.bench_function("hand-written", |b| {
            b.iter(|| black_box(&gmm).gradient_hand(black_box(&mut g)))
        });
        group.bench_function("objective, no reused buffers", |b| {
            b.iter(|| black_box(&gmm).objective_nobuf())
        });
        group.bench_function("ours, no reused buffers", |b| {
            b.iter(|| black_box(&gmm).gradient_nobuf(black_box(&mut g)))
        });
        group.bench_function("objective, helper functions", |b| {
            b.iter(|| black_box(&gmm).objective_helpers())
        });
        group.bench_function("ours, helper functions", |b| {
            b.iter(|| black_box(&gmm).gradient_helpers(black_box(&mut g)))
        });
        group.sample_size(10);
        group.bench_function("ad_trait", |b| {
            b.iter(|| {
                adtrait::gradient(black_box(&params), black_box(&mut g), |v| {
                    adtrait::gmm(v, &p.x, p.d, p.k, p.gamma, p.m, gmm.constant)
                })
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    // Short warm-up and measurement: the whole `cargo bench -p autodiff-bench` run stays
    // within a few minutes on a 2-core machine.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
