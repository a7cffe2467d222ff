//! `gpumodel import guerreiro|nvdvfs|ncu|nvprof FILE --out table.csv` — measurement files → training table
//! (and, for ncu / nvprof, kernel profiles for `predict` with `--profiles DIR`).

use super::output::{ExportFormat, emit, print};
use anyhow::Context;
use gpumodel_models::import::{BadRows, Format, ImportSummary, import_file};
use std::path::PathBuf;
use std::process::ExitCode;

/// The command lines that give a complete profile, printed by `import --help`.
const COMPLETE_PROFILE_HELP: &str = "\
A complete profile (every counter of the pipeline timing model, launch shapes and times):
  Nsight Compute:  ncu --csv --page raw --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,smsp__inst_executed.sum,smsp__inst_executed_op_global_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_fp64.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_xu.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active ./app > k.csv
                   gpumodel import ncu k.csv --profiles profiles/
  nvprof (up to Volta):  nvprof --csv --metrics all --log-file metrics.csv ./app
                   nvprof --csv --print-gpu-trace --log-file trace.csv ./app
                   gpumodel import nvprof metrics.csv --gpu-trace trace.csv --profiles profiles/
An export with less (bytes and FP counts only) still predicts, with the roofline fallback.";

#[derive(Debug, clap::Args)]
#[command(after_long_help = COMPLETE_PROFILE_HELP)]
pub struct Args {
    /// Source format.
    #[arg(value_name = "FORMAT", value_parser = ["guerreiro", "nvdvfs", "ncu", "nvprof", "dcgm"])]
    pub source: String,
    /// The file to import.
    pub file: PathBuf,
    /// Where to write the training table (CSV); stdout when omitted.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Skip malformed rows (counted on stderr) instead of stopping at the first one.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// ncu / nvprof: also write one kernel profile (JSON, the input of `predict --kernel`) per kernel here.
    #[arg(long, value_name = "DIR")]
    pub profiles: Option<PathBuf>,
    /// nvprof: the same program's `nvprof --print-gpu-trace --csv` output, joined by kernel name for
    /// each kernel's launch shape (grid, block, registers, shared memory) and, when the metric table has
    /// none, its mean time. (A gpu-trace file given alone as FILE yields per-kernel times and shapes.)
    #[arg(long, value_name = "FILE")]
    pub gpu_trace: Option<PathBuf>,
    /// nvprof (which records no launch shape): grid size `GX,GY,GZ` for the kernel profiles.
    // One argument split at commas (`num_args = 3` would demand three separate arguments).
    #[arg(long, value_delimiter = ',', value_name = "GX,GY,GZ")]
    pub grid: Option<Vec<u32>>,
    /// nvprof: block size `BX,BY,BZ` for the kernel profiles.
    #[arg(long, value_delimiter = ',', value_name = "BX,BY,BZ")]
    pub block: Option<Vec<u32>>,
    /// ncu / nvprof: list the metrics mapped to counters and those dropped (the default prints counts).
    #[arg(long, short)]
    pub verbose: bool,
    /// How to print the summary of what was written with --out (without --out, stdout is the table's CSV).
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
    #[command(flatten)]
    pub dcgm: crate::cli::clocks::ImportArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let args = &args;
    if args.source == "dcgm" {
        return crate::cli::clocks::import(args);
    }
    if args.source == "ncu" || args.source == "nvprof" {
        return run_profiler(args);
    }
    let format = Format::from_name(&args.source)?;
    let bad = if args.skip_bad_rows { BadRows::Skip } else { BadRows::Fail };
    let imported = import_file(&args.file, format, bad)?;
    if !imported.skipped.is_empty() {
        eprintln!(
            "gpumodel: skipped {} malformed row(s) of {}; first: {}",
            imported.skipped.len(),
            args.file.display(),
            imported.skipped[0]
        );
    }
    let mut summary = write_table(&imported.table, args)?;
    if let Some(s) = &mut summary {
        s.skipped_rows = imported.skipped.len();
    }
    finish(summary, args.format)
}

/// Prints the summary of a table written with --out.
fn finish(summary: Option<ImportSummary>, format: ExportFormat) -> anyhow::Result<ExitCode> {
    if let Some(s) = summary {
        print(&s, format)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Nsight Compute / nvprof CSV → training table (one row per kernel) and, optionally, kernel profiles.
fn run_profiler(args: &Args) -> anyhow::Result<ExitCode> {
    use gpumodel_models::ncu::{
        MetricUse, gpu_trace_kernels, is_gpu_trace, join_gpu_trace, kernels_table, profile_file_name,
        read_ncu, read_nvprof, read_nvprof_gpu_trace,
    };
    use gpumodel_models::profile::Launch;
    // The flags first: a bad --grid must not cost reading the file.
    for (flag, v) in [("--grid", &args.grid), ("--block", &args.block)] {
        if v.as_ref().is_some_and(|v| v.len() != 3 || v.contains(&0)) {
            anyhow::bail!("{flag} takes three sizes of at least 1, like {flag} 128,1,1");
        }
    }
    let launch = match (&args.grid, &args.block) {
        (Some(g), Some(b)) => Some(Launch {
            grid: [g[0], g[1], g[2]],
            block: [b[0], b[1], b[2]],
            registers_per_thread: 0,
            shared_mem_per_block: 0,
        }),
        (None, None) => None,
        _ => anyhow::bail!("give both --grid and --block, or neither"),
    };
    if args.gpu_trace.is_some() && args.source != "nvprof" {
        anyhow::bail!("--gpu-trace is nvprof's companion file; ncu exports carry their own launch shapes");
    }
    let source = args.file.display().to_string();
    let read = |p: &PathBuf| -> anyhow::Result<String> {
        let bytes = std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()))?;
        String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{}: not UTF-8 text at byte {}: expected a profiler's CSV export",
                p.display(),
                e.utf8_error().valid_up_to()
            )
        })
    };
    let text = read(&args.file)?;
    let (kernels, metric_use) = if args.source == "ncu" {
        read_ncu(&text, &source)?
    } else if is_gpu_trace(&text) && args.gpu_trace.is_some() {
        anyhow::bail!(
            "{source} is itself an nvprof gpu trace: give the metric table (`nvprof --csv --metrics …`) as FILE and \
             the trace with --gpu-trace"
        );
    } else if is_gpu_trace(&text) {
        // A gpu trace alone: per-kernel times and shapes, no counters.
        let trace = read_nvprof_gpu_trace(&text, &source)?;
        eprintln!(
            "gpumodel: {source} is an nvprof gpu trace: per-kernel times and launch shapes, no counters"
        );
        (gpu_trace_kernels(&trace), MetricUse::default())
    } else {
        let (mut kernels, metric_use) = read_nvprof(&text, &source)?;
        if let Some(tp) = &args.gpu_trace {
            let trace = read_nvprof_gpu_trace(&read(tp)?, &tp.display().to_string())?;
            for note in join_gpu_trace(&mut kernels, &trace) {
                eprintln!("gpumodel: {note}");
            }
        }
        (kernels, metric_use)
    };
    eprintln!(
        "gpumodel: imported {} kernel(s) from {source}; counters mapped {} / dropped {}{}",
        kernels.len(),
        metric_use.mapped.len(),
        metric_use.dropped.len(),
        if args.verbose || metric_use.dropped.is_empty() { "" } else { " (--verbose lists them)" }
    );
    if args.verbose {
        let list = |s: &std::collections::BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
        eprintln!("gpumodel: mapped: {}", list(&metric_use.mapped));
        eprintln!("gpumodel: dropped (no model reads them): {}", list(&metric_use.dropped));
    }
    // Everything is built before anything is written: a bad kernel leaves no partial set of profiles.
    let mut profiles = Vec::new();
    let mut feeds = std::collections::BTreeMap::new();
    for (i, k) in kernels.iter().enumerate() {
        let profile = k.to_profile(&source, launch.clone())?;
        let file = profile_file_name(i, &k.name);
        let line = feeds_line(&profile, k.origin);
        // One line per kernel for a short export (or --verbose); counts per model for a long one.
        if args.verbose || kernels.len() <= 20 {
            eprintln!("gpumodel:   {file}: {line}");
        }
        *feeds.entry(line.split(" (").next().unwrap_or_default().to_string()).or_insert(0usize) += 1;
        profiles.push((file, serde_json::to_string_pretty(&profile)? + "\n"));
    }
    if !(args.verbose || kernels.len() <= 20) {
        for (model, n) in &feeds {
            eprintln!("gpumodel:   {n} kernel(s): {model}");
        }
    }
    if args.profiles.is_none() {
        profiles.clear();
    }
    let table = kernels_table(&kernels, &source);
    if let Some(dir) = &args.profiles {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
        for (name, text) in &profiles {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| path.display().to_string())?;
        }
    }
    let mut summary = write_table(&table, args)?;
    if let (Some(s), Some(dir)) = (&mut summary, &args.profiles) {
        s.profiles_dir = Some(dir.display().to_string());
        s.profiles = profiles.len();
    } else if let Some(dir) = &args.profiles {
        eprintln!("gpumodel: wrote {} kernel profile(s) to {}", profiles.len(), dir.display());
    }
    finish(summary, args.format)
}

/// Writes the table to --out (through a temporary file: a failure leaves no half-written table) and
/// returns its summary, or prints it as CSV on stdout.
fn write_table(t: &gpumodel_models::Table, args: &Args) -> anyhow::Result<Option<ImportSummary>> {
    match &args.out {
        Some(out) => {
            let mut bytes = Vec::new();
            t.write_csv_to(&mut bytes)?;
            gpumodel_models::atomic::write_atomic(out, &bytes)?;
            let source = args.file.display().to_string();
            Ok(Some(ImportSummary::of(t, &source, &args.source, &out.display().to_string())))
        }
        None => {
            let mut bytes = Vec::new();
            t.write_csv_to(&mut bytes)?;
            emit(&String::from_utf8_lossy(&bytes))?;
            Ok(None)
        }
    }
}

/// Which model a kernel profile can feed, as one line of the import report.
fn feeds_line(p: &gpumodel_models::profile::KernelProfile, origin: gpumodel_models::ncu::Origin) -> String {
    use gpumodel_predict::kernel::fallback::{covers_anything, lacked};
    let lacks = lacked(p);
    if lacks.is_empty() {
        "full pipeline timing model".into()
    } else if covers_anything(p) {
        let shape =
            if p.launch.is_known() { String::new() } else { format!("; {}", origin.missing_launch_hint()) };
        format!("roofline fallback (lacks {}){shape}", lacks.join(", "))
    } else {
        "no counter any model reads: see `gpumodel import --help` for the command lines of a complete profile"
            .into()
    }
}
