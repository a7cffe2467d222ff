//! `gpumodel import guerreiro|nvdvfs|ncu|nvprof FILE --out table.csv` — measurement files → training table
//! (and, for ncu / nvprof, kernel profiles for `predict` with `--profiles DIR`).

pub mod export;
mod profiler;

use super::output::{ExportFormat, emit, print};
use gpumodel_models::import::{BadRows, Format, ImportSummary, import_file};
use gpumodel_models::registry::{self, Locator};
use std::path::PathBuf;
use std::process::ExitCode;

/// The command lines that give a complete profile, printed by `import --help`.
const COMPLETE_PROFILE_HELP: &str = "\
A complete profile (every counter of the pipeline timing model, launch shapes and times):
  Nsight Compute:  ncu --csv --page raw --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,smsp__inst_executed.sum,smsp__inst_executed_op_global_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_fp64.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_xu.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__sass_inst_executed_op_branch.sum,device__attribute_display_name,sm__cycles_elapsed.avg.per_second ./app > k.csv
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
    pub dcgm: crate::cli::utilization::ImportArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let args = &args;
    if args.source == "dcgm" {
        return crate::cli::utilization::import(args);
    }
    if args.source == "ncu" || args.source == "nvprof" {
        return profiler::run(args);
    }
    let format = Format::from_name(&args.source)?;
    let bad = if args.skip_bad_rows { BadRows::Skip } else { BadRows::Fail };
    // A dataset's name (`gpumodel dataset list`) stands for its file, as it does for `train --data`.
    let imported = match args.file.to_str() {
        Some(spec) => registry::open(spec, Some(format), bad, &Locator::from_env())?.imported,
        None => import_file(&args.file, format, bad)?,
    };
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
pub(crate) fn finish(summary: Option<ImportSummary>, format: ExportFormat) -> anyhow::Result<ExitCode> {
    if let Some(s) = summary {
        print(&s, format)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the table to --out (through a temporary file: a failure leaves no half-written table) and
/// returns its summary, or prints it as CSV on stdout.
fn write_table(t: &gpumodel_models::Table, args: &Args) -> anyhow::Result<Option<ImportSummary>> {
    match &args.out {
        Some(out) => {
            write_atomic_with(out, |w| Ok(t.write_csv_to(w)?))?;
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

/// Writes `out` through its `.part` file and a rename (a failure leaves whatever was there before and no
/// half-written file), streaming: `write` gets a buffered writer on the part file.
pub(crate) fn write_atomic_with<T>(
    out: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    use gpumodel_models::error::Error;
    use std::io::Write;
    let part = gpumodel_models::atomic::part_path(out);
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let result = (|| {
        let file = std::fs::File::create(&part).map_err(io(&part))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
        let v = write(&mut w)?;
        w.flush().map_err(io(&part))?;
        std::fs::rename(&part, out).map_err(io(out))?;
        Ok(v)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    result
}
