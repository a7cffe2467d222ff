//! `gpumodel train` — parse the flags, hand them to the library's checked parameters
//! (`gpumodel_train::experiment`), run, then write the artifacts where asked and print the result.

use super::output::{ExportFormat, Progress, plot_svg, print, refuse_existing};
use anyhow::Context;
use gpumodel_models::import::Format;
use gpumodel_train::BpannParams;
use gpumodel_train::bpann::Backend;
use gpumodel_train::experiment::{Fitted, TrainParams, TrainReport, default_prefix};
use gpumodel_train::utilization::run::is_profile_data;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Training data: a registered dataset (`gpumodel dataset list`) or a file.
    #[arg(long, default_value = "guerreiro-titanx-micro")]
    pub data: String,
    /// Format of a data file: guerreiro, nvdvfs or table (guessed when unambiguous).
    #[arg(long = "import", value_name = "FORMAT")]
    pub import: Option<String>,
    /// Held-out test data (name or file). Default: the registry's test set of --data, if any.
    #[arg(long)]
    pub test: Option<String>,
    /// Score no held-out test set, even when the registry names one.
    #[arg(long, conflicts_with = "test")]
    pub no_test: bool,
    /// Inputs: a built-in feature set or a TOML file. Default: the data's own input set, without the
    /// inputs that are constant on every row.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub features: Option<String>,
    /// Candidate models, comma-separated (default: the eleven of `models/trained/README.md`): bpann,
    /// physical, physical-bpann, mlr, mlrplus; a network may add -lbfgs, -avgK and (physical-bpann) -half.
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub models: Vec<String>,
    /// Which model becomes `<prefix>-default.json`: `cv` chooses by grouped CV on the training data;
    /// a model name fixes the choice.
    #[arg(long, default_value = "cv", value_name = "cv|NAME")]
    pub select: String,
    /// Average each network's grouped-CV figures over K seeds before choosing (default 3; 1 with --select NAME).
    #[arg(long, value_name = "K")]
    pub selection_seeds: Option<usize>,
    /// Also report leave-cluster-out CV: whole clusters of similar kernels left out per fold.
    #[arg(long)]
    pub cluster_cv: bool,
    /// Resamples of the test set's applications for the held-out figures' 95% intervals (0: none).
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub bootstrap: usize,
    /// Where Adam's steps run: native (our gradient, restarts in parallel) or burn (its autodiff; slower).
    #[arg(long, value_enum, default_value_t = BackendArg::Native)]
    pub backend: BackendArg,
    /// Hidden layer widths of the networks.
    #[arg(long, value_delimiter = ',', default_value = "4,4", value_name = "W,…")]
    pub hidden: Vec<usize>,
    /// Seed of the networks' initial weights and validation split, and of the CV shuffles.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fit each network with this many seeds and report the median held-out figures (the first is written).
    #[arg(long, default_value_t = 1)]
    pub seeds: usize,
    /// Restarts of a network; the one with the lowest validation error is kept.
    #[arg(long, default_value_t = 3)]
    pub restarts: usize,
    /// Restarts of a network inside each CV fold.
    #[arg(long, default_value_t = 1)]
    pub cv_restarts: usize,
    /// Most epochs per restart (passes over the training rows).
    #[arg(long, default_value_t = 2000)]
    pub epochs: usize,
    /// Stop a restart after this many epochs without a lower validation error.
    #[arg(long, default_value_t = 300)]
    pub patience: usize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 0.01)]
    pub learning_rate: f64,
    /// L2 penalty on the weights of the L-BFGS networks (scikit-learn's alpha).
    #[arg(long, value_name = "ALPHA", default_value_t = 1e-4)]
    pub l2: f64,
    /// Share of the training kernels held out for early stopping and the choice of restart.
    #[arg(long, default_value_t = 0.2)]
    pub validation: f64,
    /// Folds of random k-fold CV (0: skip).
    #[arg(long, default_value_t = 10)]
    pub folds: usize,
    /// Folds of grouped k-fold CV, whole kernels left out; the default is chosen by it (0: skip).
    #[arg(long, default_value_t = 5)]
    pub group_folds: usize,
    /// Write the artifacts `<prefix>-<model>.json` and `<prefix>-default.json` into DIR.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Write them into the source tree's `models/trained/` (the models `gpumodel predict` uses).
    #[arg(long, conflicts_with = "out_dir")]
    pub install: bool,
    /// Artifact file prefix. Default: from the dataset (titanx, gtx1080ti, …) or the file name.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Write the CV folds (`protocol,row,kernel,fold`) to a CSV, for a peer tool to use the same ones.
    #[arg(long, value_name = "FILE.csv")]
    pub folds_out: Option<PathBuf>,
    /// Skip data rows that do not parse (each is reported) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// Also write the headline figure as SVG (`gpumodel report` draws all of them).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Overwrite an existing --plot file (without it an existing file is kept and nothing is written).
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no notes on stderr (errors are still printed).
    #[arg(long, short)]
    pub quiet: bool,
    /// Output on stdout: table, csv, json (the whole result) or markdown.
    #[arg(long, value_enum, default_value_t, hide_possible_values = true)]
    pub format: ExportFormat,
    #[command(flatten)]
    pub clocks: crate::cli::utilization::TrainArgs,
}

/// `--backend` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    Native,
    Burn,
}

impl Args {
    /// The library's unchecked parameters.
    fn params(&self) -> anyhow::Result<TrainParams> {
        Ok(TrainParams {
            data: self.data.clone(),
            import: self.import.as_deref().map(Format::from_name).transpose()?,
            test: self.test.clone(),
            no_test: self.no_test,
            features: self.features.clone(),
            skip_bad_rows: self.skip_bad_rows,
            models: self.models.clone(),
            select: Some(self.select.clone()),
            selection_seeds: self.selection_seeds,
            cluster_cv: self.cluster_cv,
            bootstrap: self.bootstrap,
            bpann: BpannParams {
                hidden: self.hidden.clone(),
                seed: self.seed,
                restarts: self.restarts,
                max_epochs: self.epochs,
                patience: self.patience,
                learning_rate: self.learning_rate,
                l2: self.l2,
                validation_fraction: self.validation,
                backend: match self.backend {
                    BackendArg::Native => Backend::Native,
                    BackendArg::Burn => Backend::Burn,
                },
                ..BpannParams::default()
            },
            seed: self.seed,
            seeds: self.seeds,
            cv_restarts: self.cv_restarts,
            folds: self.folds,
            group_folds: self.group_folds,
            command: crate::cli::output::command_line(),
        })
    }
}

/// Whether to draw the progress bar: on stderr, whatever stdout is (a table or JSON redirected to a
/// file), unless --quiet. The factory hides it when stderr is not a terminal.
fn shows_progress(quiet: bool) -> bool {
    !quiet
}

/// The source tree's `models/trained/`, from the current directory upwards (`--install`). Never a path
/// compiled into the binary: a binary built elsewhere must not write into the tree it was built from.
fn install_dir() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    cwd.ancestors()
        .map(|d| d.join("models/trained"))
        .find(|d| d.is_dir() && d.parent().is_some_and(|m| m.join("featuresets").is_dir()))
        .with_context(|| {
            format!(
                "--install: no models/trained/ of a gpumodel source tree in {} or above: run from the source tree, or use --out-dir DIR",
                cwd.display()
            )
        })
}

/// Writes every artifact, and the chosen one again as `<prefix>-default.json`, into `dir`.
fn write_artifacts(
    dir: &Path,
    prefix: &str,
    fitted: &[Fitted],
    report: &mut TrainReport,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating the output folder {}", dir.display()))?;
    for f in fitted {
        let path = dir.join(format!("{prefix}-{}.json", f.name));
        f.artifact.write_json_file(&path)?;
        report.artifacts.push(path.display().to_string());
        if let Some(sel) = report.selection.as_ref().filter(|s| s.chosen == f.name) {
            let mut chosen = f.artifact.clone();
            chosen.training["selection"] = serde_json::to_value(sel)?;
            let path = dir.join(format!("{prefix}-default.json"));
            chosen.write_json_file(&path)?;
            report.artifacts.push(path.display().to_string());
        }
    }
    Ok(())
}

/// The flags the clock-model path reads (utilization-profile data), and those only it reads.
const CLOCK_FLAGS: &[&str] = &[
    "data",
    "test",
    "no_test",
    "out_dir",
    "prefix",
    "format",
    "quiet",
    "min_core_mhz",
    "peer_params",
    "score_max_slowdown",
    "profile_format",
];
const CLOCK_ONLY_FLAGS: &[&str] = &["min_core_mhz", "peer_params", "score_max_slowdown", "profile_format"];

pub fn run(args: Args, given: &crate::cli::Given) -> anyhow::Result<ExitCode> {
    if args.clocks.profile_format.is_some() || is_profile_data(&args.data) {
        let wrong = given.outside(CLOCK_FLAGS);
        anyhow::ensure!(
            wrong.is_empty(),
            "{} is utilization-profile data (a clock model is trained from it): {} do(es) not apply; drop them \
             (the clock model reads --test, --no-test, --out-dir, --prefix, --min-core-mhz, --peer-params, \
             --score-max-slowdown, --profile-format, --format)",
            args.data,
            wrong.join(", ")
        );
        return crate::cli::utilization::train(&args);
    }
    let wrong = given.among(CLOCK_ONLY_FLAGS);
    anyhow::ensure!(
        wrong.is_empty(),
        "{} appl(ies) only to utilization-profile data (DCGM profiles over clocks); {} is power-model data: drop it",
        wrong.join(", "),
        args.data
    );
    if let Some(p) = &args.plot {
        refuse_existing(p, args.force)?;
    }
    // Stage 1: the flags alone; stage 2: the data. Nothing is fitted before both have passed.
    let checked = args.params()?.check()?;
    let out_dir = if args.install { Some(install_dir()?) } else { args.out_dir.clone() };
    let prepared = checked.prepare()?;
    if !args.quiet {
        for n in &prepared.notes {
            eprintln!("{n}");
        }
    }
    let (run, train, test) = (&prepared.run, &prepared.train, prepared.test.as_ref());
    let pb = Progress::new(run.progress_len().max(1), "train", !shows_progress(args.quiet));
    let folds = run.fold_sets(train)?;
    let folds_csv = args.folds_out.as_ref().map(|_| run.folds_csv(train, &folds)).transpose()?;
    let (mut report, fitted) = run.run(train, test, &folds, &mut |n| pb.inc(n))?;
    pb.finish();

    // Everything is computed: only now is anything written, so a failure above leaves no partial output.
    if let Some(dir) = &out_dir {
        let prefix = args.prefix.clone().unwrap_or_else(|| default_prefix(&run.train_info.name));
        write_artifacts(dir, &prefix, &fitted, &mut report)?;
    }
    if let (Some(p), Some(csv)) = (&args.folds_out, &folds_csv) {
        std::fs::write(p, csv).with_context(|| format!("writing the fold assignment {}", p.display()))?;
    }
    if let Some(p) = &args.plot {
        plot_svg(&report, p, args.force)?;
    }
    print(&report, args.format)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bar follows stderr, not stdout: `train --format json > file` on a terminal shows it.
    #[test]
    fn progress_shows_unless_quiet_whatever_stdout_is() {
        assert!(shows_progress(false));
        assert!(!shows_progress(true));
    }
}
