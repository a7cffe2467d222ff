//! `gpumodel validate --data nvdvfs-gtx1080ti --arch gtx1080ti` — predicted vs measured kernel time for
//! every kernel and clock pair, and the E·D^n optimum each model picks against the measured one.

use crate::cli::output::{ExportFormat, plot, print, progress_bar};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::{Locator, open, sha256_hex};
use gpumodel_predict::baseline::Baseline;
use gpumodel_predict::calibration::file::{CalibrationFile, DatasetInfo};
use gpumodel_predict::validation::{Options, Progress, ValidateOutput, validate_with_progress};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A registered NV-DVFS dataset (nvdvfs-gtx1080ti, nvdvfs-gtx980) or the path of an NV-DVFS CSV.
    #[arg(long)]
    pub data: String,
    /// Architecture profile: a built-in name or the path of a TOML file.
    #[arg(long)]
    pub arch: String,
    /// Objectives for the optimum check (E^a·D^b): e, ed, ed2, ed3 or a,b. Repeatable.
    #[arg(long = "objective", default_values = ["e", "ed", "ed2"])]
    pub objectives: Vec<String>,
    /// Peer timing model to compute from the same rows and report beside ours: wang-chu-2018 or
    /// hong-kim-2009. Repeatable.
    #[arg(long = "baseline", value_name = "NAME")]
    pub baselines: Vec<String>,
    /// Restrict the validation to a kernel set: a file with one kernel name per line (or comma-separated;
    /// `#` starts a comment), or a comma-separated list (e.g. Wang & Chu's 20 kernels).
    #[arg(long, value_name = "FILE|LIST")]
    pub kernels: Option<String>,
    /// Score only these kernels (a file or a comma-separated list, as --kernels) while every fold trains
    /// on all the other kernels validated (the data's, or --kernels'): e.g. Wang & Chu's 20 kernels, each
    /// predicted by a calibration fitted on the dataset's 29 others.
    /// Not with --save-calibration (the file would be the pool's, not the scored kernels').
    #[arg(long, value_name = "FILE|LIST")]
    pub score_kernels: Option<String>,
    /// Apply a time calibration fitted elsewhere (`--save-calibration` on another GPU or dataset) as is,
    /// and report its error beside ours: does it transfer? Any architecture's file is accepted here.
    #[arg(long, value_name = "FILE")]
    pub apply_calibration: Option<PathBuf>,
    /// Offer only the additive model's calibration forms inside the folds: without this, the timing
    /// model's structural alternative (bank-conflict replays overlapping issue, each wave's pipeline
    /// fill at the default core clock) is a candidate too (and the saved calibration's structure where
    /// it wins over all kernels).
    #[arg(long)]
    pub no_replay_overlap: bool,
    /// The default since session 8 (replay-overlap candidates inside the folds); accepted so that older
    /// scripts keep working.
    #[arg(long, hide = true, conflicts_with = "no_replay_overlap")]
    pub replay_overlap: bool,
    /// Also report the combined model: ours and Wang & Chu's general form (needs --baseline
    /// wang-chu-2018) joined by a weighted geometric mean or the maximum, chosen inside the same
    /// leave-one-kernel-out folds and kept only where it beats ours alone there.
    #[arg(long)]
    pub combine: bool,
    /// Show every measured row too, first (CSV then carries the rows; without it, the per-kernel table).
    #[arg(long)]
    pub rows: bool,
    /// Write the time calibration fitted on all kernels (TOML) for `gpumodel predict --calibration`.
    #[arg(long, value_name = "FILE")]
    pub save_calibration: Option<PathBuf>,
    /// Overwrite the --save-calibration file if it exists.
    #[arg(long, requires = "save_calibration")]
    pub force: bool,
    /// table, csv (the main table, RFC 4180), json (everything: per row, per kernel, baselines, optima)
    /// or markdown.
    /// Also write the headline figure of the result as SVG (`gpumodel report` draws all of them).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
}

/// The progress bar of the calibration fits (hidden when stderr is not a terminal).
struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }
    fn inc(&self, n: u64) {
        self.0.inc(n);
    }
}

/// The kernel names of `--kernels` (or another `flag`): a file's names (one per line or comma-separated,
/// `#` comments), or the comma-separated list itself.
fn kernel_set(flag: &str, spec: &str) -> anyhow::Result<Vec<String>> {
    let path = std::path::Path::new(spec);
    let text = if path.is_file() {
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {flag} {spec}: {e}"))?
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
    // Checked here rather than by clap, whose conflict message spans several lines.
    if args.score_kernels.is_some() && args.save_calibration.is_some() {
        anyhow::bail!(
            "--score-kernels cannot be used with --save-calibration (the file is fitted on every validated kernel, not the scored ones): run validate without --score-kernels to write it"
        );
    }
    let objectives = args.objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>, _>>()?;
    let baselines = args.baselines.iter().map(|b| Baseline::parse(b)).collect::<Result<Vec<_>, _>>()?;
    let kernels = args.kernels.as_deref().map(|s| kernel_set("--kernels", s)).transpose()?;
    let score_kernels =
        args.score_kernels.as_deref().map(|s| kernel_set("--score-kernels", s)).transpose()?;
    let arch = ArchProfile::resolve(&args.arch)?;
    // Refuse an existing calibration file before the work, not after.
    if let Some(p) = &args.save_calibration
        && p.exists()
        && !args.force
    {
        anyhow::bail!("{} already exists: pass --force to overwrite it, or choose another file", p.display());
    }
    let opened = open(&args.data, Some(Format::Nvdvfs), BadRows::Fail, &Locator::from_env())?;
    let apply = match &args.apply_calibration {
        Some(p) => {
            let f = CalibrationFile::read(p)?;
            let label = format!("{} (fitted for {} on {})", p.display(), f.arch, f.dataset.name);
            Some((label, f.calibration(), f.timing()))
        }
        None => None,
    };
    let opts = Options {
        objectives,
        kernels,
        score_kernels,
        baselines,
        apply,
        structural: !args.no_replay_overlap,
        combine: args.combine,
    };
    let bar = Bar(progress_bar(0, "validate"));
    let report = validate_with_progress(&opened.imported.table, &arch, &opts, &bar);
    bar.0.finish_and_clear();
    let report = report?;
    if let Some(p) = &args.save_calibration {
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
    let out = ValidateOutput { report, arch_display_name: arch.display_name.clone(), rows_first: args.rows };
    if let Some(p) = &args.plot {
        plot(&out, p)?;
    }
    print(&out, args.format)?;
    Ok(ExitCode::SUCCESS)
}
