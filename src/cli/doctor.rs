//! `gpumodel doctor` — whether every part `collect`, `collect --suite` and `calibrate` need works on
//! this machine, and for each that does not, the fix (`gpumodel_collect::doctor`).

use super::output::{ExportFormat, print};
use gpumodel_collect::device::{Backend, REPLAY_VAR};
use gpumodel_collect::doctor::{self, DoctorOptions};
use std::process::ExitCode;

/// How long the power sampler runs to measure the rate it keeps, seconds.
const SAMPLE_SECONDS: f64 = 2.0;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format: a table for people, JSON for scripts, cluster prologues and bug reports.
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
    /// Power sampling rate to try, Hz (as `collect --rate`).
    #[arg(long, default_value_t = 60.0)]
    pub rate: f64,
    /// GPU: the CUDA device ordinal, numbered as programs see it (after CUDA_VISIBLE_DEVICES).
    #[arg(long, default_value_t = 0)]
    pub device: u32,
}

/// Exit status: 0 when `collect` and `collect --suite` work here (possibly degraded), 1 when not.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = DoctorOptions { device: args.device, rate_hz: args.rate, sample_seconds: SAMPLE_SECONDS };
    opts.check()?;
    // The machine's driver, libraries and GPU; under GPUMODEL_FAKE_GPU=1 a healthy scripted machine.
    let backend = Backend::from_env();
    if backend.is_replay() {
        eprintln!(
            "gpumodel doctor: {REPLAY_VAR} is set: these rows are this machine's; the recording is read by \
             `collect --no-counters` and `serve`, which say in one line what is wrong with it"
        );
    }
    let report = doctor::run(backend.gpu().doctor_probes().as_mut(), &opts)?;
    print(&report, args.format)?;
    Ok(if report.ready { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
