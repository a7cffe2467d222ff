//! The scripted GPU of `GPUMODEL_FAKE_GPU=1`: an A100-like board whose power, counters and clocks follow
//! known laws, so every command runs, and is tested, without a GPU.

use super::{Counters, Gpu, MeasureError, Node, SCRIPTED_GPU};
use crate::calibrate::{self, CalibrationDevice, FakeCalibrationDevice};
use crate::counters::CounterSource;
use crate::cupti::dcgm::{DcgmFields, FIELD_COUNTERS, FieldMetrics};
use crate::cupti::pm::PmOptions;
use crate::doctor::Probes;
use crate::doctor::fake::FakeProbes;
use crate::fake::{FakeCounters, FakePower, PerSample};
use crate::run::{RunOptions, RunOutcome, run as run_program, run_replay};
use crate::sampler::Clock;
use crate::suite::{self, SuiteDevice};
use crate::telemetry::scripted::FakeNode;
use crate::{Error, Result};
use gpumodel_models::counters::CounterMap;
use gpumodel_models::utilization::Field;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The scripted GPU.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedGpu;

impl Gpu for ScriptedGpu {
    fn measure(
        &self,
        opts: &mut RunOptions,
        _pm: &PmOptions,
        counters: Counters,
        interrupted: Arc<AtomicBool>,
    ) -> std::result::Result<RunOutcome, MeasureError> {
        let power = FakePower::from_fn(Clock::new(), |t| 80.0 + 10.0 * (t * 3.0).sin()).named(SCRIPTED_GPU);
        match counters {
            Counters::AllGroups => {
                opts.chip = Some("GA102".into());
                run_replay(opts, power, scripted_pass_count(), scripted_counters, interrupted)
            }
            Counters::FirstGroup => {
                let first = scripted_counters(0).map_err(MeasureError::Counters)?;
                run_program(opts, power, Some(first), interrupted)
            }
            Counters::None => run_program(opts, power, None, interrupted),
        }
        .map_err(MeasureError::Run)
    }

    fn suite_device(
        &self,
        _pm: &PmOptions,
        _rate_hz: f64,
    ) -> std::result::Result<Box<dyn SuiteDevice>, MeasureError> {
        Ok(Box::new(suite::FakeSuiteDevice::new()))
    }

    /// Ampere-like constants; clock changes are refused under `GPUMODEL_FAKE_CLOCKS=denied` (as a GPU does
    /// for a user without root).
    fn calibration_device(&self, _device: u32) -> Result<Box<dyn CalibrationDevice>> {
        let mut fake = FakeCalibrationDevice::new(calibrate::TrueConstants::AMPERE_LIKE);
        fake.clocks_settable = std::env::var("GPUMODEL_FAKE_CLOCKS").map_or(true, |v| v != "denied");
        Ok(Box::new(fake))
    }

    /// A healthy scripted machine.
    fn doctor_probes(&self) -> Box<dyn Probes> {
        Box::new(FakeProbes::healthy())
    }

    /// 2 GPUs × 4 processes, with its own process table.
    fn node(&self) -> Result<Node> {
        let node = FakeNode::new(2, 4);
        let processes = node.process_info();
        Ok(Node { telemetry: Box::new(node), processes: Box::new(processes) })
    }
}

/// Passes of the scripted GPU under `--pm-passes all`: the built-in GA102 map's groups, then the runs of
/// DCGM profiling fields ([`SCRIPTED_DCGM_RUNS`]).
fn scripted_pass_count() -> usize {
    CounterMap::builtin("GA102").map_or(1, |m| m.pm_groups().len()) + SCRIPTED_DCGM_RUNS.len()
}

/// The scripted GPU's counter groups: pass 1 as without replay, then the extra groups of the built-in GA102
/// map (real canonical names, so model inputs are derived across passes), then the runs of DCGM profiling
/// fields. Counter j of extra pass k (k ≥ 2, j from 0) reads a constant (k·10 + j)·1e6 events/s, so tests
/// can check every merged column against a known value.
fn scripted_counters(pass: usize) -> Result<Box<dyn CounterSource>> {
    if pass == 0 {
        return Ok(Box::new(FakeCounters::new(&["inst_executed", "dram_read_bytes"], 0.01, |t| {
            vec![1e9 + 1e8 * t, 5e8]
        })));
    }
    let map = CounterMap::builtin("GA102").map_err(Error::from)?;
    let groups = map.pm_groups().len();
    if pass >= groups {
        return scripted_dcgm_fields(pass - groups);
    }
    let names: Vec<String> = map.pm_group(pass).map_err(Error::from)?.keys().cloned().collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let rates: Vec<f64> = (0..names.len()).map(|j| ((pass + 1) * 10 + j) as f64 * 1e6).collect();
    Ok(Box::new(FakeCounters::new(&refs, 0.01, move |_| rates.clone())))
}

/// The scripted GPU's DCGM profiling fields, one run of the program per entry, grouped as CUPTI's host
/// library plans them for GA102 (`gpumodel counters --chip GA102`: FP64A needs 3 hardware passes there
/// and FP16A has no counter, so neither is sampled). Each field reads a constant fraction of its peak.
const SCRIPTED_DCGM_RUNS: [&[(Field, f64)]; 2] = [
    &[
        (Field::Gract, 0.9),
        (Field::Smact, 0.8),
        (Field::Smocc, 0.4),
        (Field::Tenso, 0.1),
        (Field::Drama, 0.3),
    ],
    &[(Field::Fp32a, 0.5)],
];

/// DCGM field run `k` of the scripted GPU: the metrics the collector samples for each field (counter,
/// elapsed cycles, peak per cycle) with per-sample values that make the field its fraction of
/// [`SCRIPTED_DCGM_RUNS`] — 14.1e6 elapsed cycles a 10 ms sample (1410 MHz), a peak of 48 warps per cycle
/// for occupancy and 1 for the others — turned into fields by the collector's own [`DcgmFields`].
fn scripted_dcgm_fields(k: usize) -> Result<Box<dyn CounterSource>> {
    let run = SCRIPTED_DCGM_RUNS
        .get(k)
        .ok_or_else(|| Error::Invalid(format!("the scripted GPU has no DCGM field run {}", k + 1)))?;
    const ELAPSED: f64 = 14.1e6;
    let mut values = std::collections::BTreeMap::new();
    let mut fields = Vec::new();
    for &(field, fraction) in *run {
        let (_, counter, elapsed) = FIELD_COUNTERS
            .iter()
            .find(|(f, _, _)| *f == field)
            .ok_or_else(|| Error::Invalid(format!("no counter for {}", field.name())))?;
        let peak = if field == Field::Smocc { 48.0 } else { 1.0 };
        let m = FieldMetrics::of(field, counter, elapsed);
        values.insert(m.counter.clone(), fraction * peak * ELAPSED);
        values.insert(m.elapsed.clone(), ELAPSED);
        values.insert(m.peak.clone(), peak);
        fields.push(m);
    }
    let names: Vec<&str> = values.keys().map(String::as_str).collect();
    let inner =
        PerSample::new(FakeCounters::new(&names, 0.01, |_| vec![]), values.values().copied().collect());
    Ok(Box::new(DcgmFields::new(inner, fields)))
}
