//! Training time on the Titan X microbenchmarks (6528 rows, 10 inputs): one BP-ANN restart of a fixed
//! 200-epoch budget (no early stop, so every iteration does the same work), and the MLR+ fit.
//! Run: `cargo bench -p gpumodel-train --bench training` (results in BENCHMARKS.md).

use criterion::{Criterion, criterion_group, criterion_main};
use gpumodel_models::artifact::ModelKind;
use gpumodel_train::{BpannParams, fit_mlr};

#[path = "common.rs"]
mod common;

fn training(c: &mut Criterion) {
    let ds = common::titanx("guerreiro-titanx-micro");
    let mut g = c.benchmark_group("train_titanx_micro");
    g.sample_size(10);
    let p = BpannParams { restarts: 1, max_epochs: 200, patience: usize::MAX, ..Default::default() }
        .check()
        .unwrap();
    g.bench_function("bpann_10-4-4-1_200_epochs", |b| b.iter(|| p.fit(&ds).unwrap()));
    g.bench_function("mlr_plus", |b| b.iter(|| fit_mlr(&ds, "bench", ModelKind::MlrPlus).unwrap()));
    g.finish();
}

criterion_group!(benches, training);
criterion_main!(benches);
