//! `gpumodel counters --chip NAME` — which CUPTI metric feeds each of the ten model inputs on a chip
//! (for the Range Profiler's per-kernel totals and for the PM-sampling time series), whether CUPTI's
//! metric database has each of them, and how many passes each set needs
//! (`gpumodel_collect::cupti::check`).

use super::output::{ExportFormat, print};
use gpumodel_collect::cupti::check::MetricCheck;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Chip, as CUPTI names it (TU102, GA100, GA102, AD102, GH100).
    #[arg(long)]
    pub chip: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    print(&MetricCheck::run(&args.chip)?, args.format)?;
    Ok(ExitCode::SUCCESS)
}
