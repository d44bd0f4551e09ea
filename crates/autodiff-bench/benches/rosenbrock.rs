//! Rosenbrock, n = 1,000 and 100,000: primal, generated gradient, hand-written gradient,
//! Hessian-vector products (ours, hand-written, ad_trait by differences), and the peers
//! (ad_trait, candle-core, num-dual at n = 1,000).

use autodiff_bench::peers::{adtrait, candle, numdual};
use autodiff_bench::rosenbrock::{
    input, rosenbrock, rosenbrock_generic, rosenbrock_generic_grad, rosenbrock_grad,
    rosenbrock_grad_hand, rosenbrock_grad_hand_loop, rosenbrock_hvp, rosenbrock_hvp_hand,
    rosenbrock_iter, rosenbrock_iter_grad,
};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    for n in [1_000, 100_000] {
        let x = input(n);
        let mut g = vec![0.0; n];
        let mut group = c.benchmark_group(format!("rosenbrock/n={n}"));
        group.bench_function("primal", |b| b.iter(|| rosenbrock(black_box(&x))));
        group.bench_function("primal (iterators)", |b| {
            b.iter(|| rosenbrock_iter(black_box(&x)))
        });
        group.bench_function("ours", |b| {
            b.iter(|| rosenbrock_grad(black_box(&x), black_box(&mut g), 1.0))
        });
        group.bench_function("ours (iterators)", |b| {
            b.iter(|| rosenbrock_iter_grad(black_box(&x), black_box(&mut g), 1.0))
        });
        group.bench_function("primal (generic)", |b| {
            b.iter(|| rosenbrock_generic(black_box(&x)))
        });
        group.bench_function("ours (generic)", |b| {
            b.iter(|| rosenbrock_generic_grad(black_box(&x), black_box(&mut g), 1.0))
        });
        group.bench_function("hand-written", |b| {
            b.iter(|| rosenbrock_grad_hand(black_box(&x), black_box(&mut g)))
        });
        group.bench_function("hand-written, in the primal's loop", |b| {
            b.iter(|| rosenbrock_grad_hand_loop(black_box(&x), black_box(&mut g)))
        });
        group.bench_function("ad_trait", |b| {
            b.iter(|| adtrait::gradient(black_box(&x), black_box(&mut g), adtrait::rosenbrock))
        });
        group.bench_function("candle-core", |b| {
            b.iter(|| candle::rosenbrock_grad(black_box(&x), black_box(&mut g)).unwrap())
        });
        let v: Vec<f64> = x.iter().rev().copied().collect();
        let mut hv = vec![0.0; n];
        group.bench_function("ours H·v (forward over reverse)", |b| {
            b.iter(|| rosenbrock_hvp(black_box(&x), black_box(&v), &mut g, &mut hv))
        });
        group.bench_function("hand-written H·v", |b| {
            b.iter(|| rosenbrock_hvp_hand(black_box(&x), black_box(&v), &mut g, &mut hv))
        });
        group.bench_function("ad_trait H·v (differences of 2 gradients)", |b| {
            b.iter(|| adtrait::hvp_by_differences(black_box(&x), &v, &mut hv, adtrait::rosenbrock))
        });
        if n <= 1_000 {
            group.bench_function("num-dual gradient (DualDVec64)", |b| {
                b.iter(|| numdual::rosenbrock_grad_vec(black_box(&x), black_box(&mut g)))
            });
            group.bench_function("num-dual n x Dual64", |b| {
                b.iter(|| numdual::rosenbrock_grad_dirs(black_box(&x), black_box(&mut g)))
            });
        }
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
