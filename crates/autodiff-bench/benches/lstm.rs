//! ADBench LSTM (l2_c1024 and l4_c1024): objective, generated gradient, hand-written
//! gradient, ad_trait.

use autodiff_bench::adbench::load_lstm;
use autodiff_bench::lstm::Lstm;
use autodiff_bench::peers::adtrait;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    for name in ["lstm_l2_c1024", "lstm_l4_c1024"] {
        let lstm = Lstm::new(load_lstm(name));
        let p = &lstm.input;
        let params = p.params();
        let mut g = vec![0.0; lstm.num_params()];
        let mut group = c.benchmark_group(format!("lstm/{name}"));
        group.bench_function("objective", |b| b.iter(|| black_box(&lstm).objective()));
        group.bench_function("ours", |b| {
            b.iter(|| black_box(&lstm).gradient(black_box(&mut g)))
        });
        group.bench_function("hand-written", |b| {
            b.iter(|| black_box(&lstm).gradient_hand(black_box(&mut g)))
        });
        group.bench_function("objective, without calls", |b| {
            b.iter(|| black_box(&lstm).objective_inline())
        });
        group.bench_function("ours, without calls", |b| {
            b.iter(|| black_box(&lstm).gradient_inline(black_box(&mut g)))
        });
        group.sample_size(10);
        group.bench_function("ad_trait", |b| {
            b.iter(|| {
                adtrait::gradient(black_box(&params), black_box(&mut g), |v| {
                    adtrait::lstm(v, &p.state, &p.seq, p.l, p.b)
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
