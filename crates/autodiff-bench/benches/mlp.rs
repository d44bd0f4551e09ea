//! A two-layer perceptron on `ndarray` arrays: loss, generated gradient, hand-written
//! gradient, generated H·v, and the loss written with whole-array operations, its generated
//! gradient and H·v.

use autodiff_bench::mlp::Mlp;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let m = Mlp::new(32, 64, 256);
    let mut g = m.zero_grads();
    let mut group = c.benchmark_group("mlp_ndarray/32x64x256");
    group.bench_function("objective", |b| b.iter(|| black_box(&m).objective()));
    group.bench_function("ours", |b| {
        b.iter(|| black_box(&m).gradient(black_box(&mut g)))
    });
    group.bench_function("hand-written", |b| {
        b.iter(|| black_box(&m).gradient_hand(black_box(&mut g)))
    });
    group.bench_function("objective, whole-array operations", |b| {
        b.iter(|| black_box(&m).objective_arrays())
    });
    group.bench_function("ours, whole-array operations", |b| {
        b.iter(|| black_box(&m).gradient_arrays(black_box(&mut g)))
    });
    let v = m.zero_grads();
    let mut hv = m.zero_grads();
    group.bench_function("ours H·v", |b| {
        b.iter(|| black_box(&m).hvp(&v, black_box(&mut g), &mut hv))
    });
    group.bench_function("ours H·v, whole-array operations", |b| {
        b.iter(|| black_box(&m).hvp_arrays(&v, black_box(&mut g), &mut hv))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
