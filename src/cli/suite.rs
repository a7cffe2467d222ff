//! `gpumodel collect --suite` — the built-in microbenchmark suite → a training table for this GPU.

use super::gpu::{GpuArgs, interrupt_flag, open_suite_device};
use super::output::{ExportFormat, print, progress_bar};
use anyhow::Context;
use gpumodel_collect::suite::listing::KernelList;
use gpumodel_collect::suite::{self, Plan, Progress};
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `collect --suite` (the shared ones — out, min-seconds — are `collect`'s; the GPU's are
/// [`GpuArgs`]).
#[derive(Debug, clap::Args)]
pub struct SuiteArgs {
    /// Clock pairs to run at: `current` (no clock is set), `auto` (up to 4 memory clocks × 3 core clocks
    /// the GPU supports) or a list such as `1410:1215,1095:1215` (core:memory MHz, as `nvidia-smi -q -d
    /// SUPPORTED_CLOCKS` lists them). Setting clocks needs root; without permission the suite says so and
    /// uses the current clocks. At two or more pairs the suite also writes utilization profiles,
    /// `<out>.profiles.csv`, that `gpumodel train --data` fits a clock model on.
    #[arg(long, default_value = "current", value_name = "current|auto|CORE:MEM,...", requires = "suite")]
    pub clocks: String,
    /// Run only these suite kernels or patterns (comma-separated; see --list-kernels).
    #[arg(long, value_delimiter = ',', requires = "suite")]
    pub kernels: Vec<String>,
    /// Continue an interrupted suite table (--out), skipping the kernel × clock rows it holds.
    #[arg(long, requires = "suite")]
    pub resume: bool,
    /// List the suite's kernels, their patterns and the counters they drive, and exit.
    #[arg(long, requires = "suite")]
    pub list_kernels: bool,
}

/// Default output of the suite.
const DEFAULT_OUT: &str = "suite.csv";

/// Runs the suite: `s` its own flags, `program` what `collect` was given after them (must be empty),
/// `out` the table to write, `gpu` the device and sampling rate, `format` how the result is printed.
pub fn run(
    s: &SuiteArgs,
    program: &[String],
    out: Option<PathBuf>,
    min_seconds: f64,
    gpu: &GpuArgs,
    format: ExportFormat,
) -> anyhow::Result<ExitCode> {
    if s.list_kernels {
        print(&KernelList::builtin(), format)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !program.is_empty() {
        anyhow::bail!(
            "--suite runs the built-in kernels and takes no program ('{}'): drop one of them",
            program.join(" ")
        );
    }
    // Options first, hardware after (so a typo never waits for the GPU).
    let plan = Plan {
        kernels: suite::select_kernels(&s.kernels)?,
        clocks: s.clocks.parse().map_err(anyhow::Error::msg)?,
        min_seconds,
        out: out.unwrap_or_else(|| PathBuf::from(DEFAULT_OUT)),
        resume: s.resume,
    };
    if !(min_seconds.is_finite() && min_seconds > 0.0) {
        anyhow::bail!("--min-seconds {min_seconds} must be a number > 0");
    }
    if plan.out.exists() && !plan.resume {
        anyhow::bail!(
            "{} exists: pass --resume to continue it, or choose another --out (nothing was changed)",
            plan.out.display()
        );
    }
    let mut device = open_suite_device(gpu)?;
    let stop = interrupt_flag();

    let pb = progress_bar(0, "suite");
    let summary = suite::run_suite(device.as_mut(), &plan, &stop, &mut |p| match p {
        Progress::Start { total, already_done } => {
            pb.set_length(total as u64);
            if already_done > 0 {
                pb.println(format!("resuming: {already_done} rows already in {}", plan.out.display()));
            }
        }
        Progress::Step { kernel, clocks } => {
            pb.set_message(format!("{kernel} @ {clocks}"));
            pb.inc(1);
        }
        Progress::Warning(w) => {
            pb.suspend(|| eprintln!("gpumodel: warning: {w}"));
        }
    })
    .with_context(|| format!("the finished rows are in {}", plan.out.display()))?;
    pb.finish_and_clear();
    let report = suite::report::SuiteReport::new(&plan, &summary);
    if summary.interrupted {
        eprintln!(
            "interrupted: {} rows written ({} kept) in {}; continue with --resume",
            summary.rows_written,
            summary.rows_kept,
            plan.out.display()
        );
        print(&report, format)?;
        return Ok(ExitCode::from(130));
    }
    print(&report, format)?;
    Ok(ExitCode::SUCCESS)
}
