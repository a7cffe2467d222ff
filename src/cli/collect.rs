//! `gpumodel collect ./kernel [args…]` and `gpumodel collect --suite`.

use super::gpu::{Backend, Counters, GpuArgs, interrupt_flag, measure, pm_options};
use super::output::{ExportFormat, print};
use anyhow::Context;
use gpumodel_collect::run::report::{CollectReport, KernelTotals};
use gpumodel_collect::run::{ProgramExit, RunOptions, resolve_program};
use gpumodel_models::trace::{RunStatus, sidecar_path};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run the built-in microbenchmark suite instead of a program (writes a training table).
    #[arg(long)]
    pub suite: bool,
    #[command(flatten)]
    pub suite_args: super::suite::SuiteArgs,
    /// Output file (trace CSV, with a JSON sidecar; or the suite's training table). Default for a
    /// program: `<program>-<host>-gpu<device>.csv`, one file per host and GPU (for `srun`).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Repeat short programs (or suite kernels) until at least this long.
    #[arg(long, default_value_t = 1.0)]
    pub min_seconds: f64,
    /// Idle measurement before the program, seconds (once with power only, once with the counter
    /// profiler running too, to report the profiler's own power); 0 skips it.
    #[arg(long, default_value_t = 0.5)]
    pub idle_seconds: f64,
    /// Sample power only, without CUPTI counters.
    #[arg(long)]
    pub no_counters: bool,
    /// PM-sampling passes: `1` runs the program once with the chip's one-pass counter group (`[pm]`);
    /// `all` runs it once per counter group of the chip's map (application replay) so the trace also has
    /// the global, local and texture sectors and the instruction mix, then once per group of the DCGM
    /// profiling fields the chip has (columns SMACT, DRAMA, …), each pass in `<out>.pass<k>.csv` and all
    /// merged into `<out>`. The passes are separate runs: see the sidecar's `replay`.
    #[arg(long, value_enum, default_value_t = PmPasses::One)]
    pub pm_passes: PmPasses,
    /// After the trace, run the program once more under the CUPTI Range Profiler (injection library,
    /// kernel replay) for exact per-kernel totals: `<out>.kernels.csv` (rows) and `<out>.kernels.json`
    /// (kernel profiles for `predict`).
    #[arg(long)]
    pub kernel_totals: bool,
    /// How to print the run's summary (or the suite's, or --list-kernels) on stdout; the trace always
    /// goes to its file. With csv, json or markdown the program's own stdout goes to stderr, so stdout
    /// carries only the result.
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
    /// The program to run and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub program: Vec<String>,
}

/// How many PM-sampling groups `collect` records. One is the default: a single run, with every
/// counter sampled in the same execution as the power; `all` multiplies the run time by the number of
/// groups (5–6 on the built-in chips) and mixes runs, so it is asked for, not imposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PmPasses {
    /// One run, the `[pm]` group.
    #[value(name = "1")]
    One,
    /// One run per PM-sampling group (application replay), merged.
    All,
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.suite {
        if args.pm_passes == PmPasses::All {
            anyhow::bail!("--pm-passes all applies to a program, not to --suite; drop one of them");
        }
        let out = args.out.clone();
        return super::suite::run(
            &args.suite_args,
            &args.program,
            out,
            args.min_seconds,
            &args.gpu,
            args.format,
        );
    }
    if args.pm_passes == PmPasses::All && args.no_counters {
        anyhow::bail!("--pm-passes all records counters in several runs; drop --no-counters or --pm-passes");
    }
    // Stage 1: the flags and the program, before touching any hardware.
    let Some(first) = args.program.first() else {
        anyhow::bail!("give the program to run: gpumodel collect ./kernel [args…] (or --suite)");
    };
    resolve_program(first)?;
    pm_options(&args.gpu)?;
    // The injection library is needed after the trace: a missing one fails now, before anything is written.
    // The scripted GPU writes the rows itself, unless GPUMODEL_INJECT_LIB names a library to run.
    let scripted_totals =
        Backend::from_env().is_scripted() && std::env::var_os("GPUMODEL_INJECT_LIB").is_none();
    if args.kernel_totals && !scripted_totals {
        gpumodel_collect::kernels::find_inject_lib().context("--kernel-totals")?;
    }
    let host = host_name();
    let name = std::path::Path::new(first)
        .file_name()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{name}-{host}-gpu{}.csv", args.gpu.device)));
    let mut opts = RunOptions {
        program: args.program.clone(),
        out: out.clone(),
        rate_hz: args.gpu.rate,
        min_seconds: args.min_seconds,
        idle_seconds: args.idle_seconds,
        device: args.gpu.device,
        host,
        chip: None,
        program_stdout_to_stderr: args.format != ExportFormat::Table,
    };
    let interrupted = interrupt_flag();

    // Stage 2: the hardware.
    let counters = match (args.no_counters, args.pm_passes) {
        (true, _) => Counters::None,
        (false, PmPasses::One) => Counters::FirstGroup,
        (false, PmPasses::All) => Counters::AllGroups,
    };
    let outcome = measure(&mut opts, &args.gpu, counters, interrupted)?;

    let meta = &outcome.meta;
    let mut kernel_totals = None;
    if args.kernel_totals && matches!(meta.status, RunStatus::Complete) {
        let rows = out.with_extension("kernels.csv");
        let totals = if scripted_totals {
            gpumodel_collect::kernels::collect_kernel_totals_scripted
        } else {
            gpumodel_collect::kernels::collect_kernel_totals
        };
        let (profiles, code) = totals(&args.program, &rows, opts.program_stdout_to_stderr)
            .context("per-kernel totals (--kernel-totals)")?;
        let json = out.with_extension("kernels.json");
        let text = serde_json::to_string_pretty(&profiles)?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&json)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .with_context(|| format!("{}: cannot write (it must not exist yet)", json.display()))?;
        kernel_totals = Some(KernelTotals {
            profiles: json.display().to_string(),
            rows: rows.display().to_string(),
            kernels: profiles.len(),
            exit_code: code,
        });
    }
    for w in &meta.warnings {
        eprintln!("gpumodel: warning: {w}");
    }
    let report = CollectReport::new(
        &out.display().to_string(),
        &sidecar_path(&out).display().to_string(),
        meta,
        kernel_totals,
    );
    print(&report, args.format)?;
    Ok(match (&meta.status, outcome.exit) {
        (RunStatus::Interrupted, _) => {
            eprintln!("gpumodel: interrupted; the trace holds everything measured until then");
            ExitCode::from(130)
        }
        (_, ProgramExit::Code(0)) if matches!(meta.status, RunStatus::Complete) => ExitCode::SUCCESS,
        (RunStatus::Failed(why), ProgramExit::Code(c)) => {
            eprintln!("gpumodel: {why}; the trace holds everything measured until then");
            ExitCode::from(u8::try_from(c).ok().filter(|c| *c != 0).unwrap_or(1))
        }
        (RunStatus::Failed(why), _) => {
            eprintln!("gpumodel: {why}; the trace holds everything measured until then");
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    })
}
