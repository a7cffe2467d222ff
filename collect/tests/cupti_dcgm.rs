//! The DCGM profiling fields against the real CUPTI Profiler Host API (libcupti + libnvperf_host from the
//! `nvidia-cuda-cupti-cu12` wheel; no GPU needed): on the A100 (GA100) and H100 (GH100) every metric the
//! plan uses exists for PM sampling, every group fits one hardware pass (checked here on a fresh host
//! object, not by the plan's own numbers), and each field the chip cannot give is named with why.
//!
//! Without the libraries these tests skip, unless GPUMODEL_REQUIRE_CUDA_LIBS=1 (set by scripts/test).

use gpumodel_collect::cupti::dcgm::DcgmPlan;
use gpumodel_collect::cupti::host::{HostProfiler, ProfilerKind};
use gpumodel_models::utilization::Field;

mod host_api;
use host_api::libs_or_skip;

/// Every metric of every group is accepted on its own, and each group needs one pass.
fn check_groups(plan: &DcgmPlan) {
    for (k, g) in plan.groups.iter().enumerate() {
        let mut names: Vec<String> =
            g.iter().flat_map(|f| [f.counter.clone(), f.elapsed.clone(), f.peak.clone()]).collect();
        names.sort();
        names.dedup();
        for m in &names {
            HostProfiler::new(&plan.chip, ProfilerKind::PmSampling, None).unwrap().add_metrics(&[m]).unwrap();
        }
        let mut host = HostProfiler::new(&plan.chip, ProfilerKind::PmSampling, None).unwrap();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        host.add_metrics(&refs).unwrap();
        assert_eq!(host.num_passes().unwrap(), 1, "{} group {}: {names:?}", plan.chip, k + 1);
    }
}

fn why(plan: &DcgmPlan, f: Field) -> &str {
    plan.missing.iter().find(|(m, _)| *m == f).map_or("", |(_, w)| w.as_str())
}

#[test]
fn a100_gives_seven_fields_in_two_runs() {
    let Some(_host) = libs_or_skip() else { return };
    let plan = DcgmPlan::for_chip("GA100").unwrap();
    check_groups(&plan);
    let first: Vec<Field> = plan.groups[0].iter().map(|f| f.field).collect();
    assert_eq!(first, [Field::Gract, Field::Smact, Field::Smocc, Field::Tenso, Field::Drama]);
    assert_eq!(plan.groups.len(), 2);
    assert!(plan.fields().contains(&Field::Fp64a) && plan.fields().contains(&Field::Fp32a));
    // No FP16 pipe counter in GA100's PM-sampling metrics.
    assert!(why(&plan, Field::Fp16a).contains("sm__pipe_fp16_cycles_active not in GA100"), "{plan:?}");
}

#[test]
fn h100_gives_six_fields_and_says_fp64_needs_two_passes() {
    let Some(_host) = libs_or_skip() else { return };
    let plan = DcgmPlan::for_chip("GH100").unwrap();
    check_groups(&plan);
    let first: Vec<Field> = plan.groups[0].iter().map(|f| f.field).collect();
    assert_eq!(first, [Field::Gract, Field::Smact, Field::Smocc, Field::Tenso, Field::Drama]);
    assert!(plan.fields().contains(&Field::Fp32a), "{plan:?}");
    assert!(why(&plan, Field::Fp64a).contains("needs 2 hardware passes"), "{plan:?}");
    assert!(why(&plan, Field::Fp16a).contains("not in GH100"), "{plan:?}");
}

#[test]
fn an_unknown_chip_is_an_error() {
    let Some(_host) = libs_or_skip() else { return };
    assert!(DcgmPlan::for_chip("XX999").is_err());
}

#[test]
fn counters_lists_each_field_with_its_replay_run_after_the_map_groups() {
    let Some(_host) = libs_or_skip() else { return };
    let check = gpumodel_collect::cupti::check::MetricCheck::run("GA100").unwrap();
    let groups = check.pm_groups.len();
    let smact = check.dcgm.iter().find(|r| r.field == "SMACT").unwrap();
    assert_eq!(smact.run, Some(groups + 1));
    assert_eq!(smact.metrics[0], "sm__cycles_active.avg");
    let fp16 = check.dcgm.iter().find(|r| r.field == "FP16A").unwrap();
    assert!(fp16.run.is_none() && fp16.note.as_deref().unwrap_or("").contains("not in GA100"), "{fp16:?}");
    assert_eq!(check.dcgm.len(), 8);
}
