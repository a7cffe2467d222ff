//! The GPU every command talks to, chosen in one place: the machine's NVIDIA GPUs (NVML, the CUDA driver,
//! CUPTI), the scripted GPU of `GPUMODEL_FAKE_GPU=1` (tests and demos on machines without one), or a
//! recorded GPU (`GPUMODEL_REPLAY=FILE`, or `serve --replay FILE`: its NVML answers replayed). [`Backend`]
//! is that choice; its methods open what `collect`, `collect --suite`, `calibrate`, `doctor` and `serve`
//! use, each behind the trait the command is written against: [`PowerSource`] and [`CounterSource`] for a
//! program run, [`SuiteDevice`] and [`CalibrationDevice`] (both a
//! [`ClockControl`](crate::clock_control::ClockControl), whose one real implementation is
//! [`NvmlClocks`](crate::clock_control::NvmlClocks)), [`Probes`], and [`Node`] for the exporter.
//!
//! Every backend is read-only unless a command is asked to set clocks (`--clocks` other than `current`).

use crate::calibrate::{self, CalibrationDevice, FakeCalibrationDevice};
use crate::cgroup::{ProcFs, ProcessInfo};
use crate::counters::CounterSource;
use crate::cupti::dcgm::{DcgmFields, FIELD_COUNTERS, FieldMetrics};
use crate::cupti::pm::{CuptiPmCounters, PmOptions};
use crate::doctor::Probes;
use crate::doctor::fake::FakeProbes;
use crate::doctor::system::SystemProbes;
use crate::fake::{FakeCounters, FakePower, PerSample};
use crate::nvml::{NvmlPower, open_nvml};
use crate::replay::ReplayPower;
use crate::run::{RunOptions, RunOutcome, run as run_program, run_replay};
use crate::sampler::Clock;
use crate::suite::{self, SuiteDevice};
use crate::telemetry::nvml::NvmlTelemetry;
use crate::telemetry::scripted::FakeNode;
use crate::telemetry::{NoGpu, Telemetry};
use crate::{Error, Result};
use gpumodel_models::counters::{CounterMap, MapKind};
use gpumodel_models::utilization::Field;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The scripted GPU's name, as every scripted device reports it (the suite's, calibrate's, the collector's
/// power source, `serve`'s node), so that a model trained on one is found for the others by name.
pub const SCRIPTED_GPU: &str = "NVIDIA A100-SXM4-40GB (fake)";

/// Which GPU the commands talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The machine's NVIDIA GPU.
    Nvidia,
    /// The scripted GPU: an A100-like board whose power, counters and clocks follow known laws.
    Scripted,
    /// A recorded GPU: the trace of NVML answers in this file, served as recorded — to `serve` whole, to
    /// `collect --no-counters` as its first GPU's power, clocks and energy counter ([`ReplayPower`]). It runs
    /// no kernel, so the suite and `calibrate` refuse it; `doctor` checks this machine instead.
    Replay(PathBuf),
}

/// The variable naming the trace a [`Backend::Replay`] replays.
pub const REPLAY_VAR: &str = "GPUMODEL_REPLAY";

/// What a program run samples besides power.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counters {
    /// Power only.
    None,
    /// The counters of the chip's first PM group.
    FirstGroup,
    /// Every group, one run of the program per group (application replay).
    AllGroups,
}

/// Where opening the GPU or a measured run failed, so that the command can say which part to fix.
#[derive(Debug)]
pub enum MeasureError {
    /// Opening the GPU (driver, NVML, the CUDA device).
    Gpu(Error),
    /// Opening its counters (CUPTI PM sampling).
    Counters(Error),
    /// The run of the program.
    Run(Error),
}

impl Backend {
    /// `GPUMODEL_REPLAY=FILE`: the GPU recorded in FILE; `GPUMODEL_FAKE_GPU=1`: the scripted GPU;
    /// anything else: the machine's GPU.
    pub fn from_env() -> Backend {
        if std::env::var_os(REPLAY_VAR).is_some_and(|v| !v.is_empty()) {
            Backend::Replay(std::env::var_os(REPLAY_VAR).unwrap_or_default().into())
        } else if std::env::var("GPUMODEL_FAKE_GPU").is_ok_and(|v| v == "1") {
            Backend::Scripted
        } else {
            Backend::Nvidia
        }
    }

    pub fn is_scripted(&self) -> bool {
        *self == Backend::Scripted
    }

    pub fn is_replay(&self) -> bool {
        matches!(self, Backend::Replay(_))
    }

    /// Runs the program of `opts` on the GPU with power and, as asked, counter sampling (`pm`: the PM
    /// sampling options, its `device` the CUDA ordinal). Sets `opts.chip` to the chip the counters come
    /// from.
    pub fn measure(
        self,
        opts: &mut RunOptions,
        pm: &PmOptions,
        counters: Counters,
        interrupted: Arc<AtomicBool>,
    ) -> std::result::Result<RunOutcome, MeasureError> {
        if let Backend::Replay(path) = &self {
            if counters != Counters::None {
                return Err(MeasureError::Counters(Error::Invalid(format!(
                    "the trace {REPLAY_VAR} names holds power, clocks and energy, no counters: run collect with \
                     --no-counters"
                ))));
            }
            let power = ReplayPower::open(path).map_err(MeasureError::Gpu)?;
            return run_program(opts, power, None, interrupted).map_err(MeasureError::Run);
        }
        if self.is_scripted() {
            let power =
                FakePower::from_fn(Clock::new(), |t| 80.0 + 10.0 * (t * 3.0).sin()).named(SCRIPTED_GPU);
            return match counters {
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
            .map_err(MeasureError::Run);
        }
        let nvml = open_nvml().map_err(MeasureError::Gpu)?;
        // NVML's numbering can differ from CUDA's: match the physical GPU by its PCI bus id.
        let power = NvmlPower::open_cuda_device(nvml, pm.device).map_err(MeasureError::Gpu)?;
        let source = match counters {
            Counters::None => None,
            _ => {
                let c = CuptiPmCounters::open(pm).map_err(MeasureError::Counters)?;
                opts.chip = Some(c.chip().to_string());
                Some(c)
            }
        };
        let run = match source {
            Some(pass1) if counters == Counters::AllGroups => {
                // Application replay: pass 1 uses the source opened above; pass k opens group k once the
                // previous pass has dropped its own (PM sampling is one configuration per device at a time).
                let passes = pass1.pass_count();
                let mut pass1 = Some(pass1);
                let pm = pm.clone();
                let counters_for = move |k: usize| -> Result<Box<dyn CounterSource>> {
                    match pass1.take() {
                        Some(c) if k == 0 => Ok(Box::new(c)),
                        _ => Ok(Box::new(CuptiPmCounters::open_pass(&pm, k)?)),
                    }
                };
                run_replay(opts, power, passes, counters_for, interrupted)
            }
            c => run_program(opts, power, c.map(|c| Box::new(c) as Box<dyn CounterSource>), interrupted),
        };
        run.map_err(MeasureError::Run)
    }

    /// The suite's device: the scripted one, or the real GPU `pm.device` with power sampled at `rate_hz`
    /// and CUPTI PM sampling of the chip's `pm` counter map. The driver is checked first, so a machine
    /// without a GPU gets that one line rather than a CUPTI error.
    pub fn suite_device(
        self,
        pm: &PmOptions,
        rate_hz: f64,
    ) -> std::result::Result<Box<dyn SuiteDevice>, MeasureError> {
        if self.is_replay() {
            return Err(MeasureError::Gpu(replay_runs_no_kernel("the suite")));
        }
        if self.is_scripted() {
            return Ok(Box::new(suite::FakeSuiteDevice::new()));
        }
        let device = pm.device;
        crate::cuda_gpu::check_driver(device).map_err(MeasureError::Gpu)?;
        let pm = pm.clone();
        // PM sampling is opened by the device after its CUDA context exists (NVIDIA's pm_sampling sample
        // creates the context first).
        let open_counters = move || -> Result<suite::cuda::SuiteCounters> {
            let source = CuptiPmCounters::open(&pm)?;
            let map = CounterMap::builtin(source.chip()).map_err(Error::from)?;
            Ok(suite::cuda::SuiteCounters {
                source: Box::new(source) as Box<dyn CounterSource>,
                map,
                kind: MapKind::Pm,
            })
        };
        let opened = suite::cuda::CudaSuiteDevice::open(device, rate_hz, Some(Box::new(open_counters)));
        Ok(Box::new(opened.map_err(MeasureError::Counters)?))
    }

    /// The device `calibrate` measures: the real GPU `device` (a CUDA ordinal), or the scripted one with
    /// Ampere-like constants, which refuses clock changes under `GPUMODEL_FAKE_CLOCKS=denied` (as a GPU does
    /// for a user without root).
    pub fn calibration_device(self, device: u32) -> Result<Box<dyn CalibrationDevice>> {
        if self.is_replay() {
            return Err(replay_runs_no_kernel("calibrate"));
        }
        if self.is_scripted() {
            let mut fake = FakeCalibrationDevice::new(calibrate::TrueConstants::AMPERE_LIKE);
            fake.clocks_settable = std::env::var("GPUMODEL_FAKE_CLOCKS").map_or(true, |v| v != "denied");
            return Ok(Box::new(fake));
        }
        Ok(Box::new(calibrate::cuda::CudaCalibrationDevice::open(device)?))
    }

    /// What `doctor` asks: this machine's driver, libraries and GPU, or a healthy scripted machine.
    pub fn doctor_probes(self) -> Box<dyn Probes> {
        match self {
            // A replayed GPU is a recording: doctor checks this machine.
            Backend::Nvidia | Backend::Replay(_) => Box::new(SystemProbes::new()),
            Backend::Scripted => Box::new(FakeProbes::healthy()),
        }
    }

    /// What `serve` reads: every GPU of the node with its processes' names and containers — NVML and this
    /// host's `/proc`, the scripted node of 2 GPUs × 4 processes, or the recorded node of the trace. A node
    /// without a usable driver is [`Error::NoDriver`] or the NVML error; see [`Node::without_gpus`].
    pub fn node(&self) -> Result<Node> {
        Ok(match self {
            Backend::Replay(path) => {
                let (telemetry, processes) = crate::replay::open(path)?;
                Node { telemetry: Box::new(telemetry), processes: Box::new(processes) }
            }
            Backend::Scripted => {
                let node = FakeNode::new(2, 4);
                let processes = node.process_info();
                Node { telemetry: Box::new(node), processes: Box::new(processes) }
            }
            Backend::Nvidia => Node {
                telemetry: Box::new(NvmlTelemetry::open()?),
                processes: Box::new(ProcFs("/proc".into())),
            },
        })
    }
}

/// A node as the exporter reads it: its GPUs, and who the processes on them are.
pub struct Node {
    pub telemetry: Box<dyn Telemetry>,
    pub processes: Box<dyn ProcessInfo>,
}

impl Node {
    /// A node without GPUs (no driver), its processes this host's: served with no GPU series.
    pub fn without_gpus() -> Node {
        Node { telemetry: Box::new(NoGpu), processes: Box::new(ProcFs("/proc".into())) }
    }
}

/// The refusal of a command that runs kernels on a replayed GPU.
fn replay_runs_no_kernel(what: &str) -> Error {
    Error::Invalid(format!(
        "{REPLAY_VAR} replays a recorded GPU's NVML answers (for `collect --no-counters` and `serve`); {what} \
         runs kernels on a GPU: unset {REPLAY_VAR} (or use GPUMODEL_FAKE_GPU=1 for the scripted GPU)"
    ))
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
