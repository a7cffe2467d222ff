//! Benchmarks of the timing model and of full sweeps: one timing-model evaluation, one
//! prediction with power, a warps sweep (57 settings on the Titan X) and a core-clock sweep (16 clocks),
//! and the prediction and warps sweep with a time calibration applied (`predict --calibration`).
//! Run: `cargo bench -p gpumodel-predict --bench timing`.

use criterion::{Criterion, criterion_group, criterion_main};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::energy::Objective;
use gpumodel_models::timing::{Clocks, TimingInputs, occupancy, predict_time};
use gpumodel_predict::sweep::{sweep_core_clock, sweep_warps};
use gpumodel_predict::{Config, TimeCalibration, examples, predict_kernel};
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    let k = examples::kernel("reduction").unwrap().unwrap();
    let arch = ArchProfile::builtin("titanx").unwrap();
    let model = ModelArtifact::from_json_str(examples::MODELS[0].1, "titanx-bpann").unwrap();
    let x = TimingInputs::from_profile(&k).unwrap();
    let occ = occupancy(&k.launch, &arch, Some(32)).unwrap();
    let clocks = Clocks::default_for(&arch);
    let objs = Objective::DEFAULTS.to_vec();
    let cfg = Config { warps: Some(32), ..Config::default() };

    c.bench_function("timing_model_one_config", |b| {
        b.iter(|| predict_time(black_box(&x), &arch, &occ, clocks))
    });
    c.bench_function("predict_kernel_time_power_energy", |b| {
        b.iter(|| predict_kernel(black_box(&k), &arch, &model, &cfg).unwrap())
    });
    c.bench_function("sweep_warps_57_points_4_objectives", |b| {
        b.iter(|| sweep_warps(black_box(&k), &arch, &model, &Config::default(), &objs).unwrap())
    });
    c.bench_function("sweep_core_clock_16_points_4_objectives", |b| {
        b.iter(|| sweep_core_clock(black_box(&k), &arch, &model, &Config::default(), &objs).unwrap())
    });
    // Coefficients of the order `validate --save-calibration` fits (BENCHMARKS.md); the cost does not
    // depend on their values, only on the p-norm being evaluated.
    let cal = Some(TimeCalibration { a: [1.1, 1.5, 1.1, 0.5], p: 6.0 });
    let cfg_cal = Config { calibration: cal, ..cfg };
    c.bench_function("predict_kernel_calibrated", |b| {
        b.iter(|| predict_kernel(black_box(&k), &arch, &model, &cfg_cal).unwrap())
    });
    let sweep_cal = Config { calibration: cal, ..Config::default() };
    c.bench_function("sweep_warps_calibrated_57_points_4_objectives", |b| {
        b.iter(|| sweep_warps(black_box(&k), &arch, &model, &sweep_cal, &objs).unwrap())
    });
}

criterion_group!(group, benches);
criterion_main!(group);
