//! Fit time of the BP-ANN on the Titan X microbenchmarks (6528 rows, 10 inputs, 10-4-4-1): one loss and
//! gradient evaluation (the ndarray reference, the fused f64 `Workspace` kernel and the f32 one the fits
//! use by default), and one whole default fit (3 restarts, early stopping) with L-BFGS and with native
//! Adam (and with Adam on burn's autodiff when built with `--features burn`).
//! Run: `cargo bench -p gpumodel-train --bench fit [--features burn]` (results in BENCHMARKS.md).

use criterion::{Criterion, criterion_group, criterion_main};
use gpumodel_train::bpann::Backend;
use gpumodel_train::lbfgs::{Layout, Precision, Workspace, loss_grad};
use gpumodel_train::mlr::{input_scaling, standardize};
use gpumodel_train::{BpannParams, Solver};
use std::hint::black_box;

#[path = "common.rs"]
mod common;

fn fit(c: &mut Criterion) {
    let ds = common::titanx("guerreiro-titanx-micro");
    let z = standardize(&ds.records, &input_scaling(&ds.records));
    let (m, s) = (ds.targets.mean().unwrap(), ds.targets.std(0.0));
    let y: Vec<f64> = ds.targets.iter().map(|v| (v - m) / s).collect();
    let layout = Layout { sizes: vec![z.ncols(), 4, 4, 1] };
    let theta: Vec<f64> = (0..layout.n_params()).map(|i| ((i * 37 % 11) as f64 - 5.0) * 0.13).collect();
    let mut g = c.benchmark_group("loss_grad_titanx_micro_10-4-4-1");
    g.sample_size(20);
    g.bench_function("ndarray", |b| b.iter(|| loss_grad(&layout, black_box(&theta), z.view(), &y, 1e-4)));
    let mut ws = Workspace::new(&layout, z.view(), &y);
    g.bench_function("workspace", |b| b.iter(|| ws.loss_grad(black_box(&theta), 1e-4)));
    let mut ws = Workspace::with_precision(&layout, z.view(), &y, Precision::F32);
    g.bench_function("workspace_f32", |b| b.iter(|| ws.loss_grad(black_box(&theta), 1e-4)));
    g.finish();

    let mut g = c.benchmark_group("fit_titanx_micro_10-4-4-1_3_restarts");
    g.sample_size(10);
    for (name, solver, backend) in [
        ("lbfgs", Solver::Lbfgs, Backend::Native),
        ("adam_native", Solver::Adam, Backend::Native),
        #[cfg(feature = "burn")]
        ("adam_burn", Solver::Adam, Backend::Burn),
    ] {
        let p = BpannParams { solver, backend, ..Default::default() }.check().unwrap();
        g.bench_function(name, |b| b.iter(|| p.fit(&ds).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, fit);
criterion_main!(benches);
