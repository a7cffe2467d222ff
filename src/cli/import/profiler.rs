//! `gpumodel import ncu|nvprof FILE`: the training table (one row per kernel) and, with `--profiles DIR`,
//! one kernel profile per kernel. ncu exports are read streaming, one launch at a time into the table.

use super::{Args, finish, write_atomic_with};
use crate::cli::output::emit;
use anyhow::Context;
use gpumodel_models::error::{Error, Result};
use gpumodel_models::import::ImportSummary;
use gpumodel_models::ncu::{
    ImportedKernel, KernelsCsv, MetricUse, Origin, gpu_trace_kernels, is_gpu_trace, join_gpu_trace,
    profile_file_name, read_ncu_each, read_nvprof, read_nvprof_gpu_trace,
};
use gpumodel_models::profile::{KernelProfile, Launch};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Kernels of a short export get one report line each; longer ones a count per model.
const LINES_PER_KERNEL_UP_TO: usize = 20;

pub(super) fn run(args: &Args) -> anyhow::Result<ExitCode> {
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
    let gpu = args.dcgm.read.checked_gpu(&crate::cli::utilization::shipped_gpus())?;
    // The profiles folder first (--out may name a file inside it); removed again when the import fails,
    // so a failed import leaves nothing.
    let created = match &args.profiles {
        Some(dir) if !dir.exists() => {
            std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
            Some(dir)
        }
        _ => None,
    };
    let result = write_all(args, launch, gpu.as_deref());
    if let (Err(_), Some(dir)) = (&result, created) {
        let _ = std::fs::remove_dir(dir);
    }
    finish(result?, args.format)
}

/// The import proper: the table to --out (or stdout), the profiles, the summary of what was written.
fn write_all(
    args: &Args,
    launch: Option<Launch>,
    gpu: Option<&str>,
) -> anyhow::Result<Option<ImportSummary>> {
    Ok(match &args.out {
        Some(out) => {
            let counts = write_atomic_with(out, |w| import_into(args, launch, gpu, w))?;
            let mut s = ImportSummary {
                source: args.file.display().to_string(),
                format: args.source.clone(),
                out: out.display().to_string(),
                rows: counts.rows,
                columns: counts.columns,
                kernels: counts.kernels,
                skipped_rows: 0,
                profiles_dir: None,
                profiles: 0,
            };
            if let Some(dir) = &args.profiles {
                s.profiles_dir = Some(dir.display().to_string());
                s.profiles = counts.profiles;
            }
            Some(s)
        }
        None => {
            let mut bytes = Vec::new();
            let counts = import_into(args, launch, gpu, &mut bytes)?;
            emit(&String::from_utf8_lossy(&bytes))?;
            if let Some(dir) = &args.profiles {
                eprintln!("gpumodel: wrote {} kernel profile(s) to {}", counts.profiles, dir.display());
            }
            None
        }
    })
}

/// What was written: table rows, distinct kernels, table columns and kernel profiles.
struct Counts {
    rows: usize,
    kernels: usize,
    columns: usize,
    profiles: usize,
}

/// Reads the export, writes the table to `w` one kernel at a time, reports on stderr and writes the
/// profiles (all built before the first is written: a bad kernel leaves no partial set).
fn import_into(
    args: &Args,
    launch: Option<Launch>,
    gpu: Option<&str>,
    w: impl Write,
) -> anyhow::Result<Counts> {
    let source = args.file.display().to_string();
    let mut sink = Sink {
        source: &source,
        launch,
        table: KernelsCsv::new(w)?,
        gpu,
        want_profiles: args.profiles.is_some(),
        profiles: Vec::new(),
        lines: Vec::new(),
        keep_lines: args.verbose,
        feeds: BTreeMap::new(),
        n: 0,
    };
    let metric_use = read_export(&args.source, &args.file, args.gpu_trace.as_deref(), |k| sink.take(k))?;
    eprintln!(
        "gpumodel: imported {} kernel(s) from {source}; counters mapped {} / dropped {}{}",
        sink.n,
        metric_use.mapped.len(),
        metric_use.dropped.len(),
        if args.verbose || metric_use.dropped.is_empty() { "" } else { " (--verbose lists them)" }
    );
    if args.verbose {
        let list = |s: &std::collections::BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
        eprintln!("gpumodel: mapped: {}", list(&metric_use.mapped));
        eprintln!("gpumodel: dropped (no model reads them): {}", list(&metric_use.dropped));
    }
    // One line per kernel for a short export (or --verbose); counts per model for a long one.
    if args.verbose || sink.n <= LINES_PER_KERNEL_UP_TO {
        for line in &sink.lines {
            eprintln!("gpumodel:   {line}");
        }
    } else {
        for (model, n) in &sink.feeds {
            eprintln!("gpumodel:   {n} kernel(s): {model}");
        }
    }
    if let Some(dir) = &args.profiles {
        for (name, text) in &sink.profiles {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| path.display().to_string())?;
        }
    }
    let (_, rows, kernels, columns) = sink.table.finish()?;
    Ok(Counts { rows, kernels, columns, profiles: sink.profiles.len() })
}

/// Reads the `profiler` (`ncu` or `nvprof`) export `path`, with nvprof's gpu trace `gpu_trace` when given,
/// handing every kernel to `each`: the one reader of `import ncu|nvprof` and of `predict --kernel EXPORT`.
pub(super) fn read_export(
    profiler: &str,
    path: &Path,
    gpu_trace: Option<&Path>,
    mut each: impl FnMut(ImportedKernel) -> Result<()>,
) -> anyhow::Result<MetricUse> {
    let source = path.display().to_string();
    let source = source.as_str();
    let read_text = |p: &Path| -> anyhow::Result<String> {
        let bytes = std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()))?;
        String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{}: not UTF-8 text at byte {}: expected a profiler's CSV export",
                p.display(),
                e.utf8_error().valid_up_to()
            )
        })
    };
    if profiler == "ncu" {
        let file = std::fs::File::open(path).with_context(|| format!("{source}: cannot read"))?;
        let input = std::io::BufReader::with_capacity(1 << 16, file);
        return Ok(read_ncu_each(input, source, each)?);
    }
    let text = read_text(path)?;
    let (kernels, metric_use) = if is_gpu_trace(&text) && gpu_trace.is_some() {
        anyhow::bail!(
            "{source} is itself an nvprof gpu trace: give the metric table (`nvprof --csv --metrics …`) as FILE and \
             the trace with --gpu-trace"
        );
    } else if is_gpu_trace(&text) {
        // A gpu trace alone: per-kernel times and shapes, no counters.
        let trace = read_nvprof_gpu_trace(&text, source)?;
        eprintln!(
            "gpumodel: {source} is an nvprof gpu trace: per-kernel times and launch shapes, no counters"
        );
        (gpu_trace_kernels(&trace), MetricUse::default())
    } else {
        let (mut kernels, metric_use) = read_nvprof(&text, source)?;
        if let Some(tp) = gpu_trace {
            let trace = read_nvprof_gpu_trace(&read_text(tp)?, &tp.display().to_string())?;
            for note in join_gpu_trace(&mut kernels, &trace) {
                eprintln!("gpumodel: {note}");
            }
        }
        (kernels, metric_use)
    };
    for k in kernels {
        each(k)?;
    }
    Ok(metric_use)
}

/// Where imported kernels go: a table row each, a profile each (with --profiles), a report line each.
struct Sink<'a, W: Write> {
    source: &'a str,
    launch: Option<Launch>,
    /// `--gpu` (shared with `import dcgm`): the GPU of an export that does not name it.
    gpu: Option<&'a str>,
    table: KernelsCsv<W>,
    want_profiles: bool,
    profiles: Vec<(String, String)>,
    /// The per-kernel report lines: all with --verbose, else only while the export is short.
    lines: Vec<String>,
    keep_lines: bool,
    feeds: BTreeMap<String, usize>,
    n: usize,
}

impl<W: Write> Sink<'_, W> {
    fn take(&mut self, mut k: ImportedKernel) -> Result<()> {
        if let Some(gpu) = self.gpu {
            let stated =
                ImportedKernel { device: Some(gpu.to_string()), capability: None, ..k.clone() }.gpu();
            match k.gpu() {
                Some(named) if k.device.is_some() && Some(&named) != stated.as_ref() => {
                    return Err(Error::Invalid(format!(
                        "{}: the export names the GPU ({named}); --gpu {gpu} contradicts it: drop --gpu",
                        self.source
                    )));
                }
                _ => k.device = Some(gpu.to_string()),
            }
        }
        let profile = k.to_profile(self.source, self.launch.clone())?;
        let file = profile_file_name(self.n, &k.name);
        let line = feeds_line(&profile, k.origin);
        *self.feeds.entry(line.split(" (").next().unwrap_or_default().to_string()).or_insert(0) += 1;
        if self.keep_lines || self.n < LINES_PER_KERNEL_UP_TO {
            self.lines.push(format!("{file}: {line}"));
        }
        if self.want_profiles {
            let json = serde_json::to_string_pretty(&profile).map_err(|e| Error::Invalid(e.to_string()))?;
            self.profiles.push((file, json + "\n"));
        }
        self.table.push(&k).map_err(|e| Error::Invalid(format!("writing the table: {e}")))?;
        self.n += 1;
        Ok(())
    }
}

/// Which model a kernel profile can feed, as one line of the import report.
fn feeds_line(p: &KernelProfile, origin: Origin) -> String {
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
