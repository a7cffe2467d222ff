//! The counter maps against the real CUPTI Profiler Host API (libcupti + libnvperf_host from the
//! `nvidia-cuda-cupti-cu12` wheel; no GPU needed). For every chip with a map and each profiler type:
//! every metric exists (base metric listed by `cuptiProfilerHostGetBaseMetrics`, and the full name accepted
//! by `cuptiProfilerHostConfigAddMetrics`), the `pm` map fits in one pass, and the `range` map's pass count
//! is what `gpumodel counters` reports.
//!
//! Without the libraries these tests skip, unless GPUMODEL_REQUIRE_CUDA_LIBS=1 (set by scripts/test):
//! then they fail, so CI cannot pass without exercising the real library.

use gpumodel_collect::cupti::host::{HostProfiler, ProfilerKind, supported_chips};
use gpumodel_collect::cupti::loader::load_cupti;
use gpumodel_models::counters::{CounterMap, MapKind};

/// The test harness runs tests on parallel threads, and CUPTI's profiler host API keeps process-wide
/// state: concurrent host sessions failed intermittently with CUPTI_ERROR_UNKNOWN. `gpumodel` itself uses
/// one session at a time, so the tests take turns too.
static HOST_API: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The libraries are loaded and this test holds the host API; `None` means skip (libraries absent and not
/// required).
fn libs_or_skip() -> Option<std::sync::MutexGuard<'static, ()>> {
    let guard = HOST_API.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match load_cupti() {
        Ok(_) => Some(guard),
        Err(e) => {
            if std::env::var("GPUMODEL_REQUIRE_CUDA_LIBS").is_ok_and(|v| v == "1") {
                panic!("GPUMODEL_REQUIRE_CUDA_LIBS=1 but {e}");
            }
            eprintln!("skipping: {e}");
            None
        }
    }
}

#[test]
fn host_api_knows_every_mapped_chip() {
    let Some(_host) = libs_or_skip() else {
        return;
    };
    let chips = supported_chips().unwrap();
    for chip in CounterMap::builtin_chips() {
        assert!(chips.iter().any(|c| c == chip), "{chip} not in {chips:?}");
    }
}

fn check_map(kind: MapKind, profiler: ProfilerKind) -> Vec<(String, usize)> {
    let mut passes = Vec::new();
    let mut problems = Vec::new();
    for chip in CounterMap::builtin_chips() {
        let map = CounterMap::builtin(chip).unwrap();
        let metrics = map.metrics(kind);
        let base = HostProfiler::new(chip, profiler, None).unwrap().all_base_metrics().unwrap();
        for m in &metrics {
            let b = m.split('.').next().unwrap();
            if !base.iter().any(|x| x == b) {
                problems.push(format!("{chip} {profiler:?}: base metric {b} not in CUPTI's database"));
            }
            // Each full name (with its rollup) on its own host object.
            if let Err(e) = HostProfiler::new(chip, profiler, None).unwrap().add_metrics(&[m]) {
                problems.push(format!("{chip} {profiler:?}: {e}"));
            }
        }
        if problems.is_empty() {
            // The whole set in one request, as the collector configures it.
            let mut host = HostProfiler::new(chip, profiler, None).unwrap();
            let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
            host.add_metrics(&names).unwrap();
            passes.push((chip.to_string(), host.num_passes().unwrap()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    passes
}

#[test]
fn pm_maps_exist_for_pm_sampling_and_fit_one_pass() {
    let Some(_host) = libs_or_skip() else {
        return;
    };
    for (chip, n) in check_map(MapKind::Pm, ProfilerKind::PmSampling) {
        assert_eq!(n, 1, "{chip}: the pm map needs {n} passes; PM sampling can only do 1");
    }
}

#[test]
fn range_maps_exist_for_the_range_profiler() {
    let Some(_host) = libs_or_skip() else {
        return;
    };
    for (chip, n) in check_map(MapKind::Range, ProfilerKind::Range) {
        eprintln!("{chip}: range map needs {n} passes");
        assert!(n >= 1, "{chip}");
    }
}

#[test]
fn a_metric_missing_on_the_chip_is_named() {
    let Some(_host) = libs_or_skip() else {
        return;
    };
    // Per-opcode counts do not exist for PM sampling on GH100 (DESIGN.md).
    let mut host = HostProfiler::new("GH100", ProfilerKind::PmSampling, None).unwrap();
    let e = host.add_metrics(&["smsp__inst_executed_op_global_ld.sum"]).unwrap_err().to_string();
    assert!(
        e.contains("'smsp__inst_executed_op_global_ld.sum' does not exist on GH100 for PM sampling"),
        "{e}"
    );
}

#[test]
fn unknown_chip_is_a_clear_error() {
    let Some(_host) = libs_or_skip() else {
        return;
    };
    let e = HostProfiler::new("XY999", ProfilerKind::Range, None).err().unwrap().to_string();
    assert!(e.contains("CUPTI cannot profile chip 'XY999'") && e.contains("GA100"), "{e}");
}
