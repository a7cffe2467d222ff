//! The GPU for `collect` and `collect --suite`: the flags that choose and sample it, the calls into the
//! collector's one device factory ([`Backend`]: the real GPU, the scripted one of `GPUMODEL_FAKE_GPU=1`, or a
//! recorded one under `GPUMODEL_REPLAY`, each a `gpumodel_collect::device::Gpu`),
//! and the Ctrl-C handler. Both commands use this module and neither imports the other's, so there is no
//! circle between them.

use gpumodel_collect::cupti::pm::PmOptions;
pub(crate) use gpumodel_collect::device::{Backend, Counters, MeasureError};
use gpumodel_collect::run::{RunOptions, RunOutcome};
use gpumodel_collect::suite;
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

/// Runs the program of `opts` on the GPU (real, scripted or recorded, [`Backend::from_env`]) with power
/// and, as asked, counter sampling. Sets `opts.chip` to the chip the counters come from. Errors opening the GPU are
/// the library's one line; errors of the run name the program.
pub(crate) fn measure(
    opts: &mut RunOptions,
    gpu: &GpuArgs,
    counters: Counters,
    interrupted: Arc<AtomicBool>,
) -> anyhow::Result<RunOutcome> {
    let pm = pm_options(gpu)?;
    match Backend::from_env().gpu().measure(opts, &pm, counters, interrupted) {
        Ok(outcome) => Ok(outcome),
        Err(MeasureError::Gpu(e)) => Err(e.into()),
        Err(MeasureError::Counters(e)) => {
            Err(anyhow::Error::from(e).context("CUPTI PM sampling (pass --no-counters to sample power only)"))
        }
        Err(MeasureError::Run(e)) => Err(anyhow::Error::from(e).context(ran(opts))),
    }
}

fn ran(opts: &RunOptions) -> String {
    format!("collect {}", opts.program.first().map_or("", String::as_str))
}

/// The suite's device ([`Backend::suite_device`]).
pub(crate) fn open_suite_device(gpu: &GpuArgs) -> anyhow::Result<Box<dyn suite::SuiteDevice>> {
    match Backend::from_env().gpu().suite_device(&pm_options(gpu)?, gpu.rate) {
        Ok(device) => Ok(device),
        Err(MeasureError::Gpu(e)) => Err(e.into()),
        Err(MeasureError::Counters(e) | MeasureError::Run(e)) => {
            Err(anyhow::Error::from(e).context("CUPTI PM sampling for the suite"))
        }
    }
}
