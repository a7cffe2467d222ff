//! The counter maps against the real CUPTI Profiler Host API (libcupti + libnvperf_host from the
//! `nvidia-cuda-cupti-cu12` wheel; no GPU needed). For every chip with a map and each profiler type:
//! every metric exists (base metric listed by `cuptiProfilerHostGetBaseMetrics`, and the full name accepted
//! by `cuptiProfilerHostConfigAddMetrics`), every PM-sampling group (`[pm]` and each `[[pm_pass]]`, one
//! run each under application replay) fits in one pass, the groups together cover every canonical
//! counter that has a PM-sampling metric, and the `range` map's pass count is what `gpumodel counters`
//! reports.
//!
//! Without the libraries these tests skip, unless GPUMODEL_REQUIRE_CUDA_LIBS=1 (set by scripts/test):
//! then they fail, so CI cannot pass without exercising the real library.

use gpumodel_collect::cupti::host::{HostProfiler, ProfilerKind, supported_chips};
use gpumodel_models::counters::{CounterMap, MapKind};
use gpumodel_models::profile::CANONICAL_COUNTERS;

mod host_api;
use host_api::libs_or_skip;

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

/// Whether a full metric name (`base.rollup…`) has its base metric in `base`. Some base names hold dots
/// themselves (GH100's `TPC.TriageCompute.sm__pipe_fp64_cycles_active_realtime`), so the base is matched
/// as a prefix followed by a dot, not split at the first dot.
fn has_base(base: &[String], full: &str) -> bool {
    base.iter().any(|b| full.strip_prefix(b.as_str()).is_some_and(|rest| rest.starts_with('.')))
}

/// Checks every metric of `metrics` on `chip` (base metric listed, full name accepted on its own) and
/// returns the passes the whole set needs in one request, as the collector configures it.
fn passes_of(
    chip: &str,
    profiler: ProfilerKind,
    metrics: &[String],
    problems: &mut Vec<String>,
) -> Option<usize> {
    let base = HostProfiler::new(chip, profiler, None).unwrap().all_base_metrics().unwrap();
    let before = problems.len();
    for m in metrics {
        if !has_base(&base, m) {
            problems.push(format!("{chip} {profiler:?}: base metric of {m} not in CUPTI's database"));
        }
        // Each full name (with its rollup) on its own host object.
        if let Err(e) = HostProfiler::new(chip, profiler, None).unwrap().add_metrics(&[m]) {
            problems.push(format!("{chip} {profiler:?}: {e}"));
        }
    }
    if problems.len() > before {
        return None;
    }
    let mut host = HostProfiler::new(chip, profiler, None).unwrap();
    let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
    host.add_metrics(&names).unwrap();
    Some(host.num_passes().unwrap())
}

fn check_map(kind: MapKind, profiler: ProfilerKind) -> Vec<(String, usize)> {
    let mut passes = Vec::new();
    let mut problems = Vec::new();
    for chip in CounterMap::builtin_chips() {
        let map = CounterMap::builtin(chip).unwrap();
        if let Some(n) = passes_of(chip, profiler, &map.metrics(kind), &mut problems) {
            passes.push((chip.to_string(), n));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    passes
}

/// Application replay (`collect --pm-passes all`) runs the program once per PM-sampling group, and PM
/// sampling can only do one pass per run: each group must be exactly 1 pass by
/// `cuptiProfilerHostGetNumOfPasses`. Together the groups must hold every canonical counter that has a
/// PM-sampling metric: a counter in no group needs a note, and neither its exact range metric nor a
/// metric another chip's PM groups use for it may be in this chip's PM_SAMPLING database (so no PM
/// metric was left out).
#[test]
fn every_pm_group_is_one_pass_and_the_groups_cover_the_pm_counters() {
    let Some(_host) = libs_or_skip() else {
        return;
    };
    let mut problems = Vec::new();
    for chip in CounterMap::builtin_chips() {
        let map = CounterMap::builtin(chip).unwrap();
        let groups = map.pm_groups();
        for (k, g) in groups.iter().enumerate() {
            let metrics = gpumodel_models::counters::group_metrics(g);
            match passes_of(chip, ProfilerKind::PmSampling, &metrics, &mut problems) {
                Some(1) => {}
                Some(n) => problems.push(format!("{chip}: PM pass {} needs {n} hardware passes", k + 1)),
                None => {}
            }
        }
        let pm_base =
            HostProfiler::new(chip, ProfilerKind::PmSampling, None).unwrap().all_base_metrics().unwrap();
        for (c, _) in CANONICAL_COUNTERS {
            if groups.iter().any(|g| g.contains_key(*c)) {
                continue;
            }
            if !map.pm_notes.contains_key(*c) {
                problems.push(format!("{chip}: {c} is in no PM pass and pm_notes does not say why"));
            }
            // Neither its exact range metric nor a PM metric another chip uses for it may exist here.
            let others = CounterMap::builtin_chips()
                .into_iter()
                .map(|o| CounterMap::builtin(o).unwrap())
                .flat_map(|o| o.pm_groups().iter().filter_map(|g| g.get(*c).cloned()).collect::<Vec<_>>());
            let candidates: std::collections::BTreeSet<String> =
                map.range.get(*c).cloned().into_iter().chain(others).flatten().collect();
            for m in candidates {
                if has_base(&pm_base, &m) {
                    problems.push(format!("{chip}: {c} is in no PM pass, but {m} exists for PM sampling"));
                }
            }
        }
        eprintln!("{chip}: {} PM-sampling passes", groups.len());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each extra pass is a whole run of the program, so the packing must not waste one: no two groups
/// would fit one pass together (checked for every pair, [pm] included).
#[test]
fn no_two_pm_groups_fit_one_pass_together() {
    let Some(_host) = libs_or_skip() else {
        return;
    };
    let mut problems = Vec::new();
    for chip in CounterMap::builtin_chips() {
        let map = CounterMap::builtin(chip).unwrap();
        let groups: Vec<Vec<String>> =
            map.pm_groups().iter().map(|g| gpumodel_models::counters::group_metrics(g)).collect();
        for i in 0..groups.len() {
            for j in i + 1..groups.len() {
                let both: Vec<String> = groups[i].iter().chain(&groups[j]).cloned().collect();
                if passes_of(chip, ProfilerKind::PmSampling, &both, &mut problems) == Some(1) {
                    problems.push(format!("{chip}: PM passes {} and {} fit one pass together", i + 1, j + 1));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
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
    // Per-opcode counts do not exist for PM sampling on GH100 (CUPTI 12.9's PM_SAMPLING metric database).
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
