//! The exporter on fuzzed readings: any numbers a trace or a driver may give (NaN, infinities, negative or
//! huge values, times that go back, processes and MIG instances that come and go, failed reads) never panic
//! the split, the totals, the clock advice (per GPU and per MIG instance) or the rendering, and every GPU's
//! energy stays the exact sum of its parts.

use gpumodel_models::utilization::model::ClockModel;
use gpumodel_serve::advice::Advisor;
use gpumodel_serve::attribution::Method;
use gpumodel_serve::metrics::{Render, render};
use gpumodel_serve::state::{Exporter, Options, ProcessInfo};
use gpumodel_serve::telemetry::scripted::FakeGpu;
use gpumodel_serve::telemetry::{InstanceReading, ProcessSample, ReadError, Reading, Telemetry};
use proptest::prelude::*;

struct NoInfo;
impl ProcessInfo for NoInfo {
    fn comm(&self, _: u32) -> Option<String> {
        None
    }
    fn container(&self, _: u32) -> Option<gpumodel_serve::cgroup::Container> {
        None
    }
}

/// A number as a driver or a damaged trace may give it.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.0..2.0f64,
        2 => 0.0..1e4f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => -1e3..0.0f64,
        1 => Just(1e300),
    ]
}

fn process() -> impl Strategy<Value = ProcessSample> {
    (1u32..6, number(), number()).prop_map(|(pid, sm, mem)| ProcessSample { pid, sm, mem })
}

fn instance() -> impl Strategy<Value = InstanceReading> {
    (1u32..4, prop::sample::select(vec!["1g.10gb", "3g.40gb", "4g.40gb", "7g.80gb", "odd"]), 0u32..8)
        .prop_flat_map(|(gi, profile, slices)| {
            (prop::option::of(number()), prop::option::of(number()), prop::collection::vec(1u32..6, 0..3))
                .prop_map(move |(sm, dram, running)| InstanceReading {
                    gi,
                    profile: profile.into(),
                    slices,
                    sm,
                    dram,
                    running,
                })
        })
}

/// A reading of a GPU in MIG mode (`mig`: one to three instances, whose processes NVML does not sample)
/// or not (processes, no instances).
fn reading(mig: bool) -> impl Strategy<Value = Result<Reading, ReadError>> {
    let instances = if mig { 1..4 } else { 0..1 };
    let ok = (
        number(),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::collection::vec(process(), 0..4),
        prop::collection::vec(1u32..6, 0..4),
        prop::collection::vec(instance(), instances),
        prop::option::of(0u32..9),
    )
        .prop_map(
            move |(time_s, energy_j, power_w, sm_mhz, processes, running, instances, mig_slices)| {
                let processes = if mig { Vec::new() } else { processes };
                Ok(Reading {
                    time_s,
                    energy_j,
                    power_w,
                    sm_mhz,
                    mem_mhz: None,
                    processes,
                    running,
                    instances,
                    mig_slices,
                })
            },
        );
    prop_oneof![
        9 => ok,
        1 => Just(Err(ReadError { call: "nvmlDeviceGetTotalEnergyConsumption".into(), code: "gpu_lost".into() })),
    ]
}

/// Times mostly increasing (a live clock), so that ticks happen; the fuzzed numbers still come through.
fn timed(mut rs: Vec<Result<Reading, ReadError>>) -> Vec<Result<Reading, ReadError>> {
    for (k, r) in rs.iter_mut().enumerate() {
        if let Ok(r) = r
            && r.time_s.is_finite()
            && (0.0..2.0).contains(&r.time_s)
        {
            r.time_s += k as f64;
        }
    }
    rs
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn fuzzed_readings_never_panic_and_energy_is_conserved(
        a in prop::collection::vec(reading(false), 1..12),
        b in prop::collection::vec(reading(true), 1..12),
        ratio in any::<bool>(),
    ) {
        let model = ClockModel::from_json(include_str!("../../models/dvfs-trained/v100.json"), "v100.json").unwrap();
        let mut gpus = FakeGpu::scripted_many(vec![timed(a), timed(b)]);
        let method = if ratio { Method::Ratio } else { Method::Model };
        // Exited processes and destroyed instances keep their totals for the whole run, so that the parts
        // stay summable.
        let params = gpumodel_serve::attribution::Params { method, ..Default::default() };
        let opts = Options { params, keep_exited_s: 1e9 };
        let mut x = Exporter::new(gpus.gpus(), opts, Box::new(NoInfo));
        for g in &mut x.gpus {
            g.advisor = Some(Advisor::new(model.clone(), g.info.clone(), 5.0));
        }
        for _ in 0..14 {
            x.tick(&mut gpus);
            let text = render(&x, Render { per_pid: true, method });
            prop_assert!(text.ends_with("# EOF\n"));
        }
        for g in &x.gpus {
            prop_assert!(g.energy_j.is_finite() && g.energy_j >= 0.0, "{}", g.energy_j);
            let parts = g.idle_j + g.unattributed_j
                + if g.instances.is_empty() {
                    g.processes.values().map(|p| p.dynamic_j).sum::<f64>()
                } else {
                    g.instances.values().map(|i| i.dynamic_j).sum::<f64>()
                };
            prop_assert!((parts - g.energy_j).abs() <= 1e-9 * g.energy_j.max(1.0), "{parts} vs {}", g.energy_j);
        }
    }
}
