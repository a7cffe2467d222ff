//! `gpumodel train` — parse and check the flags, open the data, call the experiment
//! (`gpumodel_train::experiment`: every candidate model, every protocol, the default chosen by CV on the training data),
//! write the artifacts, print the one result in the format asked for.

use super::output::{ExportFormat, plot, print, progress_bar};
use anyhow::{Context, bail};
use gpumodel_models::artifact::ModelKind;
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::Opened;
use gpumodel_models::{Dataset, FeatureSet, Table, features};
use gpumodel_train::bpann::Backend;
use gpumodel_train::eval::{correlation_ranking, select_by_correlation};
use gpumodel_train::experiment::{
    CANDIDATE_HELP, CandidateName, CandidateSpec, RunParams, default_candidates, default_prefix, file_stem,
    open_dataset, physical_roles,
};
use gpumodel_train::selection::{Rule, Validation};
use gpumodel_train::{BpannParams, Solver};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Training data: a registered dataset name (see `gpumodel dataset list`) or the path of a file.
    #[arg(long, default_value = "guerreiro-titanx-micro")]
    pub data: String,
    /// Format of a file given by path: guerreiro, nvdvfs or table (guessed when unambiguous).
    #[arg(long = "import", value_name = "FORMAT")]
    pub import: Option<String>,
    /// Held-out test data (name or path). Default: the registry's test set of `--data`, if any.
    #[arg(long)]
    pub test: Option<String>,
    /// Do not evaluate on a held-out test set even when the registry names one.
    #[arg(long, conflicts_with = "test")]
    pub no_test: bool,
    /// Feature set: a built-in name (titanx-utilizations, titanx-clock-physics, titanx-physics-19,
    /// nvdvfs-rates) or a TOML path. Default: utilizations + clocks for Guerreiro files, nvdvfs-rates for NV-DVFS files.
    #[arg(long)]
    pub features: Option<String>,
    /// Candidate models, comma-separated: bpann (the paper's network, Adam), physical (Guerreiro et al.'s
    /// DVFS model), physical+bpann (the network on the physical model's residual), mlr, mlr+. Options
    /// after a network's name, in this order: `-lbfgs` (full-batch L-BFGS), `@8x8` (hidden widths), `~NAME`
    /// (its input set, a built-in feature set), `*5` (the mean of 5 networks from different initial
    /// weights), `/2` or `/4` (physical+bpann: keep half or a quarter of the residual network). Physical
    /// models are left out by themselves where the data has no clock levels. Default: the nine base
    /// candidates (bpann, bpann-lbfgs, physical, physical+bpann, physical+bpann/2, physical+bpann-lbfgs,
    /// physical+bpann-lbfgs/2, mlr, mlr+) and the seed ensembles physical+bpann-lbfgs*5 and
    /// physical+bpann-lbfgs*5/2, with --variants also width, input-set, seed-averaging and
    /// quarter-residual variants. `physical.roofline…` (e.g. `physical.roofline+bpann-lbfgs*5`) is a
    /// physical model that rescales utilizations measured at one clock pair to each row's clocks (see
    /// --roofline).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Add the roofline twins of the physical candidates (physical.roofline,
    /// physical.roofline+bpann-lbfgs*5, physical.roofline+bpann-lbfgs*5/2) to the candidate list. They
    /// rescale utilizations measured once, at the default clocks (Guerreiro files), to each clock pair by
    /// a roofline estimate of the run time, with no fitted parameter; data whose activities are measured
    /// at every clock pair (NV-DVFS) has nothing to rescale, and the flag is then an error.
    #[arg(long)]
    pub roofline: bool,
    /// Add the width, input-set, seed-averaging and quarter-residual variants to the default candidate
    /// list (22 candidates on Titan X and NV-DVFS data; see BENCHMARKS.md, issue 15, session 6).
    #[arg(long, overrides_with = "no_variants")]
    pub variants: bool,
    /// The default candidate list without those variants.
    #[arg(long, overrides_with = "variants")]
    pub no_variants: bool,
    /// Which fitted model becomes `<prefix>-default.json`: `cv` (default) chooses by cross-validation on
    /// the training data (never the test set; see --select-by and --rule); a model name fixes the choice.
    #[arg(long, default_value = "cv")]
    pub select: String,
    /// The folds `--select cv` judges by: `group` = whole kernels dealt at random (default), `cluster` =
    /// whole clusters of similar kernels (k-means on their mean activity inputs, to mimic new kinds of
    /// workload). Both have --group-folds folds. The default pair (group, 1se) had the lowest outer error
    /// in nested CV on the three registry datasets (BENCHMARKS.md, issue 15, session 5).
    #[arg(long, value_enum, default_value_t = ValidationArg::Group)]
    pub select_by: ValidationArg,
    /// How `--select cv` chooses from those figures: `1se` = the simplest model within one standard
    /// error (over folds) of the lowest MAPE, `min` = the lowest MAPE.
    #[arg(long, value_enum, default_value_t = RuleArg::OneSe)]
    pub rule: RuleArg,
    /// Cross-validate every network candidate with this many seeds (seed, seed+1000, …; same folds) and
    /// let `--select cv` compare the means: one seed's initial weights and early-stopping split move a
    /// network's CV figure by more than the margins the rule decides on. The standard error is taken
    /// over the folds' seed-averaged MAPEs. The artifacts are still the first seed's fits. Default: 3
    /// when `--select cv` chooses (chosen with the `*5` seed ensembles by nested CV, BENCHMARKS.md,
    /// issue 15, session 7), else 1. Between 1 and 20.
    #[arg(long, value_name = "K")]
    pub selection_seeds: Option<usize>,
    /// Also run leave-cluster-out CV of every candidate (whole clusters of similar kernels per fold) and
    /// report it. It always runs when it chooses (`--select-by cluster`) or gives nested CV's outer
    /// folds (`--nested cluster`).
    #[arg(long)]
    pub cluster_cv: bool,
    /// How precise the held-out figures are: draw the test set's applications with replacement this many
    /// times, recompute each model's reported figure (the median over seeds of the MAPE) on every draw,
    /// and print its 95% percentile interval and its difference to the peer's `physical` model on the
    /// same draws. Seeded by --seed. Only with a test set of two applications or more; the networks'
    /// seeds stay fixed (the interval is over applications, not over initial weights). 0 = no
    /// intervals; otherwise at least 100.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub bootstrap: usize,
    /// Where Adam's steps run: `native` (default; our exact gradient, restarts on all cores) or `burn`
    /// (burn's autodiff on its CPU backend, the general path; the same Adam step, several times slower).
    /// L-BFGS always runs natively.
    #[arg(long, value_enum, default_value_t = BackendArg::Native)]
    pub backend: BackendArg,
    /// Also score the selection procedures (chooses by group folds — and cluster folds with --cluster-cv —
    /// × rule min/1se × one seed and --selection-seeds; with candidates beyond the default list or the
    /// base nine, also those lists alone) by nested CV, with outer folds of this kind (`cluster` or `group`); the inner
    /// folds are drawn on each outer training side. Costs about --group-folds × --selection-seeds times
    /// the CV (twice that with --cluster-cv).
    #[arg(long, value_enum, value_name = "OUTER")]
    pub nested: Option<ValidationArg>,
    /// The error the physical model's βs and voltages are fitted to: `absolute` (squared watts, the
    /// peer's least squares) or `relative` (squared relative error, the quantity MAPE scores: every row
    /// weighs 1/P²). Applies to `physical` and every `physical+…` candidate.
    #[arg(long, value_enum, default_value_t = PhysicalFitArg::Absolute)]
    pub physical_fit: PhysicalFitArg,
    /// What the network of every `physical+bpann…` candidate fits: `relative` (default; the residual
    /// relative to the physical model, y/P − 1, whose squared error is the squared relative error MAPE
    /// scores; the artifact predicts P·(1 + network)) or `absolute` (the residual in watts, y − P; the
    /// artifact predicts P + network — the default until session 10). Chosen by nested CV on the
    /// training data (BENCHMARKS.md, issue 15, session 10).
    #[arg(long, value_enum)]
    pub residual: Option<PhysicalFitArg>,
    /// What the standalone networks (`bpann…`, both solvers, ensembles and variants) are fitted to:
    /// `watts` (default; power, standardized) or `log` (ln(power), standardized: its squared error is
    /// about the squared relative error MAPE scores; the artifact records it and predicts exp of the
    /// network's output, in watts). Needs a positive power on every training row. `physical+bpann…`
    /// networks are not affected (see --residual). Opt-in: judged by grouped and random CV on the three
    /// registry datasets and not adopted (BENCHMARKS.md, issue 15, session 12).
    #[arg(long, value_enum, default_value_t = TargetArg::Watts)]
    pub target: TargetArg,
    /// Whether the network of every `physical+bpann…` candidate is trusted only near its training
    /// kernels: `nearest` multiplies its output by g = min(1, (τ/d)²), d = the distance from the row's
    /// standardized activity inputs to the nearest training kernel's mean, τ = the largest distance
    /// from a training kernel to its nearest other one (no fitted parameter; each fit's own training rows only),
    /// so the artifact predicts P·(1 + g·network) (P + g·network with `--residual absolute`); `none`
    /// (default) trusts it everywhere.
    #[arg(long, value_enum)]
    pub gate: Option<GateArg>,
    /// Hidden layer widths of the BP-ANN.
    #[arg(long, value_delimiter = ',', default_value = "4,4")]
    pub hidden: Vec<usize>,
    /// Seed of the BP-ANN (weights and validation split) and of the cross-validation shuffles.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fit the held-out BP-ANN with this many seeds (seed, seed+1, …) and report the median; the
    /// artifact written is the one of the first seed.
    #[arg(long, default_value_t = 1)]
    pub seeds: usize,
    /// BP-ANN restarts; the kept one is the best on a grouped validation split of the training data.
    #[arg(long, default_value_t = 3)]
    pub restarts: usize,
    /// BP-ANN restarts inside each cross-validation fold (kept small so that CV stays affordable).
    #[arg(long, default_value_t = 1)]
    pub cv_restarts: usize,
    /// Average all BP-ANN restarts into one (wider) network instead of keeping the best one.
    #[arg(long)]
    pub ensemble: bool,
    /// Epoch budget per restart (passes over the training rows: one full-batch Adam step each, or one
    /// step per mini-batch with --batch-size).
    #[arg(long, default_value_t = 2000)]
    pub epochs: usize,
    /// Early-stopping patience, in epochs.
    #[arg(long, default_value_t = 300)]
    pub patience: usize,
    /// Adam's step: --learning-rate, --batch-size, --batch-learning-rate (boxed, so that `Command::Train`
    /// stays the size it was).
    #[command(flatten)]
    pub adam: Box<AdamArgs>,
    /// L2 penalty on the network weights (scikit-learn's alpha). One number (default 1e-4): that α for
    /// every network, used by L-BFGS only (Adam's fits do not use a fixed α). `auto` (the grid
    /// 1e-4,0.01,1) or a comma-separated list: each fit of a standalone network (`bpann…`, both solvers)
    /// chooses α from the grid inside its own training rows (see --l2-folds; in CV, inside every fold);
    /// the `physical+bpann…` networks keep the fixed α 1e-4. Opt-in: it wins no cell against
    /// scikit-learn and costs ~16× the fit (BENCHMARKS.md, issue 15, session 11).
    #[arg(long, value_name = "ALPHA|auto|A,B,…")]
    pub l2: Option<String>,
    /// With `--l2 auto` or a list: how a fit chooses α. K from 3 to 20 (default 5): inner K-fold CV of
    /// the fit's rows (whole kernels; random rows under random k-fold; at most one fold per kernel), each
    /// α fitted on K − 1 folds and scored on the K-th, then all the rows fitted with the α of the lowest
    /// pooled error (K × grid + 1 fits); data too small for inner folds (an inner training side under 20
    /// rows or 3 kernels) chooses on the validation split instead, and its record says so. 0: on the
    /// fit's validation split, every restart once per α (grid × the fits).
    #[arg(long, value_name = "K")]
    pub l2_folds: Option<usize>,
    /// Fraction of the training kernels held out for validation (early stopping, restart choice).
    #[arg(long, default_value_t = 0.2)]
    pub validation: f64,
    /// Folds of the paper's random cross-validation (0 to skip).
    #[arg(long, default_value_t = 10)]
    pub folds: usize,
    /// Folds of the grouped cross-validation, whole kernels left out (0 to skip).
    #[arg(long, default_value_t = 5)]
    pub group_folds: usize,
    /// Where to write the artifacts `<prefix>-bpann.json`, `<prefix>-mlr.json`, `<prefix>-mlrplus.json`.
    #[arg(long, default_value = "gpumodel-models")]
    pub out_dir: PathBuf,
    /// Write the artifacts into the source tree's `models/trained/` (the defaults compiled into
    /// `gpumodel predict`), found from the current directory upwards, instead of `--out-dir`.
    #[arg(long, conflicts_with = "out_dir")]
    pub install: bool,
    /// Artifact file prefix. Default: from the dataset (titanx, gtx1080ti, …) or the file name.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Do not write artifacts.
    #[arg(long)]
    pub no_write: bool,
    /// Also write the CV fold assignment (`protocol,row,kernel,fold` for random-, group- and
    /// cluster-kfold) to this CSV, so that a peer tool can run on exactly the same partitions
    /// (benches/sklearn_compare.py does).
    #[arg(long, value_name = "FILE.csv")]
    pub folds_out: Option<PathBuf>,
    /// Print the correlation of every candidate input with power (NV-DVFS: counters as rates per ms)
    /// and exit: an analysis (the built-in feature sets are fixed a priori, not chosen from it).
    #[arg(long)]
    pub explain_features: bool,
    /// Skip data rows that do not parse (each is reported) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// Also write the headline figure of the result as SVG (`gpumodel report` draws all of them).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
    #[command(flatten)]
    pub clocks: crate::cli::clocks::TrainArgs,
}

/// The Adam flags of `gpumodel train`.
#[derive(Debug, clap::Args)]
pub struct AdamArgs {
    /// Adam learning rate (full-batch fits).
    #[arg(long, default_value_t = 0.01)]
    pub learning_rate: f64,
    /// Mini-batch Adam for the standalone Adam network (`bpann`, `bpann*K`…): every epoch reshuffles the
    /// training rows (each restart's own seeded RNG) and takes one Adam step per batch of N rows (the
    /// last one smaller), as scikit-learn's MLPRegressor does with N = 200; early stopping is checked
    /// every 10 epochs on the validation split as before. 0 (default): full batch, one step per epoch.
    /// A training side of N rows or fewer is one full batch (unshuffled) at --batch-learning-rate.
    /// L-BFGS and the `physical+bpann…` networks keep full batches. Opt-in: with 0.001 and with 0.01 it
    /// fails the accuracy rule on the NV-DVFS files and does not win the GTX 980 grouped cell against
    /// scikit-learn (BENCHMARKS.md, issue 15, session 12).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub batch_size: usize,
    /// Adam learning rate of the mini-batch fits (--batch-size N > 0); default 0.001 (scikit-learn's).
    #[arg(long, value_name = "LR")]
    pub batch_learning_rate: Option<f64>,
}

/// `--select-by` / `--nested` values (one byte each: the flags struct stays small).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ValidationArg {
    Group,
    Cluster,
}

impl From<ValidationArg> for Validation {
    fn from(v: ValidationArg) -> Validation {
        match v {
            ValidationArg::Group => Validation::GroupKfold,
            ValidationArg::Cluster => Validation::ClusterKfold,
        }
    }
}

/// `--target` values: what a standalone network is fitted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetArg {
    Watts,
    Log,
}

impl From<TargetArg> for gpumodel_models::artifact::TargetTransform {
    fn from(a: TargetArg) -> Self {
        match a {
            TargetArg::Watts => gpumodel_models::artifact::TargetTransform::Identity,
            TargetArg::Log => gpumodel_models::artifact::TargetTransform::Log,
        }
    }
}

/// `--physical-fit` and `--residual` values: which error a fit minimizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PhysicalFitArg {
    Absolute,
    Relative,
}

impl From<PhysicalFitArg> for gpumodel_models::artifact::Residual {
    fn from(a: PhysicalFitArg) -> Self {
        match a {
            PhysicalFitArg::Absolute => gpumodel_models::artifact::Residual::Absolute,
            PhysicalFitArg::Relative => gpumodel_models::artifact::Residual::Relative,
        }
    }
}

impl From<PhysicalFitArg> for gpumodel_train::physical::Weighting {
    fn from(a: PhysicalFitArg) -> Self {
        match a {
            PhysicalFitArg::Absolute => gpumodel_train::physical::Weighting::Absolute,
            PhysicalFitArg::Relative => gpumodel_train::physical::Weighting::Relative,
        }
    }
}

/// `--gate` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GateArg {
    None,
    Nearest,
}

impl From<GateArg> for gpumodel_train::eval::GateForm {
    fn from(a: GateArg) -> Self {
        match a {
            GateArg::None => gpumodel_train::eval::GateForm::None,
            GateArg::Nearest => gpumodel_train::eval::GateForm::Nearest,
        }
    }
}

/// `--backend` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    Native,
    Burn,
}

impl From<BackendArg> for Backend {
    fn from(b: BackendArg) -> Backend {
        match b {
            BackendArg::Native => Backend::Native,
            BackendArg::Burn => Backend::Burn,
        }
    }
}

/// `--rule` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuleArg {
    #[value(name = "1se")]
    OneSe,
    Min,
}

impl From<RuleArg> for Rule {
    fn from(r: RuleArg) -> Rule {
        match r {
            RuleArg::OneSe => Rule::OneSe,
            RuleArg::Min => Rule::Min,
        }
    }
}

fn choose_feature_set(args: &Args, opened: &Opened) -> anyhow::Result<FeatureSet> {
    if let Some(f) = &args.features {
        let p = Path::new(f);
        if p.exists() {
            return Ok(FeatureSet::from_toml_file(p)?);
        }
        return Ok(features::builtin(f)?);
    }
    match opened.format {
        Format::Guerreiro => Ok(features::guerreiro_default(&opened.imported.table)?),
        Format::Nvdvfs => Ok(features::builtin("nvdvfs-rates")?),
        Format::Table => bail!(
            "{}: a plain table has no default feature set: pass --features NAME|FILE.toml (built-ins: {})",
            opened.path.display(),
            features::BUILTIN.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn dataset(table: &mut Table, fs: &FeatureSet) -> anyhow::Result<Dataset> {
    features::derive_columns(table, &fs.inputs)?;
    Ok(Dataset::from_table(table, fs)?)
}

/// Redundancy threshold of the input choice: a candidate whose |r| with an already chosen input exceeds
/// this is a near-duplicate counter and is skipped.
const REDUNDANCY: f64 = 0.95;

/// Every candidate input with its Pearson r against the target (by |r|), and the ten counters chosen.
type Explained = (Vec<(String, f64)>, Vec<String>);

fn explain(table: &Table, target: &str) -> anyhow::Result<Explained> {
    // Candidates: every numeric column except the target, the clocks' defaults and bookkeeping columns;
    // with a kernel time, counters become rates per ms (the paper normalizes counters to rates).
    let skip = |c: &str| {
        c == target
            || c.starts_with("default_")
            || ["source_index", "time_ms", "time_s", "warps"].contains(&c)
            || c.starts_with("grid_")
            || c.starts_with("block_")
            || c.contains("throughput")
            || c.contains("per_request")
            || c.contains("rate")
            || c.contains("efficiency")
            || c.contains("occupancy")
            || c.contains("ipc")
            || c.contains("per_warp")
            || c.contains("activity")
            || c.contains("per_cycle")
    };
    let has_time = table.column_index("time_ms").is_some();
    let inputs: Vec<String> = table
        .columns
        .iter()
        .filter(|c| !skip(c))
        .map(|c| if has_time && !c.ends_with("_mhz") { format!("{c}/time_ms") } else { c.clone() })
        .collect();
    let fs = FeatureSet {
        name: "candidates".into(),
        inputs,
        target: target.into(),
        group: gpumodel_models::table::GROUP_COLUMN.into(),
        mlr_base: Vec::new(),
    };
    let mut t = table.clone();
    let ds = dataset(&mut t, &fs)?;
    let counters = ds.select_features(
        &ds.feature_names.iter().filter(|n| !n.ends_with("_mhz")).cloned().collect::<Vec<_>>(),
    )?;
    Ok((correlation_ranking(&ds), select_by_correlation(&counters, 10, REDUNDANCY)))
}

/// `--explain-features`: the correlation analysis of every candidate input (an analysis only: the
/// built-in feature sets are fixed a priori, not chosen from it).
#[derive(Debug, serde::Serialize)]
struct Explanation {
    target: String,
    data: String,
    ranking: Vec<Ranked>,
    /// The ten counters the ranking would pick (highest |r|, near-duplicates skipped).
    chosen_counters: Vec<String>,
    redundancy_threshold: f64,
    feature_set: String,
    feature_set_inputs: Vec<String>,
}

#[derive(Debug, serde::Serialize)]
struct Ranked {
    input: String,
    pearson_r: f64,
}

impl gpumodel_models::export::Export for Explanation {
    const COMMAND: &'static str = "train --explain-features";
    fn preamble(&self) -> Vec<String> {
        vec![format!(
            "Correlation with {} on {}. 'top ten' marks the 10 counters with the highest |r|, skipping any with \
             |r| > {REDUNDANCY} to an already marked one — an analysis: the feature set's inputs are fixed a priori.",
            self.target, self.data
        )]
    }
    fn sections(&self) -> Vec<gpumodel_models::export::Section> {
        use gpumodel_models::export::{Cell, Column, Section};
        let mut s = Section::new(vec![
            Column::new("rank", "rank"),
            Column::new("input", "input"),
            Column::new("pearson_r", "pearson r"),
            Column::new("top_ten", "top ten"),
            Column::new("in_feature_set", "in feature set"),
        ]);
        for (i, r) in self.ranking.iter().enumerate() {
            let top = self.chosen_counters.iter().position(|c| *c == r.input);
            s.push(vec![
                Cell::int(i as i64 + 1),
                Cell::text(&r.input),
                Cell::num(r.pearson_r, 3),
                top.map_or(Cell::Empty, |k| Cell::text(format!("#{}", k + 1))),
                Cell::text(if self.feature_set_inputs.contains(&r.input) { "yes" } else { "" }),
            ]);
        }
        vec![s]
    }
    fn notes(&self) -> Vec<String> {
        vec![format!("feature set '{}': {}", self.feature_set, self.feature_set_inputs.join(", "))]
    }
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

/// `--roofline`: the roofline twins of the physical candidates, after the list (each once).
fn add_roofline_twins(names: &mut Vec<String>) {
    for t in gpumodel_train::experiment::ROOFLINE_TWINS {
        if !names.iter().any(|n| n == t) {
            names.push(t.to_string());
        }
    }
}

/// `--l2` when not given: the fixed α of scikit-learn's default. The α chosen inside each fit (`auto`)
/// met session 8's acceptance rule but was not adopted: it wins no cell against scikit-learn, loses the
/// Titan X grouped cell for Adam and makes a fit ~16× dearer (BENCHMARKS.md, issue 15, session 11).
const DEFAULT_L2: &str = "1e-4";
/// `--l2-folds` when not given with a grid: α chosen by inner 5-fold CV.
const DEFAULT_L2_FOLDS: usize = 5;

/// `--l2`: one number (the fixed α), or `auto` / a comma-separated list (α chosen inside each fit from
/// that grid; the fixed α, which the `physical+bpann…` networks keep, is then the default 1e-4).
fn parse_l2(v: &str) -> anyhow::Result<(f64, Option<Vec<f64>>)> {
    let default = BpannParams::default().l2;
    let v = v.trim();
    if v == "auto" {
        return Ok((default, Some(gpumodel_train::bpann::L2_AUTO_GRID.to_vec())));
    }
    let number = |t: &str| t.trim().parse::<f64>().ok().filter(|a| a.is_finite());
    let bad = || {
        anyhow::anyhow!(
            "--l2 {v}: give one number (e.g. 1e-4), `auto` (α chosen from 1e-4,0.01,1 inside each fit) or a comma-separated list of numbers (e.g. 1e-4,0.01,1)"
        )
    };
    if v.contains(',') {
        let grid = v.split(',').map(|t| number(t).ok_or_else(bad)).collect::<anyhow::Result<Vec<f64>>>()?;
        return Ok((default, Some(grid)));
    }
    Ok((number(v).ok_or_else(bad)?, None))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if crate::cli::clocks::is_profile_data(&args.data) {
        return crate::cli::clocks::train(&args);
    }
    // Stage 1: flags only.
    let models_given = !args.models.is_empty();
    let mut names: Vec<String> = if models_given {
        args.models.iter().map(|m| m.trim().to_string()).filter(|m| !m.is_empty()).collect()
    } else {
        // The variants depend on the feature set (its input-set alternative): filled in once it is known.
        Vec::new()
    };
    if models_given && names.is_empty() {
        bail!("--models is empty: name at least one of {CANDIDATE_HELP}");
    }
    for n in names.iter_mut() {
        *n = CandidateName::parse(n)?.canonical();
    }
    if models_given && args.roofline {
        add_roofline_twins(&mut names);
    }
    let fixed = match args.select.as_str() {
        "cv" => None,
        m => {
            let m = CandidateName::parse(m)
                .map_err(|_| anyhow::anyhow!("--select {m}: use cv or one of {CANDIDATE_HELP}"))?
                .canonical();
            if models_given && !names.contains(&m) {
                bail!("--select {m}: that model is not in --models; add it there");
            }
            Some(m)
        }
    };
    let select_by = Validation::from(args.select_by);
    let rule = Rule::from(args.rule);
    let nested = args.nested.map(Validation::from);
    let import = args.import.as_deref().map(Format::from_name).transpose()?;
    let bad = if args.skip_bad_rows { BadRows::Skip } else { BadRows::Fail };
    if let (Some(lr), 0) = (args.adam.batch_learning_rate, args.adam.batch_size) {
        bail!(
            "--batch-learning-rate {lr} is the step size of mini-batch fits: give --batch-size N too (e.g. 200)"
        );
    }
    let (l2_fixed, l2_grid) = parse_l2(args.l2.as_deref().unwrap_or(DEFAULT_L2))?;
    let l2_folds = match (args.l2_folds, &l2_grid) {
        (Some(k), _) => k,
        (None, Some(_)) => DEFAULT_L2_FOLDS,
        (None, None) => 0,
    };
    let bp = BpannParams {
        hidden: args.hidden.clone(),
        seed: args.seed,
        restarts: args.restarts,
        max_epochs: args.epochs,
        patience: args.patience,
        learning_rate: args.adam.learning_rate,
        batch_size: args.adam.batch_size,
        batch_learning_rate: args
            .adam
            .batch_learning_rate
            .unwrap_or(BpannParams::default().batch_learning_rate),
        l2: l2_fixed,
        l2_grid: l2_grid.clone(),
        l2_folds,
        validation_fraction: args.validation,
        ensemble: args.ensemble,
        solver: Solver::Adam,
        backend: args.backend.into(),
        target: args.target.into(),
        ..BpannParams::default()
    }
    .check()?;
    if args.seeds == 0 || args.seeds > 100 {
        bail!("--seeds {} must be between 1 and 100", args.seeds);
    }
    if args.folds == 1 || args.group_folds == 1 {
        bail!("--folds and --group-folds must be 0 (skip) or at least 2");
    }
    if (1..100).contains(&args.bootstrap) || args.bootstrap > 1_000_000 {
        bail!("--bootstrap {}: give 0 (no intervals) or between 100 and 1000000 resamples", args.bootstrap);
    }
    if args.cv_restarts == 0 || args.cv_restarts > 100 {
        bail!("--cv-restarts {} must be between 1 and 100", args.cv_restarts);
    }
    let chooses_by_cv = args.group_folds > 0 && fixed.is_none();
    let selection_seeds = match args.selection_seeds {
        Some(k) if k == 0 || k > 20 => bail!("--selection-seeds {k} must be between 1 and 20"),
        Some(k) if k > 1 && !chooses_by_cv => bail!(
            "--selection-seeds averages the CV figures --select cv chooses by: keep --group-folds ≥ 2 and --select cv"
        ),
        Some(k) => k,
        None if chooses_by_cv => gpumodel_train::experiment::DEFAULT_SELECTION_SEEDS,
        None => 1,
    };

    // Stage 2: data.
    let (mut train_opened, train_info) = open_dataset(&args.data, import, bad)?;
    let fs = choose_feature_set(&args, &train_opened)?;
    if !models_given {
        let variants = if args.variants {
            true
        } else if args.no_variants {
            false
        } else {
            gpumodel_train::experiment::VARIANTS_BY_DEFAULT
        };
        names = default_candidates(&fs.name, variants);
        if args.roofline {
            add_roofline_twins(&mut names);
        }
        if let Some(m) = &fixed
            && !names.contains(m)
        {
            bail!("--select {m}: that model is not in the default list; name it in --models too");
        }
    }
    if args.explain_features {
        let (ranking, chosen) = explain(&train_opened.imported.table, &fs.target)?;
        let e = Explanation {
            target: fs.target.clone(),
            data: format!("{} ({} rows)", train_info.name, train_info.rows),
            ranking: ranking.into_iter().map(|(input, pearson_r)| Ranked { input, pearson_r }).collect(),
            chosen_counters: chosen,
            redundancy_threshold: REDUNDANCY,
            feature_set: fs.name.clone(),
            feature_set_inputs: fs.inputs.clone(),
        };
        print(&e, args.format)?;
        return Ok(ExitCode::SUCCESS);
    }
    let is_physical = |n: &String| n.starts_with("physical");
    let mut physical_not_applicable = None;
    let mut phys = if names.iter().any(is_physical) {
        match physical_roles(&train_opened.imported.table, train_opened.format, &fs.name, &fs.inputs) {
            Ok(p) => p.check()?,
            Err(why) if !models_given => {
                // The default model list adapts to the data; an explicit request is an error.
                names.retain(|n| !is_physical(n));
                physical_not_applicable = Some(why);
                gpumodel_train::PhysicalParams::default()
            }
            Err(why) => bail!(
                "--models physical: {why}; the physical DVFS model needs core_mhz and mem_mhz at several core clock levels and activity columns — leave physical out of --models"
            ),
        }
    } else {
        gpumodel_train::PhysicalParams::default()
    };
    if args.physical_fit != PhysicalFitArg::Absolute && !names.iter().any(is_physical) {
        // A fit option that would change nothing must not look as if it had been applied.
        bail!(
            "--physical-fit applies only to the physical model, and no candidate is `physical` or `physical+…`{}: add one to --models or drop --physical-fit",
            physical_not_applicable.as_deref().map(|w| format!(" ({w})")).unwrap_or_default()
        );
    }
    phys.weighting = args.physical_fit.into();
    if let Some(m) = &fixed
        && !names.contains(m)
    {
        bail!("--select {m}: {}", physical_not_applicable.as_deref().unwrap_or("not fitted"));
    }
    if args.roofline && phys.utilization_clocks.is_none() {
        bail!(
            "--roofline rescales utilizations measured once, at one clock pair (a Guerreiro file's default clocks); {}: drop --roofline",
            physical_not_applicable
                .as_deref()
                .unwrap_or("this data's activities are measured at every clock pair already")
        );
    }
    let mut candidates =
        names.iter().map(|n| CandidateSpec::new(n, &fs, &bp, &phys)).collect::<Result<Vec<_>, _>>()?;
    if args.target == TargetArg::Log && !candidates.iter().any(|c| c.spec.kind == ModelKind::Bpann) {
        // A fit option that would change nothing must not look as if it had been applied.
        bail!(
            "--target log applies to the standalone networks (`bpann…`), and no candidate is one: add one to --models (e.g. bpann-lbfgs) or drop --target"
        );
    }
    let residual_nets: Vec<&mut CandidateSpec> =
        candidates.iter_mut().filter(|c| c.spec.kind == ModelKind::PhysicalBpann).collect();
    for (flag, given) in [("--residual", args.residual.is_some()), ("--gate", args.gate.is_some())] {
        if given && residual_nets.is_empty() {
            // A fit option that would change nothing must not look as if it had been applied.
            bail!(
                "{flag} applies to the network of `physical+bpann…` candidates, and there is none{}: add one to --models or drop {flag}",
                physical_not_applicable.as_deref().map(|w| format!(" ({w})")).unwrap_or_default()
            );
        }
    }
    let residual = args.residual.map_or(gpumodel_train::experiment::DEFAULT_RESIDUAL, Into::into);
    let gate = args.gate.map_or(gpumodel_train::experiment::DEFAULT_GATE, Into::into);
    for c in residual_nets {
        c.spec.residual = residual;
        c.spec.gate = gate;
    }
    // The dataset holds the feature set's inputs and every candidate's (a physical model's activity
    // inputs, a variant's own input set).
    let mut data_fs = fs.clone();
    for i in candidates.iter().flat_map(|c| c.spec.inputs.iter()) {
        if !data_fs.inputs.contains(i) {
            data_fs.inputs.push(i.clone());
        }
    }
    let train = dataset(&mut train_opened.imported.table, &data_fs)
        .with_context(|| format!("training data {}", train_info.name))?;
    if args.target == TargetArg::Log {
        gpumodel_train::check_log_target(&train)
            .with_context(|| format!("training data {}", train_info.name))?;
    }
    // A constant feature-set input carries no information; catch it before any work. (The physical
    // model's own activity inputs may be constant: its non-negative fit then gives them β = 0.)
    if let Some((name, v)) = train.select_features(&fs.inputs)?.constant_inputs().into_iter().next() {
        bail!(
            "training data {}: input '{name}' is {v} on every row, so it carries no information: remove it from the feature set (--features FILE.toml)",
            train_info.name
        );
    }
    let test_spec = if args.no_test {
        None
    } else {
        args.test.clone().or_else(|| train_opened.entry.as_ref().and_then(|e| e.test_set.clone()))
    };
    let (test, test_info) = match &test_spec {
        Some(spec) => {
            let (mut o, info) = open_dataset(spec, import.filter(|_| args.test.is_some()), bad)?;
            let ds = dataset(&mut o.imported.table, &data_fs)
                .with_context(|| format!("test data {}", info.name))?;
            (Some(ds), Some(info))
        }
        None => (None, None),
    };
    let prefix = args.prefix.clone().unwrap_or_else(|| default_prefix(&train_info.name));
    let out_dir = if args.install { install_dir()? } else { args.out_dir.clone() };
    // The command as typed, with the program reduced to its name (no path of this machine).
    let command: Vec<String> = std::env::args()
        .enumerate()
        .map(|(i, a)| match Path::new(&a) {
            _ if i == 0 => "gpumodel".to_string(),
            p if p.is_absolute() => p.file_name().map_or(a.clone(), |f| f.to_string_lossy().into_owned()),
            _ => a,
        })
        .collect();
    // Kernels are clustered by what they do (the activity inputs: the MLR base, which holds no clock term),
    // not by the clocks they ran at. A name test (`*_mhz`) would also drop clock-scaled activities such as
    // `SP*core_mhz`.
    let cluster_inputs: Vec<String> = if fs.mlr_base.is_empty() {
        fs.inputs.iter().filter(|i| !matches!(i.as_str(), "core_mhz" | "mem_mhz")).cloned().collect()
    } else {
        fs.mlr_base.clone()
    };
    if let Some(l2) = args.l2.as_deref().filter(|_| l2_grid.is_some())
        && !candidates.iter().any(|c| c.spec.kind == ModelKind::Bpann)
    {
        // A fit option that would change nothing must not look as if it had been applied.
        bail!(
            "--l2 {l2}: α is chosen inside the fits of the standalone networks (bpann…), and no candidate is one: add bpann or bpann-lbfgs to --models or give one --l2 value"
        );
    }
    if args.adam.batch_size > 0 && !candidates.iter().any(|c| c.spec.bpann.batch_size > 0) {
        // As for --l2: a fit option that would change nothing must not look as if it had been applied.
        bail!(
            "--batch-size {}: mini-batches are for the standalone Adam networks (bpann…), and no candidate is one: add bpann to --models or drop --batch-size",
            args.adam.batch_size
        );
    }
    let params = RunParams {
        select_by,
        rule,
        nested,
        cluster_inputs,
        selection_seeds,
        cluster_cv: args.cluster_cv,
        bootstrap: args.bootstrap,
        candidates,
        fixed,
        seed: args.seed,
        seeds: args.seeds,
        folds: args.folds,
        group_folds: args.group_folds,
        cv_restarts: args.cv_restarts,
        command: command.join(" "),
        feature_set: fs,
        train_info,
        test_info,
        physical_not_applicable,
    };

    // Stage 3: work. The shared factory hides the bar when stderr is not a terminal; training also stays
    // quiet when stdout is redirected (a script reading the table or the JSON).
    let pb = if std::io::stdout().is_terminal() {
        progress_bar(params.progress_len().max(1), "training")
    } else {
        indicatif::ProgressBar::hidden()
    };
    let folds = params.fold_sets(&train)?;
    let folds_csv = args.folds_out.as_ref().map(|_| params.folds_csv(&train, &folds)).transpose()?;
    let (mut report, fitted) = params.run(&train, test.as_ref(), &folds, &mut |n| pb.inc(n))?;
    pb.finish_and_clear();

    // Everything is computed: only now is anything written, so a failure above leaves no partial output.
    if !args.no_write {
        std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("creating the output folder {}", out_dir.display()))?;
        for f in &fitted {
            let path = out_dir.join(format!("{prefix}-{}.json", file_stem(&f.name)));
            f.artifact.write_json_file(&path)?;
            report.artifacts.push(path.display().to_string());
            if let Some(sel) = report.selection.as_ref().filter(|s| s.chosen == f.name) {
                let mut chosen = f.artifact.clone();
                chosen.training["selection"] = serde_json::to_value(sel)?;
                let path = out_dir.join(format!("{prefix}-default.json"));
                chosen.write_json_file(&path)?;
                report.artifacts.push(path.display().to_string());
            }
        }
    }
    if let (Some(p), Some(csv)) = (&args.folds_out, &folds_csv) {
        std::fs::write(p, csv).with_context(|| format!("writing the fold assignment {}", p.display()))?;
    }
    if let Some(p) = &args.plot {
        plot(&report, p)?;
    }
    print(&report, args.format)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// Bad mini-batch flags fail with one line that names the flag, before any data is read or any
    /// artifact written.
    #[test]
    fn bad_mini_batch_flags_fail_in_one_line_and_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let out_s = out.to_string_lossy().into_owned();
        for (flags, says) in [
            (vec!["--batch-learning-rate", "0.01"], "give --batch-size N too"),
            (
                vec!["--batch-size", "200", "--batch-learning-rate", "0"],
                "--batch-learning-rate 0 must be in (0, 10)",
            ),
            (
                vec!["--batch-size", "200", "--batch-learning-rate", "12"],
                "--batch-learning-rate 12 must be in (0, 10)",
            ),
        ] {
            let argv =
                ["train", "--data", "no-such-dataset", "--out-dir", &out_s].into_iter().chain(flags.clone());
            let cli = Cli::try_parse_from(argv).unwrap();
            let err = run(cli.args).unwrap_err().to_string();
            assert!(err.contains(says), "{flags:?}: {err}");
            assert!(!err.contains('\n'), "{flags:?}: one line: {err}");
            assert!(!out.exists(), "{flags:?}: nothing written");
        }
        // A negative or non-numeric size is refused by the parser.
        for bad in ["-3", "abc", "1.5"] {
            assert!(Cli::try_parse_from(["train", "--batch-size", bad]).is_err(), "{bad}");
        }
    }
}
