//! Batched inference throughput of a trained 10-4-4-1 artifact (the plain-Rust forward pass that
//! `predict` uses) on the 2240 Titan X real-application rows, and burn's forward pass for comparison
//! when built with `--features burn`.
//! Run: `cargo bench -p gpumodel-train --bench inference [--features burn]` (results in BENCHMARKS.md).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gpumodel_train::BpannParams;

#[path = "common.rs"]
mod common;

fn inference(c: &mut Criterion) {
    let train = common::titanx("guerreiro-titanx-micro");
    let test = common::titanx("guerreiro-titanx-real");
    let model = BpannParams { restarts: 1, max_epochs: 100, ..Default::default() }
        .check()
        .unwrap()
        .fit(&train)
        .unwrap();
    let mut g = c.benchmark_group("predict_titanx_real");
    g.throughput(Throughput::Elements(test.n_rows() as u64));
    g.bench_function("models_artifact_predict", |b| b.iter(|| model.predict(test.records.view())));
    #[cfg(feature = "burn")]
    g.bench_function("burn_flex_forward", |b| b.iter(|| gpumodel_train::burn_forward(&model, &test.records)));
    g.finish();
}

criterion_group!(benches, inference);
criterion_main!(benches);
