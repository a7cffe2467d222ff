//! `gpumodel train` — fit the BP-ANN power model and the MLR / MLR+ baselines, evaluate them with the
//! paper's random k-fold, grouped k-fold and a held-out test set, write the artifacts, print one table.

use super::output::{OutputFormat, progress_bar, render_table};
use anyhow::{Context, bail};
use gpumodel_models::artifact::{ModelArtifact, ModelKind};
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::{self, Locator, Opened};
use gpumodel_models::stats::median;
use gpumodel_models::{Dataset, FeatureSet, Table, features};
use gpumodel_train::eval::{ModelSpec, correlation_ranking, cross_validate, evaluate, select_by_correlation};
use gpumodel_train::experiment::{Candidate, Selection, physical_roles, select_default};
use gpumodel_train::{BpannParams, Metrics};
use serde::Serialize;
use std::collections::BTreeMap;
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
    /// Models to fit, comma-separated: bpann (the paper's network), physical (Guerreiro et al.'s DVFS
    /// model), physical+bpann (the network on the physical model's residual), mlr, mlr+.
    /// `physical` and `physical+bpann` are left out by themselves where the data has no clock levels.
    #[arg(long, value_delimiter = ',', default_value = "bpann,physical,physical+bpann,mlr,mlr+")]
    pub models: Vec<String>,
    /// Which fitted model becomes `<prefix>-default.json`: `cv` (default) takes the lowest grouped-CV
    /// MAPE on the training data (never the test set); a model name fixes the choice.
    #[arg(long, default_value = "cv")]
    pub select: String,
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
    /// Epoch budget per restart (full-batch Adam steps).
    #[arg(long, default_value_t = 2000)]
    pub epochs: usize,
    /// Early-stopping patience, in epochs.
    #[arg(long, default_value_t = 300)]
    pub patience: usize,
    /// Adam learning rate.
    #[arg(long, default_value_t = 0.01)]
    pub learning_rate: f64,
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
    /// Write the artifacts into the project's `models/trained/` (the defaults compiled into
    /// `gpumodel predict`) instead of `--out-dir`.
    #[arg(long, conflicts_with = "out_dir")]
    pub install: bool,
    /// Artifact file prefix. Default: from the dataset (titanx, gtx1080ti, …) or the file name.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Do not write artifacts.
    #[arg(long)]
    pub no_write: bool,
    /// Print the correlation of every candidate input with power (NV-DVFS: counters as rates per ms)
    /// and exit: the analysis the input choice is made from.
    #[arg(long)]
    pub explain_features: bool,
    /// Skip data rows that do not parse (each is reported) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

/// Everything one run computed: one result document for every output format.
#[derive(Debug, Serialize)]
struct Report {
    data: DataInfo,
    test: Option<DataInfo>,
    feature_set: FeatureSet,
    headline: &'static str,
    models: BTreeMap<String, ModelReport>,
    /// Which model became the default and the grouped-CV figures that chose it.
    #[serde(skip_serializing_if = "Option::is_none")]
    selection: Option<Selection>,
    /// Why the physical models were left out, when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    physical_not_applicable: Option<String>,
    artifacts: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
struct DataInfo {
    /// Registry name, or the file name of a file given by path.
    name: String,
    /// File name only: artifacts never carry a path of the machine that trained them.
    file: String,
    sha256: String,
    rows: usize,
    kernels: usize,
}

#[derive(Debug, Serialize, Default)]
struct ModelReport {
    inputs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none", rename = "random-kfold")]
    random_kfold: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none", rename = "group-kfold")]
    group_kfold: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none", rename = "held-out")]
    held_out: Option<Metrics>,
    /// Held-out metrics per seed, and their median (BP-ANN with `--seeds` > 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    held_out_per_seed: Vec<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    held_out_median: Option<Median>,
    #[serde(skip_serializing_if = "Option::is_none")]
    training_fit: Option<Metrics>,
    /// Wall time of the (first-seed) fit on the whole training set, s.
    fit_seconds: f64,
    /// Batched inference throughput of the artifact (plain-Rust forward pass), rows/s.
    predict_rows_per_s: f64,
}

#[derive(Debug, Clone, Serialize)]
struct Median {
    seeds: usize,
    mape_pct: f64,
    rmse_w: f64,
    kernel_error_pct: f64,
}

fn parse_kind(s: &str) -> anyhow::Result<ModelKind> {
    match s.trim() {
        "bpann" => Ok(ModelKind::Bpann),
        "mlr" => Ok(ModelKind::Mlr),
        "mlr+" | "mlrplus" => Ok(ModelKind::MlrPlus),
        "physical" => Ok(ModelKind::Physical),
        "physical+bpann" | "physical-bpann" => Ok(ModelKind::PhysicalBpann),
        other => bail!("unknown model '{other}': use bpann, physical, physical+bpann, mlr, mlr+"),
    }
}

fn file_stem(kind: ModelKind) -> &'static str {
    match kind {
        ModelKind::Bpann => "bpann",
        ModelKind::Mlr => "mlr",
        ModelKind::MlrPlus => "mlrplus",
        ModelKind::Physical => "physical",
        ModelKind::PhysicalBpann => "physical-bpann",
    }
}

fn open(spec: &str, import: Option<Format>, bad: BadRows) -> anyhow::Result<(Opened, DataInfo)> {
    let loc = Locator::from_env();
    let opened = registry::open(spec, import, bad, &loc)?;
    for e in &opened.imported.skipped {
        eprintln!("warning: skipped a bad row: {e}");
    }
    let bytes = std::fs::read(&opened.path).with_context(|| format!("reading {}", opened.path.display()))?;
    let t = &opened.imported.table;
    let info = DataInfo {
        name: opened.entry.as_ref().map_or_else(
            || opened.path.file_name().map_or_else(|| spec.to_string(), |f| f.to_string_lossy().into_owned()),
            |e| e.name.clone(),
        ),
        file: opened.path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
        sha256: registry::sha256_hex(&bytes),
        rows: t.n_rows(),
        kernels: t.distinct_groups().len(),
    };
    Ok((opened, info))
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

fn fmt(x: f64) -> String {
    format!("{x:.2}")
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Stage 1: flags only.
    let mut kinds = args.models.iter().map(|m| parse_kind(m)).collect::<anyhow::Result<Vec<_>>>()?;
    if kinds.is_empty() {
        bail!("--models is empty: name at least one of bpann, physical, physical+bpann, mlr, mlr+");
    }
    let models_given = args.models.join(",") != "bpann,physical,physical+bpann,mlr,mlr+";
    let fixed = match args.select.as_str() {
        "cv" => None,
        m => {
            let k = parse_kind(m).map_err(|_| {
                anyhow::anyhow!("--select {m}: use cv or one of bpann, physical, physical+bpann, mlr, mlr+")
            })?;
            if !kinds.contains(&k) {
                bail!("--select {m}: that model is not in --models; add it there");
            }
            Some(k)
        }
    };
    let import = args.import.as_deref().map(Format::from_name).transpose()?;
    let bad = if args.skip_bad_rows { BadRows::Skip } else { BadRows::Fail };
    let bp = BpannParams {
        hidden: args.hidden.clone(),
        seed: args.seed,
        restarts: args.restarts,
        max_epochs: args.epochs,
        patience: args.patience,
        learning_rate: args.learning_rate,
        validation_fraction: args.validation,
        ensemble: args.ensemble,
        ..BpannParams::default()
    }
    .check()?;
    if args.seeds == 0 || args.seeds > 100 {
        bail!("--seeds {} must be between 1 and 100", args.seeds);
    }
    if args.folds == 1 || args.group_folds == 1 {
        bail!("--folds and --group-folds must be 0 (skip) or at least 2");
    }

    // Stage 2: data.
    let (mut train_opened, train_info) = open(&args.data, import, bad)?;
    let fs = choose_feature_set(&args, &train_opened)?;
    if args.explain_features {
        let (ranking, chosen) = explain(&train_opened.imported.table, &fs.target)?;
        let mark = |n: &str| {
            if let Some(k) = chosen.iter().position(|c| c == n) {
                format!("#{}", k + 1)
            } else if fs.inputs.iter().any(|i| i == n) {
                "in feature set".into()
            } else {
                String::new()
            }
        };
        if args.format == OutputFormat::Json {
            let v = serde_json::json!({
                "target": fs.target,
                "ranking": ranking.iter().map(|(n, r)| serde_json::json!({"input": n, "pearson_r": r})).collect::<Vec<_>>(),
                "chosen_counters": chosen,
                "redundancy_threshold": REDUNDANCY,
                "feature_set": fs.name,
                "feature_set_inputs": fs.inputs,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            let rows: Vec<Vec<String>> = ranking
                .iter()
                .enumerate()
                .map(|(i, (n, r))| vec![(i + 1).to_string(), n.clone(), format!("{r:+.3}"), mark(n)])
                .collect();
            println!(
                "Correlation with {} on {} ({} rows). Chosen: the 10 counters with the highest |r|, skipping any \
                 with |r| > {REDUNDANCY} to an already chosen one; the clocks are always inputs.",
                fs.target, train_info.name, train_info.rows
            );
            print!("{}", render_table(&["rank", "input", "pearson r", "chosen"], &rows));
            println!("feature set '{}': {}", fs.name, fs.inputs.join(", "));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let wants_physical = kinds.iter().any(|k| matches!(k, ModelKind::Physical | ModelKind::PhysicalBpann));
    let mut physical_not_applicable = None;
    let phys = if wants_physical {
        match physical_roles(&train_opened.imported.table, train_opened.format, &fs.name, &fs.inputs) {
            Ok(p) => p.check()?,
            Err(why) if !models_given => {
                // The default model list adapts to the data; an explicit request is an error.
                kinds.retain(|k| !matches!(k, ModelKind::Physical | ModelKind::PhysicalBpann));
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
    if let Some(k) = fixed
        && !kinds.contains(&k)
    {
        bail!("--select {}: {}", k.name(), physical_not_applicable.as_deref().unwrap_or("not fitted"));
    }
    // The dataset holds the feature set's inputs and, when a physical model is fitted, its inputs too.
    let mut data_fs = fs.clone();
    if kinds.iter().any(|k| matches!(k, ModelKind::Physical | ModelKind::PhysicalBpann)) {
        for i in phys.inputs() {
            if !data_fs.inputs.contains(&i) {
                data_fs.inputs.push(i);
            }
        }
    }
    let train = dataset(&mut train_opened.imported.table, &data_fs)
        .with_context(|| format!("training data {}", train_info.name))?;
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
            let (mut o, info) = open(spec, import.filter(|_| args.test.is_some()), bad)?;
            let ds = dataset(&mut o.imported.table, &data_fs)
                .with_context(|| format!("test data {}", info.name))?;
            (Some(ds), Some(info))
        }
        None => (None, None),
    };
    let prefix = args.prefix.clone().unwrap_or_else(|| default_prefix(&train_info.name));
    let out_dir = if args.install {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/trained")
    } else {
        args.out_dir.clone()
    };

    // Stage 3: work.
    let specs: Vec<ModelSpec> =
        kinds.iter().map(|&k| ModelSpec::for_feature_set(k, &fs, &bp, &phys)).collect();
    let cv_spec = |s: &ModelSpec| {
        let mut s = s.clone();
        s.bpann.restarts = args.cv_restarts.max(1);
        s
    };
    let n_cv = (args.folds + args.group_folds) as u64;
    let total: u64 =
        specs.iter().map(|s| s.progress_len() * args.seeds as u64 + cv_spec(s).progress_len() * n_cv).sum();
    // The shared factory hides the bar when stderr is not a terminal; training also stays quiet when
    // stdout is redirected (a script reading the table or the JSON).
    let pb = if std::io::stdout().is_terminal() {
        progress_bar(total.max(1), "training")
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut tick = |n: u64| pb.inc(n);
    let random_folds = if args.folds > 0 { Some(train.kfold(args.folds, args.seed)?) } else { None };
    let group_folds =
        if args.group_folds > 0 { Some(train.group_kfold(args.group_folds, args.seed)?) } else { None };

    let mut models = BTreeMap::new();
    let mut artifacts = Vec::new();
    let mut fitted_models: Vec<(ModelKind, ModelArtifact)> = Vec::new();
    // The command as typed, with the program reduced to its name (no path of this machine).
    let command: Vec<String> = std::env::args()
        .enumerate()
        .map(|(i, a)| match Path::new(&a) {
            _ if i == 0 => "gpumodel".to_string(),
            p if p.is_absolute() => p.file_name().map_or(a.clone(), |f| f.to_string_lossy().into_owned()),
            _ => a,
        })
        .collect();
    for spec in &specs {
        let mut rep = ModelReport { inputs: spec.inputs.clone(), ..Default::default() };
        pb.set_message(spec.kind.name().to_string());
        let mut fitted: Option<ModelArtifact> = None;
        let n_seeds =
            if matches!(spec.kind, ModelKind::Bpann | ModelKind::PhysicalBpann) { args.seeds } else { 1 };
        for k in 0..n_seeds {
            let mut s = spec.clone();
            s.bpann.seed = args.seed.wrapping_add(1000 * k as u64);
            let started = std::time::Instant::now();
            let m = s.fit(&train, &mut tick)?;
            if k == 0 {
                rep.fit_seconds = started.elapsed().as_secs_f64();
            }
            if let Some(t) = &test {
                let metrics = evaluate(&m, t)?;
                if n_seeds > 1 {
                    rep.held_out_per_seed.push(metrics.clone());
                }
                if k == 0 {
                    rep.held_out = Some(metrics);
                }
            }
            if k == 0 {
                fitted = Some(m);
            }
        }
        let mut model = fitted.context("no model was fitted")?;
        rep.predict_rows_per_s = throughput(&model, test.as_ref().unwrap_or(&train))?;
        rep.training_fit = Some(evaluate(&model, &train)?);
        if !rep.held_out_per_seed.is_empty() {
            let hs = &rep.held_out_per_seed;
            rep.held_out_median = Some(Median {
                seeds: hs.len(),
                mape_pct: median(hs.iter().map(|m| m.mape_pct).collect()),
                rmse_w: median(hs.iter().map(|m| m.rmse_w).collect()),
                kernel_error_pct: median(hs.iter().map(|m| m.kernel_error_pct).collect()),
            });
        }
        if let Some(f) = &random_folds {
            rep.random_kfold = Some(cross_validate(&cv_spec(spec), &train, f, &mut tick)?);
        }
        if let Some(f) = &group_folds {
            rep.group_kfold = Some(cross_validate(&cv_spec(spec), &train, f, &mut tick)?);
        }
        model.training = serde_json::json!({
            "command": command.join(" "),
            "gpumodel_version": env!("CARGO_PKG_VERSION"),
            "dataset": train_info,
            "test_dataset": test_info,
            "feature_set": fs.name,
            "seed": args.seed,
            "physical": matches!(spec.kind, ModelKind::Physical | ModelKind::PhysicalBpann).then(|| serde_json::json!({
                "form": "Guerreiro et al. TPDS'19: P = b0*Vc + Vc^2*fc*(bc + sum bi*Ui) + b1*Vm + Vm^2*fm*(bm + sum bj*Uj)",
                "fit": "alternating non-negative least squares (betas) and neighbour-bounded 1-D least squares (one voltage per clock level), until the error stops falling",
                "core_inputs": spec.physical.core_inputs, "mem_inputs": spec.physical.mem_inputs,
            })),
            "bpann": matches!(spec.kind, ModelKind::Bpann | ModelKind::PhysicalBpann).then(|| serde_json::json!({
                "hidden": bp.hidden, "restarts": bp.restarts, "max_epochs": bp.max_epochs,
                "patience": bp.patience, "learning_rate": bp.learning_rate, "adam_epsilon": bp.epsilon,
                "validation_fraction": bp.validation_fraction, "validation": "grouped (whole kernels)",
                "ensemble_of_restarts": bp.ensemble,
                "backend": "burn 0.22.1 Flex (f64), full-batch Adam",
            })),
            "metrics": {
                "training-fit": rep.training_fit,
                "held-out": rep.held_out,
                "held-out-median": rep.held_out_median,
                "random-kfold": rep.random_kfold,
                "group-kfold": rep.group_kfold,
                "cv_restarts": args.cv_restarts,
            },
        });
        fitted_models.push((spec.kind, model));
        models.insert(spec.kind.name().to_string(), rep);
    }
    pb.finish_and_clear();

    // The default model: chosen by grouped CV on the training data only (or fixed by --select). The
    // held-out figures above were computed for every model alike and play no part in the choice.
    let candidates: Vec<Candidate> = fitted_models
        .iter()
        .filter_map(|(k, _)| {
            let m = models.get(k.name())?;
            Some(Candidate { model: k.name().to_string(), group_kfold: m.group_kfold.clone()? })
        })
        .collect();
    // Without grouped CV (--group-folds 0) there is nothing honest to choose by: no default is written
    // unless --select fixes it.
    let selection = if candidates.is_empty() && fixed.is_none() {
        None
    } else {
        Some(select_default(candidates, fixed)?)
    };
    // Everything is computed: only now is anything written, so a failure above leaves no partial output.
    if !args.no_write {
        std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("creating the output folder {}", out_dir.display()))?;
        for (kind, model) in &fitted_models {
            let path = out_dir.join(format!("{prefix}-{}.json", file_stem(*kind)));
            model.write_json_file(&path)?;
            artifacts.push(path.display().to_string());
            if let Some(sel) = selection.as_ref().filter(|s| s.chosen == kind.name()) {
                let mut chosen = model.clone();
                chosen.training["selection"] = serde_json::to_value(sel)?;
                let path = out_dir.join(format!("{prefix}-default.json"));
                chosen.write_json_file(&path)?;
                artifacts.push(path.display().to_string());
            }
        }
    }

    let headline = if test.is_some() { "held-out" } else { "group-kfold" };
    let report = Report {
        data: train_info,
        test: test_info,
        feature_set: fs,
        headline,
        models,
        selection,
        physical_not_applicable,
        artifacts,
    };
    match args.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        OutputFormat::Csv => print!("{}", csv_rows(&report)),
        OutputFormat::Table => print!("{}", table(&report)),
    }
    Ok(ExitCode::SUCCESS)
}

/// Rows per second of `model.predict` on `ds`, repeated until at least 0.2 s have passed.
fn throughput(model: &ModelArtifact, ds: &Dataset) -> anyhow::Result<f64> {
    let idx = model.check_inputs(&ds.feature_names)?;
    let x = ds.records.select(ndarray::Axis(1), &idx);
    let started = std::time::Instant::now();
    let mut rows = 0usize;
    let mut sink = 0.0;
    while started.elapsed().as_secs_f64() < 0.2 {
        sink += model.predict(x.view()).sum();
        rows += x.nrows();
    }
    std::hint::black_box(sink);
    Ok(rows as f64 / started.elapsed().as_secs_f64())
}

fn default_prefix(name: &str) -> String {
    if name.starts_with("guerreiro-titanx") {
        return "titanx".into();
    }
    if let Some(rest) = name.strip_prefix("nvdvfs-") {
        return rest.to_string();
    }
    Path::new(name).file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())
}

fn protocols(r: &ModelReport) -> Vec<(&'static str, &Metrics)> {
    let mut v = Vec::new();
    if let Some(m) = &r.held_out {
        v.push(("held-out", m));
    }
    if let Some(m) = &r.group_kfold {
        v.push(("group-kfold", m));
    }
    if let Some(m) = &r.random_kfold {
        v.push(("random-kfold", m));
    }
    v
}

fn table(r: &Report) -> String {
    let mut out = format!(
        "Training data: {} ({} rows, {} kernels); feature set {} ({} inputs)\n",
        r.data.name,
        r.data.rows,
        r.data.kernels,
        r.feature_set.name,
        r.feature_set.inputs.len()
    );
    if let Some(t) = &r.test {
        out += &format!("Held-out test: {} ({} rows, {} kernels)\n", t.name, t.rows, t.kernels);
    }
    let header = ["model", "protocol", "MAPE %", "RMSE W", "kernel err %", "worst kernel", "worst %"];
    let mut rows = Vec::new();
    for name in ["bpann", "physical", "physical+bpann", "mlr", "mlr+"] {
        let Some(m) = r.models.get(name) else { continue };
        for (p, x) in protocols(m) {
            rows.push(vec![
                name.to_string(),
                p.to_string(),
                fmt(x.mape_pct),
                fmt(x.rmse_w),
                fmt(x.kernel_error_pct),
                x.worst_kernel.clone(),
                fmt(x.worst_kernel_error_pct),
            ]);
        }
        if let Some(md) = &m.held_out_median {
            rows.push(vec![
                name.to_string(),
                format!("held-out median of {} seeds", md.seeds),
                fmt(md.mape_pct),
                fmt(md.rmse_w),
                fmt(md.kernel_error_pct),
                String::new(),
                String::new(),
            ]);
        }
    }
    out += &render_table(&header, &rows);
    out += &format!("Headline protocol: {}\n", r.headline);
    if let Some(s) = &r.selection {
        out += &format!("Default model: {} ({}", s.chosen, s.how);
        if !s.candidates.is_empty() && s.criterion != "none" {
            let c: Vec<String> =
                s.candidates.iter().map(|c| format!("{} {:.2}%", c.model, c.group_kfold.mape_pct)).collect();
            out += &format!(": group-kfold MAPE {}", c.join(", "));
        }
        out +=
            if r.test.is_some() { "; the held-out test set played no part in the choice)\n" } else { ")\n" };
    }
    if r.selection.is_none() {
        out += "Default model: none chosen (grouped CV was skipped; keep --group-folds ≥ 2 or pass --select MODEL)\n";
    }
    if let Some(why) = &r.physical_not_applicable {
        out += &format!("Physical DVFS model not fitted: {why}\n");
    }
    for a in &r.artifacts {
        out += &format!("wrote {a}\n");
    }
    out
}

fn csv_rows(r: &Report) -> String {
    let mut out =
        String::from("model,protocol,mape_pct,rmse_w,kernel_error_pct,worst_kernel,worst_kernel_error_pct\n");
    for (name, m) in &r.models {
        for (p, x) in protocols(m) {
            out += &format!(
                "{name},{p},{},{},{},{},{}\n",
                x.mape_pct, x.rmse_w, x.kernel_error_pct, x.worst_kernel, x.worst_kernel_error_pct
            );
        }
    }
    out
}
