//! `gpumodel merge TRACE… -o OUT` — joins the per-host / per-GPU traces of a cluster run
//! (`srun gpumodel collect …` writes one `<program>-<host>-gpu<device>.csv` per task) into one table
//! with `host` and `device` columns.

use super::output::{ExportFormat, print};
use anyhow::Context;
use gpumodel_models::trace::merge_traces;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Trace CSVs written by `gpumodel collect` (each with its `.json` sidecar).
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Merged CSV to write (must not exist).
    #[arg(long, short)]
    pub out: PathBuf,
    /// How to print what was merged.
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = merge_traces(&args.traces, &args.out).context("merge")?;
    print(&report, args.format)?;
    Ok(ExitCode::SUCCESS)
}
