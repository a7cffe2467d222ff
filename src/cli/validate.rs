//! `gpumodel validate --data nvdvfs-gtx1080ti --arch gtx1080ti` — predicted vs measured kernel time for
//! every kernel and clock pair, and the E·D^n optimum each model picks against the measured one.

use crate::cli::output::{ExportFormat, plot_svg, print, refuse_existing};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::{Locator, open, sha256_hex};
use gpumodel_predict::baseline::Baseline;
use gpumodel_predict::calibration::file::DatasetInfo;
use gpumodel_predict::validation::from_gpu::FromGpu;
use gpumodel_predict::validation::{Options, Progress, ValidateOutput, validate_with_progress};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A registered NV-DVFS dataset (nvdvfs-gtx1080ti, nvdvfs-gtx980, nvdvfs-p100, nvdvfs-v100) or the path of an
    /// NV-DVFS CSV.
    #[arg(long)]
    pub data: String,
    /// Architecture profile: a built-in name or the path of a TOML file.
    #[arg(long)]
    pub arch: String,
    /// Objectives for the optimum check (E^a·D^b): e, ed, ed2, ed3 or a,b. Repeatable.
    #[arg(long = "objective", default_values = ["e", "ed", "ed2"])]
    pub objectives: Vec<String>,
    /// Peer timing model to compute from the same rows and report beside ours: wang-chu-2018 or
    /// hong-kim-2009; with --from also scaled (the measured time × the GPUs' throughput ratio in the
    /// kernel's bottleneck) and model-scaled (the measured time × the timing model's ratio). Repeatable.
    #[arg(long = "baseline", value_name = "NAME")]
    pub baselines: Vec<String>,
    /// Take each kernel's profile (counters and measured time) from another GPU's NV-DVFS rows (a dataset
    /// name or a file) and predict --data's clock pairs from it: a GPU's time from another GPU's profile.
    #[arg(long, value_name = "DATA", requires = "from_arch")]
    pub from: Option<String>,
    /// The architecture profile of the --from GPU: a built-in name or a TOML file.
    #[arg(long, value_name = "ARCH", requires = "from")]
    pub from_arch: Option<String>,
    /// Restrict the validation to a kernel set: a file with one kernel name per line (or comma-separated;
    /// `#` starts a comment), or a comma-separated list of names (e.g. Wang & Chu's 20 kernels). A value
    /// with a `/` or a `.` is a file, which must exist.
    #[arg(long, value_name = "FILE|LIST")]
    pub kernels: Option<String>,
    /// Show every measured row too, first (CSV then carries the rows; without it, the per-kernel table).
    #[arg(long)]
    pub rows: bool,
    /// Show the per-bottleneck-class table first: each class's time error, ours (model and calibrated)
    /// beside every --baseline (CSV then carries this table instead of the per-kernel one).
    #[arg(long, conflicts_with = "rows")]
    pub classes: bool,
    /// Write the time calibration fitted on all kernels (TOML) for `gpumodel predict --calibration`.
    #[arg(long, value_name = "FILE")]
    pub save_calibration: Option<PathBuf>,
    /// Overwrite an existing --save-calibration or --plot file.
    #[arg(long)]
    pub force: bool,
    /// Also write the headline figure of the result as SVG (`gpumodel report` draws all of them).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// table, csv (the main table, RFC 4180), json (everything: per row, per kernel, per class,
    /// baselines, optima) or markdown.
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
    /// Print every note on the method after the figures (without it, a one-line summary).
    #[arg(long)]
    pub explain: bool,
    /// No progress bar and no notes on stderr (errors still go there).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The progress of the calibration fits (a bar on a terminal, plain lines in a log).
struct Bar(crate::cli::output::Progress);

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }
    fn inc(&self, n: u64) {
        self.0.inc(n);
    }
}

/// The kernel names of `--kernels` (or another `flag`): a file's names (one per line or comma-separated,
/// `#` comments), or the comma-separated list itself. A value that names a file (an existing one, or
/// one with a `/` or a `.`: kernel names have neither) must be readable.
fn kernel_set(flag: &str, spec: &str) -> anyhow::Result<Vec<String>> {
    let path = std::path::Path::new(spec);
    let looks_like_file = !spec.contains(',') && (spec.contains('/') || spec.contains('.'));
    let text = if path.is_file() || looks_like_file {
        std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!(
                "cannot read {flag} file {spec}: {e} (give a file of kernel names or a comma-separated list)"
            )
        })?
    } else {
        spec.to_string()
    };
    let names: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(','))
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        anyhow::bail!(
            "{flag} {spec}: no kernel names (give a comma-separated list or a file with one name per line)"
        );
    }
    Ok(names)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let objectives = args.objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>, _>>()?;
    let baselines = args.baselines.iter().map(|b| Baseline::parse(b)).collect::<Result<Vec<_>, _>>()?;
    let kernels = args.kernels.as_deref().map(|s| kernel_set("--kernels", s)).transpose()?;
    let arch = ArchProfile::resolve(&args.arch)?;
    // Refuse an existing output file before the work, not after.
    if let Some(p) = &args.plot {
        refuse_existing(p, args.force)?;
    }
    if let Some(p) = &args.save_calibration
        && p.exists()
        && !args.force
    {
        anyhow::bail!("{} already exists: pass --force to overwrite it, or choose another file", p.display());
    }
    let from = match (&args.from, &args.from_arch) {
        (Some(data), Some(a)) => {
            let table = open(data, Some(Format::Nvdvfs), BadRows::Fail, &Locator::from_env())?.imported.table;
            Some(FromGpu { table, arch: ArchProfile::resolve(a)? })
        }
        _ => None,
    };
    let opened = open(&args.data, Some(Format::Nvdvfs), BadRows::Fail, &Locator::from_env())?;
    let opts = Options { objectives, kernels, baselines, from };
    let bar = Bar(crate::cli::output::Progress::new(0, "validate", args.quiet));
    let report = validate_with_progress(&opened.imported.table, &arch, &opts, &bar);
    bar.0.finish();
    let report = report?;
    if let Some(p) = args.save_calibration.as_ref().filter(|_| !report.calibration_would_hurt()) {
        let bytes = std::fs::read(&opened.path)
            .map_err(|e| anyhow::anyhow!("cannot read {} to checksum it: {e}", opened.path.display()))?;
        let dataset = DatasetInfo {
            name: opened.entry.as_ref().map_or_else(|| args.data.clone(), |e| e.name.clone()),
            path: opened.path.display().to_string(),
            sha256: sha256_hex(&bytes),
            rows: report.rows,
            kernels: report.kernels,
        };
        report.calibration_file(dataset).write(p, args.force)?;
        if !args.quiet {
            saved_note(p, &arch, &report);
        }
    }
    if let Some(p) = args.save_calibration.as_ref().filter(|_| report.calibration_would_hurt()) {
        // Said even with --quiet: the file asked for is not there.
        eprintln!(
            "{} not written: on these kernels the calibration's leave-one-kernel-out error ({:.1}%) is above the timing model as is ({:.1}%), so predict is better without --calibration",
            p.display(),
            report.calibration_out_of_fold_mape_pct(),
            report.model_mape_pct
        );
    }
    let out = ValidateOutput {
        report,
        arch_display_name: arch.display_name.clone(),
        rows_first: args.rows,
        classes_first: args.classes,
        explain: args.explain,
    };
    if let Some(p) = &args.plot {
        plot_svg(&out, p, args.force)?;
    }
    print(&out, args.format)?;
    Ok(ExitCode::SUCCESS)
}

/// What `--save-calibration` wrote, on stderr (JSON and CSV on stdout stay machine-readable).
fn saved_note(p: &std::path::Path, arch: &ArchProfile, report: &gpumodel_predict::validation::Report) {
    // The note goes to stderr so that JSON/CSV on stdout stay machine-readable.
    // What the file records as its error: the procedure's out-of-fold MAPE for factors, the
    // structure's own error for the structure alone (nothing is fitted; it is what the file applies).
    eprintln!(
        "wrote {} (time calibration for {}, {} on all {} kernels; {} {:.1}%)",
        p.display(),
        arch.name,
        if report.calibration.is_some() { "fitted" } else { "its structure chosen" },
        report.kernels,
        if report.calibration.is_some() {
            "out-of-fold MAPE of the nested procedure"
        } else {
            "MAPE of that structure, nothing fitted"
        },
        report.calibration_out_of_fold_mape_pct()
    );
    // The file obeys the folds' keep rule: say when it records the structure alone.
    if report.calibration.is_none() {
        eprintln!(
            "note: it records the {} model alone ({:.2}% on these kernels): the factors fitted on them did not beat it out of fold by more than one standard error, so they were dropped",
            report.calibration_shared_overlap.label(),
            report.calibration_model_mape_pct
        );
    }
}
