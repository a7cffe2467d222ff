//! What the sidecar says about a run: its metadata when the trace is created, and the summary (duration,
//! power, energy, idle power, profiler overhead, sampler cost) when it is finished.

use super::phases::Consumer;
use super::{ProgramExit, RunOptions};
use crate::power::PowerInfo;
use crate::sampler::SamplerStats;
use gpumodel_models::trace::{RunStatus, TRACE_FORMAT, TraceMeta, TraceSummary};
use std::path::Path;

/// The metadata of a run about to start: `columns` are the trace's counter columns, `counter_source`
/// describes where they come from.
pub(super) fn start_meta(
    opts: &RunOptions,
    info: &PowerInfo,
    counter_source: Option<String>,
    columns: Vec<String>,
) -> TraceMeta {
    let kernel = Path::new(&opts.program[0])
        .file_name()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    TraceMeta {
        format: TRACE_FORMAT.into(),
        host: opts.host.clone(),
        device: opts.device,
        pci_bus_id: info.pci_bus_id.clone(),
        gpu: info.gpu.clone(),
        chip: opts.chip.clone(),
        compute_capability: info.compute_capability,
        driver: info.driver.clone(),
        power_field: serde_json::to_value(info.field)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        energy_counter: info.energy_counter,
        sample_period_s: 1.0 / opts.rate_hz,
        counter_source,
        counters: columns,
        command: opts.program.clone(),
        kernel,
        launches: vec![],
        status: RunStatus::Running,
        summary: None,
        warnings: vec![],
        replay: None,
    }
}

/// The summary of a finished run: `rows` written, the run ended at `run_end` (run clock), the program
/// was started `repetitions` times and last ended with `exit`.
pub(super) fn summarize(
    c: &Consumer,
    rows: u64,
    run_end: f64,
    pstats: &SamplerStats,
    cstats: Option<&SamplerStats>,
    repetitions: u32,
    exit: ProgramExit,
) -> TraceSummary {
    let written = &c.merger.written;
    let duration_s = run_end - c.merger.run_start;
    let power_integral_j: f64 = written.iter().map(|(p, dt)| p * dt).sum();
    let mean_power_w = if written.is_empty() {
        f64::NAN
    } else {
        written.iter().map(|(p, _)| p).sum::<f64>() / written.len() as f64
    };
    // Energy counter: the reading at the run's start (first after the mark) and at the stop (last).
    let after_start: Vec<&(f64, Option<f64>)> =
        c.energies.iter().filter(|(t, _)| *t >= c.merger.run_start - 1.0).collect();
    let counter_energy = match (after_start.first(), after_start.last()) {
        (Some((t0, Some(e0))), Some((t1, Some(e1)))) if t1 > t0 && e1 >= e0 => Some(e1 - e0),
        _ => None,
    };
    let (energy_j, energy_source) = match counter_energy {
        Some(e) => (e, "energy_counter"),
        None => (power_integral_j, "power_integral"),
    };
    let idle_power_w = c.idle.mean();
    let profiler_overhead_w = c.with_profiler.mean().zip(idle_power_w).map(|(a, b)| a - b);
    let sampler_cpu_s = match (pstats.cpu_s, cstats.map(|s| s.cpu_s)) {
        (Some(a), Some(Some(b))) => Some(a + b),
        (Some(a), None) => Some(a),
        _ => None,
    };
    TraceSummary {
        samples: rows,
        duration_s,
        mean_power_w,
        energy_j,
        energy_source: energy_source.into(),
        power_integral_j,
        idle_power_w,
        profiler_overhead_w,
        sampler_cpu_s,
        repetitions,
        exit_code: match exit {
            ProgramExit::Code(c) => Some(c),
            _ => None,
        },
        achieved_rate_hz: if duration_s > 0.0 { rows as f64 / duration_s } else { 0.0 },
    }
}
