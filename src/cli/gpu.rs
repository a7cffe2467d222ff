//! The GPU for `collect` and `collect --suite`: the flags that choose and sample it, opening NVML and CUPTI
//! (or the scripted GPU of `GPUMODEL_FAKE_GPU=1`), and the Ctrl-C handler. Both commands use this module
//! and neither imports the other's, so there is no circle between them.

use anyhow::Context;
use gpumodel_collect::counters::CounterSource;
use gpumodel_collect::cupti::dcgm::{DcgmFields, FIELD_COUNTERS, FieldMetrics};
use gpumodel_collect::cupti::pm::{CuptiPmCounters, PmOptions};
use gpumodel_collect::fake::{FakeCounters, FakePower, PerSample};
use gpumodel_collect::nvml::{NvmlPower, open_nvml};
use gpumodel_collect::run::{RunOptions, RunOutcome, run as run_program, run_replay};
use gpumodel_collect::sampler::Clock;
use gpumodel_collect::suite;
use gpumodel_models::utilization::Field;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which GPU and how fast to sample it (shared by `collect` and `collect --suite`).
#[derive(Debug, Clone, clap::Args)]
pub struct GpuArgs {
    /// Sampling rate, Hz.
    #[arg(long, default_value_t = 60.0)]
    pub rate: f64,
    /// GPU: the CUDA device ordinal, numbered as the program sees it (after CUDA_VISIBLE_DEVICES). Power
    /// is read from the NVML device with the same PCI bus id, so the two numberings need not agree.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Turing and GA100 only: the GPU's SYS-clock frequency, MHz. These chips trigger PM samples on
    /// SYS-clock cycles (CUPTI has no time trigger there) and NVML cannot read that clock; without this
    /// flag 1000 MHz is assumed and the trace's warnings say so. Rates are unaffected either way.
    #[arg(long, value_name = "MHZ")]
    pub sysclk_mhz: Option<f64>,
}

/// `GPUMODEL_FAKE_GPU=1` runs on the scripted GPU (tests and demos on machines without one).
pub(crate) fn fake_gpu() -> bool {
    std::env::var("GPUMODEL_FAKE_GPU").is_ok_and(|v| v == "1")
}

/// A flag that Ctrl-C / SIGTERM (srun's cancel) sets: the run ends cleanly, its output finished, not cut.
/// One handler per process; the one command that runs installs it.
pub(crate) fn interrupt_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    stop
}

/// PM-sampling options from the flags. Turing and GA100 count their sampling interval in SYS-clock
/// cycles; its frequency is the user's `--sysclk-mhz` or an assumption the trace reports
/// (`CuptiPmCounters` warns), never a clock read that may fail silently.
pub(crate) fn pm_options(gpu: &GpuArgs) -> anyhow::Result<PmOptions> {
    if let Some(mhz) = gpu.sysclk_mhz
        && !(mhz.is_finite() && mhz > 0.0)
    {
        anyhow::bail!(
            "--sysclk-mhz {mhz} is not a frequency: give the SYS clock in MHz, e.g. --sysclk-mhz 1000"
        );
    }
    Ok(PmOptions {
        device: gpu.device,
        interval_s: 1.0 / gpu.rate,
        sysclk_hz: gpu.sysclk_mhz.map(|m| m * 1e6),
        ..PmOptions::default()
    })
}

/// The scripted GPU's counter groups under `--pm-passes all`: pass 1 as without replay, then the extra
/// groups of the built-in GA102 map (real canonical names, so model inputs are derived across passes),
/// then the runs of DCGM profiling fields ([`FAKE_DCGM_RUNS`]). Counter j of extra pass k (k ≥ 2, j from
/// 0) reads a constant (k·10 + j)·1e6 events/s, so tests can check every merged column against a known
/// value.
fn fake_counters(pass: usize) -> anyhow::Result<Box<dyn CounterSource>> {
    if pass == 0 {
        return Ok(Box::new(FakeCounters::new(&["inst_executed", "dram_read_bytes"], 0.01, |t| {
            vec![1e9 + 1e8 * t, 5e8]
        })));
    }
    let map = gpumodel_models::counters::CounterMap::builtin("GA102")?;
    let groups = map.pm_groups().len();
    if pass >= groups {
        return fake_dcgm_fields(pass - groups);
    }
    let names: Vec<String> = map.pm_group(pass)?.keys().cloned().collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let rates: Vec<f64> = (0..names.len()).map(|j| ((pass + 1) * 10 + j) as f64 * 1e6).collect();
    Ok(Box::new(FakeCounters::new(&refs, 0.01, move |_| rates.clone())))
}

fn fake_pass_count() -> usize {
    gpumodel_models::counters::CounterMap::builtin("GA102").map_or(1, |m| m.pm_groups().len())
        + FAKE_DCGM_RUNS.len()
}

/// The scripted GPU's DCGM profiling fields, one run of the program per entry, grouped as CUPTI's host
/// library plans them for GA102 (`gpumodel counters --chip GA102`: FP64A needs 3 hardware passes there
/// and FP16A has no counter, so neither is sampled). Each field reads a constant fraction of its peak.
const FAKE_DCGM_RUNS: [&[(Field, f64)]; 2] = [
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
/// [`FAKE_DCGM_RUNS`] — 14.1e6 elapsed cycles a 10 ms sample (1410 MHz), a peak of 48 warps per cycle for
/// occupancy and 1 for the others — turned into fields by the collector's own [`DcgmFields`].
fn fake_dcgm_fields(k: usize) -> anyhow::Result<Box<dyn CounterSource>> {
    let run =
        FAKE_DCGM_RUNS.get(k).with_context(|| format!("the scripted GPU has no DCGM field run {}", k + 1))?;
    const ELAPSED: f64 = 14.1e6;
    let mut values = std::collections::BTreeMap::new();
    let mut fields = Vec::new();
    for &(field, fraction) in *run {
        let (_, counter, elapsed) = FIELD_COUNTERS
            .iter()
            .find(|(f, _, _)| *f == field)
            .with_context(|| format!("no counter for {}", field.name()))?;
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

/// What `collect` samples: power only, counters of the `[pm]` group, or every group (application replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counters {
    None,
    FirstGroup,
    AllGroups,
}

/// Runs the program of `opts` on the GPU (real or scripted) with power and, as asked, counter sampling.
/// Sets `opts.chip` to the chip the counters come from. Errors opening the GPU are the library's one
/// line; errors of the run name the program.
pub(crate) fn measure(
    opts: &mut RunOptions,
    gpu: &GpuArgs,
    counters: Counters,
    interrupted: Arc<AtomicBool>,
) -> anyhow::Result<RunOutcome> {
    if fake_gpu() {
        let clock = Clock::new();
        let power = FakePower::from_fn(clock, |t| 80.0 + 10.0 * (t * 3.0).sin());
        return Ok(match counters {
            Counters::AllGroups => {
                opts.chip = Some("GA102".into());
                let counters_for = |k: usize| {
                    fake_counters(k)
                        .map_err(|e| gpumodel_collect::Error::Invalid(format!("fake counters: {e}")))
                };
                run_replay(opts, power, fake_pass_count(), counters_for, interrupted)
                    .with_context(|| ran(opts))?
            }
            Counters::FirstGroup => {
                run_program(opts, power, Some(fake_counters(0)?), interrupted).with_context(|| ran(opts))?
            }
            Counters::None => run_program(opts, power, None, interrupted).with_context(|| ran(opts))?,
        });
    }
    let nvml = open_nvml()?;
    // NVML's numbering can differ from CUDA's: match the physical GPU by its PCI bus id.
    let power = NvmlPower::open_cuda_device(nvml, gpu.device)?;
    let pm = pm_options(gpu)?;
    let source = match counters {
        Counters::None => None,
        _ => {
            let c = CuptiPmCounters::open(&pm)
                .context("CUPTI PM sampling (pass --no-counters to sample power only)")?;
            opts.chip = Some(c.chip().to_string());
            Some(c)
        }
    };
    Ok(match source {
        Some(pass1) if counters == Counters::AllGroups => {
            // Application replay: pass 1 uses the source opened above; pass k opens group k once the
            // previous pass has dropped its own (PM sampling is one configuration per device at a time).
            let passes = pass1.pass_count();
            let mut pass1 = Some(pass1);
            let counters_for = move |k: usize| -> gpumodel_collect::Result<Box<dyn CounterSource>> {
                match pass1.take() {
                    Some(c) if k == 0 => Ok(Box::new(c)),
                    _ => Ok(Box::new(CuptiPmCounters::open_pass(&pm, k)?)),
                }
            };
            run_replay(opts, power, passes, counters_for, interrupted).with_context(|| ran(opts))?
        }
        c => run_program(opts, power, c.map(|c| Box::new(c) as Box<dyn CounterSource>), interrupted)
            .with_context(|| ran(opts))?,
    })
}

fn ran(opts: &RunOptions) -> String {
    format!("collect {}", opts.program.first().map_or("", String::as_str))
}

/// The suite's device: the scripted one, or the real GPU with CUPTI PM sampling of the chip's `pm`
/// counter map. The driver is checked first, so a machine without a GPU gets that one line rather than a
/// CUPTI error.
pub(crate) fn open_suite_device(gpu: &GpuArgs) -> anyhow::Result<Box<dyn suite::SuiteDevice>> {
    use gpumodel_models::counters::{CounterMap, MapKind};
    if fake_gpu() {
        return Ok(Box::new(suite::FakeSuiteDevice::new()));
    }
    suite::cuda::check_driver(gpu.device)?;
    let pm = pm_options(gpu)?;
    // PM sampling is opened by the device after its CUDA context exists (NVIDIA's pm_sampling sample
    // creates the context first).
    let open_counters = move || -> Result<suite::cuda::SuiteCounters, gpumodel_collect::Error> {
        let source = CuptiPmCounters::open(&pm)?;
        let map = CounterMap::builtin(source.chip()).map_err(gpumodel_collect::Error::from)?;
        Ok(suite::cuda::SuiteCounters {
            source: Box::new(source) as Box<dyn CounterSource>,
            map,
            kind: MapKind::Pm,
        })
    };
    let device = suite::cuda::CudaSuiteDevice::open(gpu.device, gpu.rate, Some(Box::new(open_counters)))
        .context("CUPTI PM sampling for the suite")?;
    Ok(Box::new(device))
}
