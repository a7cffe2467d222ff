//! `gpumodel collect --suite` — the built-in microbenchmark suite → a training table for this GPU.

use super::output::progress_bar;
use anyhow::Context;
use gpumodel_collect::suite::{self, FakeSuiteDevice, Plan, Progress, SuiteDevice};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Options of `collect --suite` (the shared ones — out, rate, min-seconds, device — are in collect::Args).
#[derive(Debug, clap::Args)]
pub struct SuiteArgs {
    /// Clock pairs to sweep, `CORE:MEM` in MHz, comma-separated (e.g. 1410:1215,1095:1215), or `current`.
    /// Setting clocks needs root; without permission the suite says so and uses the current clocks.
    #[arg(long, default_value = "current", requires = "suite")]
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

/// `GPUMODEL_FAKE_GPU=1` runs the suite on the scripted GPU (tests and demos on machines without one).
pub(crate) fn fake_gpu() -> bool {
    std::env::var("GPUMODEL_FAKE_GPU").is_ok_and(|v| v == "1")
}

pub fn run(args: &super::collect::Args) -> anyhow::Result<ExitCode> {
    let s = &args.suite_args;
    if s.list_kernels {
        print_kernels();
        return Ok(ExitCode::SUCCESS);
    }
    if !args.program.is_empty() {
        anyhow::bail!(
            "--suite runs the built-in kernels and takes no program ('{}'): drop one of them",
            args.program.join(" ")
        );
    }
    // Options first, hardware after (so a typo never waits for the GPU).
    let plan = Plan {
        kernels: suite::select_kernels(&s.kernels)?,
        clocks: suite::parse_clocks(&s.clocks)?,
        min_seconds: args.min_seconds,
        out: args.out.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_OUT)),
        resume: s.resume,
    };
    if !(args.min_seconds.is_finite() && args.min_seconds > 0.0) {
        anyhow::bail!("--min-seconds {} must be a number > 0", args.min_seconds);
    }
    if plan.out.exists() && !plan.resume {
        anyhow::bail!(
            "{} exists: pass --resume to continue it, or choose another --out (nothing was changed)",
            plan.out.display()
        );
    }
    let mut device: Box<dyn SuiteDevice> =
        if fake_gpu() { Box::new(FakeSuiteDevice::new()) } else { Box::new(open_real_device(args)?) };

    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // A second handler cannot be installed in one process; the suite is the only one here.
    let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));

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
    let meta = suite::SuiteMetadata::path_for(&plan.out);
    if summary.interrupted {
        eprintln!(
            "interrupted: {} rows written ({} kept) in {}; continue with --resume",
            summary.rows_written,
            summary.rows_kept,
            plan.out.display()
        );
        return Ok(ExitCode::from(130));
    }
    println!(
        "wrote {} rows ({} kept from before) to {} (metadata: {}); train with: gpumodel train --data {} --import table --features {}",
        summary.rows_written,
        summary.rows_kept,
        plan.out.display(),
        meta.display(),
        plan.out.display(),
        suite::feature_set_path(&plan.out).display()
    );
    Ok(ExitCode::SUCCESS)
}

fn print_kernels() {
    let rows: Vec<Vec<String>> = suite::kernels()
        .iter()
        .map(|k| {
            let e = k.entry();
            vec![
                k.name.clone(),
                k.knob.to_string(),
                k.grid_fraction.to_string(),
                e.map_or_else(String::new, |e| e.drives.join(" ")),
                e.map_or_else(String::new, |e| e.pattern.to_string()),
            ]
        })
        .collect();
    print!("{}", super::output::render_table(&["kernel", "knob", "grid", "drives", "pattern"], &rows));
}

/// The real GPU with CUPTI PM sampling of the chip's `pm` counter map. The driver is checked first, so a
/// machine without a GPU gets that one line rather than a CUPTI error.
fn open_real_device(args: &super::collect::Args) -> anyhow::Result<suite::cuda::CudaSuiteDevice> {
    use gpumodel_collect::counters::CounterSource;
    use gpumodel_collect::cupti::pm::CuptiPmCounters;
    use gpumodel_models::counters::{CounterMap, MapKind};
    suite::cuda::check_driver(args.device)?;
    let pm = super::collect::pm_options(args)?;
    // PM sampling is opened by the device after its CUDA context exists (NVIDIA's pm_sampling sample
    // creates the context first; issue 16 item 5).
    let open_counters = move || -> Result<suite::cuda::SuiteCounters, suite::SuiteError> {
        let source = CuptiPmCounters::open(&pm)?;
        let map = CounterMap::builtin(source.chip()).map_err(gpumodel_collect::Error::from)?;
        Ok(suite::cuda::SuiteCounters {
            source: Box::new(source) as Box<dyn CounterSource>,
            map,
            kind: MapKind::Pm,
        })
    };
    suite::cuda::CudaSuiteDevice::open(args.device, args.rate, Some(Box::new(open_counters)))
        .context("CUPTI PM sampling for the suite")
}
