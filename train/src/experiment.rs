//! The experiment behind `gpumodel train`: the candidate models, which roles the physical model's inputs
//! play on each kind of data, every evaluation protocol, the honest choice of the default model — by
//! grouped cross-validation on the training data only, never by the held-out test set — and the one
//! typed result ([`TrainReport`]) that every output format of the command renders.

use crate::bpann::{BpannParams, Solver};
use crate::eval::{GateForm, ModelSpec, cross_validate_scaled, evaluate, predict};
use crate::metrics::Metrics;
use crate::physical::PhysicalParams;
use crate::selection::{
    Complexity, FoldFigures, Rule, Scored, Validation, choose, fold_figures, fold_mape, seed_averaged,
};
use crate::uncertainty::{self, SeedPredictions, Uncertainty};
use crate::{Error, Result};
use gpumodel_models::artifact::{ModelArtifact, ModelKind, Residual, TargetTransform};
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::{self, Locator, Opened};
use gpumodel_models::stats::median;
use gpumodel_models::{Dataset, FeatureSet, Fold, Table};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// NV-DVFS counters that play Guerreiro's component utilizations in the physical model, fixed a priori
/// by the component each one measures (SP, DP, INT, SFU, CF, L2, shared, texture / global traffic; DRAM
/// for the memory domain) — not by correlation with power, so nothing is chosen on the evaluation data.
/// Each becomes events per cycle of its clock domain (`count / time_ms / clock_mhz`), which is what a
/// utilization measures; the model multiplies it by V²·f again. The non-negative least squares of the
/// fit drops (β = 0) the ones that do not help, inside each training fold.
pub const NVDVFS_ACTIVITIES: &[&str] = &[
    "inst_fp_32",
    "inst_fp_64",
    "inst_integer",
    "flop_count_sp_special",
    "cf_executed",
    "l2_read_transactions",
    "l2_write_transactions",
    "shared_load_transactions",
    "shared_store_transactions",
    "tex_cache_transactions",
    "gld_transactions",
    "gst_transactions",
    "dram_read_transactions",
    "dram_write_transactions",
];

/// The physical model's roles on `table` (imported as `format`), or `None` with the reason when the data
/// cannot feed it (no clock columns, one core clock level, no activity columns).
pub fn physical_roles(
    table: &Table,
    format: Format,
    feature_set: &str,
    feature_inputs: &[String],
) -> std::result::Result<PhysicalParams, String> {
    let has = |c: &str| table.column_index(c).is_some();
    if !has("core_mhz") || !has("mem_mhz") {
        return Err("the data has no core_mhz and mem_mhz columns".into());
    }
    let core_levels = table.distinct_values("core_mhz");
    if core_levels.len() < 2 {
        return Err(format!(
            "the data has a single core clock level ({} MHz), so there is no DVFS to model",
            core_levels.first().copied().unwrap_or(f64::NAN)
        ));
    }
    let activities: Vec<String> = match format {
        Format::Guerreiro => {
            table.columns.iter().filter(|c| *c != "power_w" && !c.ends_with("_mhz")).cloned().collect()
        }
        Format::Nvdvfs => {
            if !has("time_ms") {
                return Err("the NV-DVFS data has no time_ms column to turn counters into rates".into());
            }
            NVDVFS_ACTIVITIES
                .iter()
                .filter(|c| has(c))
                .map(|c| {
                    let clock = if c.starts_with("dram") { "mem_mhz" } else { "core_mhz" };
                    format!("{c}/time_ms/{clock}")
                })
                .collect()
        }
        Format::Table => {
            feature_inputs.iter().filter(|i| *i != "core_mhz" && *i != "mem_mhz").cloned().collect()
        }
    };
    if activities.is_empty() {
        return Err("the data has no activity columns for the physical model".into());
    }
    let mut p = PhysicalParams::from_activities(&activities, feature_set);
    // Guerreiro's files carry the default clocks the utilizations were measured at: the reference.
    let first = |c: &str| table.column(c).and_then(|v| v.first().copied());
    p.ref_core_mhz = first("default_core_mhz");
    p.ref_mem_mhz = first("default_mem_mhz");
    // … and the clocks a roofline candidate rescales those utilizations from.
    p.utilization_clocks = p
        .ref_core_mhz
        .zip(p.ref_mem_mhz)
        .map(|(core_mhz, mem_mhz)| gpumodel_models::artifact::Roofline { core_mhz, mem_mhz });
    Ok(p)
}

/// The validations nested CV compares procedures over (index = position in `inner_scored`).
const VALIDATIONS: [Validation; 2] = [Validation::GroupKfold, Validation::ClusterKfold];

/// The base candidate list of `gpumodel train` (session 5's nine), in the order tables show it (ties in
/// the selection go to the earlier, i.e. simpler, entry).
pub const BASE_CANDIDATES: &[&str] = &[
    "bpann",
    "bpann-lbfgs",
    "physical",
    "physical+bpann",
    "physical+bpann/2",
    "physical+bpann-lbfgs",
    "physical+bpann-lbfgs/2",
    "mlr",
    "mlr+",
];

/// The seed ensembles of the L-BFGS residual network (whole and halved) that the default list adds to
/// [`BASE_CANDIDATES`]: a single L-BFGS network differs from seed to seed by more than the margins the
/// rule decides on, and the mean of five is the variance fix. Adopted with [`DEFAULT_SELECTION_SEEDS`]
/// by nested CV on the training data (BENCHMARKS.md, issue 15, session 7: mean group/1se outer MAPE over
/// six nested runs 12.33%, against 14.01% for the nine with one seed on the same fits).
pub const SEED_ENSEMBLES: &[&str] = &["physical+bpann-lbfgs*5", "physical+bpann-lbfgs*5/2"];

/// The roofline twins of the physical candidates `--roofline` adds to the list: the physical model and
/// the default's seed ensembles (whole and halved) on utilizations rescaled to each clock pair
/// ([`gpumodel_models::artifact::Roofline`]). Opt-in (BENCHMARKS.md, issue 15, session 10).
pub const ROOFLINE_TWINS: &[&str] =
    &["physical.roofline", "physical.roofline+bpann-lbfgs*5", "physical.roofline+bpann-lbfgs*5/2"];

/// What the default's residual networks fit (`--residual`): the residual relative to the physical model,
/// `y/P − 1`, applied as `P·(1 + network)`. Adopted by nested CV on the training data (BENCHMARKS.md,
/// issue 15, session 10: mean group/1se outer MAPE over six nested runs 12.22%, against 12.28% for the
/// absolute residual on the same folds).
pub const DEFAULT_RESIDUAL: gpumodel_models::artifact::Residual =
    gpumodel_models::artifact::Residual::Relative;

/// Whether the default's residual networks are gated (`--gate`): `none` (trusted everywhere) until
/// nested CV on the training data says otherwise (BENCHMARKS.md, issue 15, session 11).
pub const DEFAULT_GATE: GateForm = GateForm::None;

/// Network seeds the default selection averages each candidate's CV figures over (`--selection-seeds`);
/// decided with [`SEED_ENSEMBLES`] (BENCHMARKS.md, issue 15, session 7).
pub const DEFAULT_SELECTION_SEEDS: usize = 3;

/// Whether the default list holds the variants of [`default_candidates`] (`--variants` /
/// `--no-variants` override it); decided by nested CV on the training data (BENCHMARKS.md, issue 15,
/// session 6).
pub const VARIANTS_BY_DEFAULT: bool = false;

/// The input-set alternative of a built-in feature set that the variants try (a physics-structured
/// form of the same counters, fixed a priori), if it has one.
pub fn alternative_inputs(feature_set: &str) -> Option<&'static str> {
    match feature_set {
        "titanx-utilizations" => Some("titanx-clock-physics"),
        "nvdvfs-rates" => Some("nvdvfs-per-cycle"),
        _ => None,
    }
}

/// The default candidate list on feature set `feature_set`: [`BASE_CANDIDATES`] then [`SEED_ENSEMBLES`],
/// and with `variants` the base list and the ones the selection then also chooses among (issue 15:
/// input set, width, seed averaging and the residual's share chosen inside the folds; the seed
/// ensembles are among them): `physical+bpann/4` and `physical+bpann-lbfgs/4` (free: they
/// share their fits), the plain L-BFGS network 8×8 wide (`@8x8`) and on the alternative input set
/// (`~NAME`), and the L-BFGS residual network 8×8 wide, on the alternative input set and averaged over
/// five networks from different initial weights (`*5`), each whole, halved and quartered. Only L-BFGS
/// variants: an L-BFGS fit costs a fraction of an Adam one.
pub fn default_candidates(feature_set: &str, variants: bool) -> Vec<String> {
    let mut v: Vec<String> = BASE_CANDIDATES.iter().map(|s| s.to_string()).collect();
    if !variants {
        v.extend(SEED_ENSEMBLES.iter().map(|s| s.to_string()));
        return v;
    }
    v.insert(5, "physical+bpann/4".into());
    v.insert(8, "physical+bpann-lbfgs/4".into());
    let mut kinds = vec!["@8x8".to_string()];
    if let Some(alt) = alternative_inputs(feature_set) {
        kinds.push(format!("~{alt}"));
    }
    for var in &kinds {
        v.push(format!("bpann-lbfgs{var}"));
    }
    kinds.push("*5".into());
    for var in &kinds {
        for scale in ["", "/2", "/4"] {
            v.push(format!("physical+bpann-lbfgs{var}{scale}"));
        }
    }
    v
}

/// The names `--models` accepts, for error messages.
pub const CANDIDATE_HELP: &str = "bpann, bpann-lbfgs, physical, physical+bpann, mlr, mlr+ (physical.roofline… \
rescales measured-once utilizations to each clock pair), with a network's \
options after its name in this order: -lbfgs (solver), @8x8 (hidden widths), ~FEATURESET (input set), *K \
(mean of K networks), /2 or /4 (physical+bpann: share of the residual kept)";

/// One candidate model: a fit recipe, and how much of its network's output it keeps (`/2`: the mean of
/// the physical model and `physical+bpann`, i.e. the physical model plus half the residual network).
#[derive(Debug, Clone)]
pub struct CandidateSpec {
    pub name: String,
    pub spec: ModelSpec,
    pub residual_scale: f64,
    /// Networks averaged (`*K`); 1 = one network, the best of its restarts.
    pub members: usize,
}

/// A candidate as its name spells it: `KIND[-lbfgs][@H1xH2][~FEATURESET][*K][/N]`, where a physical
/// KIND may read `physical.roofline` (`physical.roofline`, `physical.roofline+bpann…`).
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateName {
    pub kind: ModelKind,
    /// `.roofline`: the physical model rescales the utilizations to each clock pair
    /// ([`gpumodel_models::artifact::Roofline`]).
    pub roofline: bool,
    pub solver: Solver,
    /// Hidden widths (`@8x8`, `@8`); `None`: the run's `--hidden`.
    pub hidden: Option<Vec<usize>>,
    /// The input set (`~NAME`, a built-in feature set); `None`: the run's feature set.
    pub features: Option<String>,
    /// `*K`: the mean of K networks trained from different initial weights; `None`: one network.
    pub members: Option<usize>,
    /// Share of the residual network kept: 1, ½ (`/2`) or ¼ (`/4`).
    pub scale: f64,
}

impl CandidateName {
    /// Parses a candidate name (the options in the fixed order above).
    pub fn parse(name: &str) -> Result<CandidateName> {
        let bad = |why: &str| {
            Error::Params(format!(
                "unknown model '{name}'{why}: use {CANDIDATE_HELP} (comma-separated in --models)"
            ))
        };
        let mut n = name.trim();
        let mut scale = 1.0;
        if let Some((rest, d)) = n.rsplit_once('/') {
            scale = match d {
                "2" => 0.5,
                "4" => 0.25,
                _ => return Err(bad(" (the residual share is /2 or /4)")),
            };
            n = rest;
        }
        let mut members = None;
        if let Some((rest, k)) = n.rsplit_once('*') {
            match k.parse::<usize>() {
                Ok(k) if (2..=20).contains(&k) => members = Some(k),
                _ => return Err(bad(" (*K averages 2 to 20 networks)")),
            }
            n = rest;
        }
        let mut features = None;
        if let Some((rest, f)) = n.rsplit_once('~') {
            if f.is_empty() {
                return Err(bad(" (~ needs a feature-set name)"));
            }
            features = Some(f.to_string());
            n = rest;
        }
        let mut hidden = None;
        if let Some((rest, h)) = n.rsplit_once('@') {
            let w: Option<Vec<usize>> =
                h.split('x').map(|s| s.parse::<usize>().ok().filter(|&w| (1..=256).contains(&w))).collect();
            match w {
                Some(w) if !w.is_empty() && w.len() <= 4 => hidden = Some(w),
                _ => return Err(bad(" (@ takes hidden widths such as 8x8)")),
            }
            n = rest;
        }
        let (n, solver) = match n.strip_suffix("-lbfgs") {
            Some(rest) => (rest, Solver::Lbfgs),
            None => (n, Solver::Adam),
        };
        let unmarked;
        let (n, roofline) = match n.strip_prefix("physical.roofline") {
            Some(rest) => {
                unmarked = format!("physical{rest}");
                (unmarked.as_str(), true)
            }
            None => (n, false),
        };
        let kind = match n {
            "bpann" => ModelKind::Bpann,
            "mlr" => ModelKind::Mlr,
            "mlr+" | "mlrplus" => ModelKind::MlrPlus,
            "physical" => ModelKind::Physical,
            "physical+bpann" | "physical-bpann" => ModelKind::PhysicalBpann,
            _ => return Err(bad("")),
        };
        let is_net = matches!(kind, ModelKind::Bpann | ModelKind::PhysicalBpann);
        if !is_net && (solver == Solver::Lbfgs || hidden.is_some() || members.is_some()) {
            return Err(bad(" (-lbfgs, @ and * apply to networks)"));
        }
        if scale != 1.0 && kind != ModelKind::PhysicalBpann {
            return Err(bad(" (/2 and /4 apply to physical+bpann)"));
        }
        if kind == ModelKind::Physical && features.is_some() {
            return Err(bad(" (the physical model reads its own activity inputs, not a feature set)"));
        }
        Ok(CandidateName { kind, roofline, solver, hidden, features, members, scale })
    }

    /// The canonical spelling (`mlrplus` → `mlr+`, …).
    pub fn canonical(&self) -> String {
        let mut s = self.kind.name().to_string();
        // Only a physical KIND carries the marker (the fields are public: a hand-built name may set it
        // on another kind, which has no physical part to mark).
        if self.roofline && s.starts_with("physical") {
            s.insert_str("physical".len(), ".roofline");
        }
        if self.solver == Solver::Lbfgs {
            s += "-lbfgs";
        }
        if let Some(h) = &self.hidden {
            s += "@";
            s += &h.iter().map(|w| w.to_string()).collect::<Vec<_>>().join("x");
        }
        if let Some(f) = &self.features {
            s += "~";
            s += f;
        }
        if let Some(k) = self.members {
            s += &format!("*{k}");
        }
        if self.scale == 0.5 {
            s += "/2";
        } else if self.scale == 0.25 {
            s += "/4";
        }
        s
    }
}

/// What a candidate name asks for: the model kind, the solver of its network and its residual scale.
pub fn parse_candidate(name: &str) -> Result<(ModelKind, Solver, f64)> {
    let c = CandidateName::parse(name)?;
    Ok((c.kind, c.solver, c.scale))
}

/// The canonical name of a candidate without width, input-set or averaging options.
pub fn canonical_name(kind: ModelKind, solver: Solver, scale: f64) -> String {
    CandidateName { kind, roofline: false, solver, hidden: None, features: None, members: None, scale }
        .canonical()
}

/// The artifact file stem of a candidate: `physical+bpann-lbfgs/2` → `physical-bpann-lbfgs-half`,
/// `physical+bpann-lbfgs@8x8~titanx-clock-physics*5/4` → `physical-bpann-lbfgs-h8x8-titanx-clock-physics-avg5-quarter`.
pub fn file_stem(name: &str) -> String {
    name.replace("mlr+", "mlrplus")
        .replace('+', "-")
        .replace("/2", "-half")
        .replace("/4", "-quarter")
        .replace('@', "-h")
        .replace('~', "-")
        .replace('*', "-avg")
        .replace('.', "-")
}

impl CandidateSpec {
    /// The candidate `name` on feature set `fs` (unless the name picks another input set).
    pub fn new(
        name: &str,
        fs: &FeatureSet,
        bp: &BpannParams,
        phys: &PhysicalParams,
    ) -> Result<CandidateSpec> {
        let c = CandidateName::parse(name)?;
        let fs = match &c.features {
            Some(f) if *f != fs.name => gpumodel_models::features::builtin(f)?,
            _ => fs.clone(),
        };
        let mut bp = BpannParams { solver: c.solver, ..bp.clone() };
        if c.kind != ModelKind::Bpann {
            // α chosen inside the fit is the standalone networks' (BENCHMARKS.md, issue 15, session 11): a
            // `physical+bpann…` network keeps the fixed `l2`.
            bp.l2_grid = None;
            bp.l2_folds = 0;
            // ln(power) is the standalone networks' target (BENCHMARKS.md, issue 15, session 12): a
            // `physical+bpann…` network fits its residual (relative by default) as before.
            bp.target = TargetTransform::Identity;
        }
        if c.kind != ModelKind::Bpann || c.solver != Solver::Adam {
            // Mini-batches are the standalone Adam networks' (BENCHMARKS.md, issue 15, session 12).
            bp.batch_size = 0;
        }
        if let Some(h) = &c.hidden {
            bp.hidden = h.clone();
        }
        let members = c.members.unwrap_or(1);
        if members > 1 {
            // Restarts from different initial weights, averaged: the seed ensemble.
            bp.restarts = members;
            bp.ensemble = true;
        }
        let phys = PhysicalParams { roofline: c.roofline, ..phys.clone() }.check()?;
        let spec = ModelSpec::for_feature_set(c.kind, &fs, &bp, &phys);
        Ok(CandidateSpec { name: c.canonical(), spec, residual_scale: c.scale, members })
    }

    /// Candidates that differ only in their residual scale share every fit.
    fn fit_key(&self) -> String {
        let mut c = CandidateName::parse(&self.name).unwrap_or(CandidateName {
            kind: self.spec.kind,
            roofline: self.spec.physical.roofline,
            solver: self.spec.bpann.solver,
            hidden: None,
            features: None,
            members: None,
            scale: 1.0,
        });
        c.scale = 1.0;
        // Fits are shared only between candidates whose networks fit the same residual, gated alike.
        let key = match self.spec.residual {
            Residual::Absolute => c.canonical(),
            Residual::Relative => format!("{} (relative residual)", c.canonical()),
        };
        match self.spec.gate {
            GateForm::None => key,
            g => format!("{key} (gate {})", g.name()),
        }
    }

    /// The candidate's complexity for the one-standard-error rule (see [`crate::selection::Complexity`]).
    pub fn complexity(&self) -> Complexity {
        let rank = match self.spec.kind {
            ModelKind::Mlr => 0,
            ModelKind::MlrPlus => 4,
            ModelKind::Physical => 8,
            ModelKind::Bpann => 12,
            // The physical model plus a share s of a network: 8 + 8·s (¼ → 10, ½ → 12 = a network, 1 → 16).
            ModelKind::PhysicalBpann => 8 + (8.0 * self.residual_scale).round() as u32,
        };
        let params = match self.spec.kind {
            ModelKind::Bpann | ModelKind::PhysicalBpann => {
                let mut prev = self.spec.inputs.len();
                let mut n = 0;
                for &h in &self.spec.bpann.hidden {
                    n += (prev + 1) * h;
                    prev = h;
                }
                (n + prev + 1) * self.members
            }
            _ => self.spec.inputs.len() + 1,
        };
        Complexity { rank, params }
    }
}

/// A dataset as the report names it: never a path of the machine that read it.
#[derive(Debug, Clone, Serialize)]
pub struct DataInfo {
    /// Registry name, or the file name of a file given by path.
    pub name: String,
    /// File name only.
    pub file: String,
    pub sha256: String,
    pub rows: usize,
    pub kernels: usize,
}

/// Opens a registered dataset or a file, reporting each skipped bad row on stderr.
pub fn open_dataset(spec: &str, import: Option<Format>, bad: BadRows) -> Result<(Opened, DataInfo)> {
    let opened = registry::open(spec, import, bad, &Locator::from_env())?;
    for e in &opened.imported.skipped {
        eprintln!("warning: skipped a bad row: {e}");
    }
    let bytes = std::fs::read(&opened.path)
        .map_err(|e| Error::Invalid(format!("reading {}: {e}", opened.path.display())))?;
    let t = &opened.imported.table;
    let file_name = opened.path.file_name().map(|f| f.to_string_lossy().into_owned());
    let info = DataInfo {
        name: opened
            .entry
            .as_ref()
            .map_or_else(|| file_name.clone().unwrap_or_else(|| spec.into()), |e| e.name.clone()),
        file: file_name.unwrap_or_default(),
        sha256: registry::sha256_hex(&bytes),
        rows: t.n_rows(),
        kernels: t.distinct_groups().len(),
    };
    Ok((opened, info))
}

/// The artifact prefix of a dataset name (`titanx`, `gtx1080ti`, or the file stem).
pub fn default_prefix(name: &str) -> String {
    if name.starts_with("guerreiro-titanx") {
        return "titanx".into();
    }
    if let Some(rest) = name.strip_prefix("nvdvfs-") {
        return rest.to_string();
    }
    Path::new(name).file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())
}

/// The protocols and settings of one run.
#[derive(Debug, Clone)]
pub struct RunParams {
    pub candidates: Vec<CandidateSpec>,
    /// `--select MODEL`: take this candidate as the default regardless of the CV figures.
    pub fixed: Option<String>,
    pub seed: u64,
    /// Held-out fits of each network with seeds `seed, seed+1000, …`; the median is reported.
    pub seeds: usize,
    pub folds: usize,
    pub group_folds: usize,
    /// Restarts of a network inside each CV fold.
    pub cv_restarts: usize,
    /// The command line as typed (program name only, no absolute paths), recorded in the artifacts.
    pub command: String,
    pub feature_set: FeatureSet,
    pub train_info: DataInfo,
    pub test_info: Option<DataInfo>,
    pub physical_not_applicable: Option<String>,
    /// Which folds choose the default (`--select-by`).
    pub select_by: Validation,
    /// How the CV figures choose it (`--rule`).
    pub rule: Rule,
    /// The columns leave-cluster-out folds cluster kernels by (the feature set's activity inputs).
    pub cluster_inputs: Vec<String>,
    /// `--nested OUTER`: score every selection procedure by nested CV with these outer folds.
    pub nested: Option<Validation>,
    /// `--selection-seeds K`: the CV figures the choice compares are averaged over K network seeds
    /// (`seed`, `seed + 1000`, …) on the same folds ([`crate::selection::seed_averaged`]); 1 = one seed.
    pub selection_seeds: usize,
    /// `--cluster-cv`: leave-cluster-out CV of every candidate even when it does not choose (it always
    /// runs when it chooses, `--select-by cluster`, or gives the outer folds, `--nested cluster`).
    pub cluster_cv: bool,
    /// `--bootstrap N`: resamples of the test set's applications for the held-out figures' intervals
    /// ([`crate::uncertainty`]); 0 = none.
    pub bootstrap: usize,
}

/// The folds of one run's random, grouped and leave-cluster-out CV (`None`: skipped), computed once
/// ([`RunParams::fold_sets`]) and shared by the fits and `--folds-out`.
#[derive(Debug, Clone)]
pub struct FoldSets {
    pub random: Option<Vec<Fold>>,
    pub grouped: Option<Vec<Fold>>,
    pub cluster: Option<Vec<Fold>>,
}

/// One model's figures under every protocol.
#[derive(Debug, Clone, Serialize, Default)]
pub struct ModelReport {
    pub inputs: Vec<String>,
    /// `adam` or `lbfgs` for the networks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solver: Option<&'static str>,
    /// The share of the residual network kept (0.5: the mean of `physical` and `physical+bpann`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual_scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", rename = "random-kfold")]
    pub random_kfold: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none", rename = "group-kfold")]
    pub group_kfold: Option<Metrics>,
    /// Leave-cluster-out CV (whole clusters of similar kernels per fold).
    #[serde(skip_serializing_if = "Option::is_none", rename = "cluster-kfold")]
    pub cluster_kfold: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none", rename = "held-out")]
    pub held_out: Option<Metrics>,
    /// Held-out metrics per seed (networks with `--seeds` > 1), and their median.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_out_per_seed: Vec<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_median: Option<Median>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training_fit: Option<Metrics>,
    /// Wall time of the (first-seed) fit on the whole training set, s.
    pub fit_seconds: f64,
    /// Batched inference throughput of the artifact (plain-Rust forward pass), rows/s.
    pub predict_rows_per_s: f64,
}

/// Median over seeds of the held-out figures.
#[derive(Debug, Clone, Serialize)]
pub struct Median {
    pub seeds: usize,
    pub mape_pct: f64,
    pub rmse_w: f64,
    pub kernel_error_pct: f64,
    pub worst_kernel_error_pct: f64,
}

/// One evaluated row of the headline protocol: what the report plots.
#[derive(Debug, Clone, Serialize)]
pub struct RowPrediction {
    /// Application or kernel name (the group column).
    pub kernel: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core_mhz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_mhz: Option<f64>,
    pub measured_w: f64,
    /// Predicted power per model (held-out: the written artifact, i.e. the first seed; group-kfold: the
    /// out-of-fold prediction).
    pub predicted_w: BTreeMap<String, f64>,
}

/// One application's (kernel's) error per model on the headline protocol.
#[derive(Debug, Clone, Serialize)]
pub struct ApplicationError {
    pub kernel: String,
    pub rows: usize,
    /// Mean measured power over its rows, W.
    pub measured_w: f64,
    pub models: BTreeMap<String, AppModelError>,
}

/// One model on one application.
#[derive(Debug, Clone, Serialize)]
pub struct AppModelError {
    /// Mean predicted power over the application's rows, W.
    pub predicted_w: f64,
    /// |mean predicted − mean measured| / mean measured, % (the paper's per-kernel error).
    pub error_pct: f64,
    /// MAPE over the application's rows, %.
    pub mape_pct: f64,
}

/// Everything one `gpumodel train` run computed: one result document for every output format.
#[derive(Debug, Clone, Serialize)]
pub struct TrainReport {
    pub data: DataInfo,
    pub test: Option<DataInfo>,
    pub feature_set: FeatureSet,
    /// The protocol the figures to quote come from: `held-out` when there is a test set, else `group-kfold`.
    pub headline: &'static str,
    /// Model names in the order of the run (tables follow it).
    pub model_order: Vec<String>,
    pub models: BTreeMap<String, ModelReport>,
    /// The peer's model fitted by gpumodel beside ours (`physical`: Guerreiro et al.'s DVFS model), when fitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Which model became the default and the grouped-CV figures that chose it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// Why the physical models were left out, when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical_not_applicable: Option<String>,
    /// Nested CV of the selection procedures (`--nested`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nested: Option<Nested>,
    /// How precise the held-out figures are: a bootstrap over the test set's applications, with each
    /// model's difference to the peer's (`--bootstrap`; held-out runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_uncertainty: Option<Uncertainty>,
    /// Why there are no intervals although a test set was scored and --bootstrap asked for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_uncertainty_skipped: Option<String>,
    /// The protocol of `rows` and `applications` (the headline one).
    pub rows_protocol: &'static str,
    pub rows: Vec<RowPrediction>,
    pub applications: Vec<ApplicationError>,
    /// Files written (set by the caller after writing).
    pub artifacts: Vec<String>,
}

/// A fitted model ready to write: its candidate name and the artifact (with its `training` record).
#[derive(Debug, Clone)]
pub struct Fitted {
    pub name: String,
    pub artifact: ModelArtifact,
}

/// A network's recorded hyper-parameters.
fn bpann_record(b: &BpannParams) -> serde_json::Value {
    let mut v = serde_json::json!({
        "hidden": b.hidden, "restarts": b.restarts, "max_epochs": b.max_epochs,
        "patience": b.patience, "learning_rate": b.learning_rate, "adam_epsilon": b.epsilon,
        "l2": b.l2, "solver": b.solver.name(),
        "validation_fraction": b.validation_fraction, "validation": if b.grouped_validation { "grouped (whole kernels)" } else { "random rows" },
        "ensemble_of_restarts": b.ensemble,
        "backend": b.backend_description(),
    });
    if b.target == TargetTransform::Log {
        // Only with a log target, so that the records of fits in watts are as before.
        v["target"] = "log: the network fits ln(power), standardized; the model predicts exp(output); its validation errors (early stopping, restart choice, any l2_validation_rmse_w) are in ln(W)".into();
    }
    if b.batch_size > 0 {
        // Only with mini-batches, so that the records of full-batch fits are as before.
        v["batch_size"] = b.batch_size.into();
        v["batch_learning_rate"] = b.batch_learning_rate.into();
        v["backend"] = b
            .backend_description()
            .replace(
                "full-batch Adam",
                &format!(
                    "mini-batch Adam (batches of {n} rows reshuffled every epoch, one step per batch; a training side of {n} rows or fewer: one unshuffled full batch)",
                    n = b.batch_size
                ),
            )
            .into();
    }
    v
}

/// How a physical model was fitted, for the artifact's `training` record (the roofline key only when
/// the utilizations were rescaled, so the records of the other physical models are as before).
fn physical_record(p: &PhysicalParams) -> serde_json::Value {
    let mut v = serde_json::json!({
        "form": "Guerreiro et al. TPDS'19: P = b0*Vc + Vc^2*fc*(bc + sum bi*Ui) + b1*Vm + Vm^2*fm*(bm + sum bj*Uj)",
        "fit": "alternating non-negative least squares (betas) and neighbour-bounded 1-D least squares (one voltage per clock level), until the error stops falling",
        "core_inputs": p.core_inputs, "mem_inputs": p.mem_inputs,
        "error": p.weighting.name(),
    });
    if p.roofline {
        v["utilizations"] = serde_json::json!(
            "rescaled from the clocks they were measured at to each row's clocks by a roofline: t/t0 = max(a*fc0/fc, b*fm0/fm)/max(a,b), core x (fc0/fc)(t0/t), memory x (fm0/fm)(t0/t); a, b = largest core / memory utilization"
        );
    }
    v
}

/// The network of a `physical+bpann` artifact scaled by `s` (exact: its output layer is linear).
fn scale_residual(a: &ModelArtifact, s: f64) -> ModelArtifact {
    let mut a = a.clone();
    if s != 1.0 {
        for v in a.target_scaling.mean.iter_mut().chain(a.target_scaling.std.iter_mut()) {
            *v *= s;
        }
    }
    a
}

/// Rows per second of `model.predict` on `ds`, repeated until at least 0.2 s have passed.
fn throughput(model: &ModelArtifact, ds: &Dataset) -> Result<f64> {
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

fn column(ds: &Dataset, name: &str) -> Option<Vec<f64>> {
    ds.feature_names.iter().position(|f| f == name).map(|j| ds.records.column(j).to_vec())
}

impl RunParams {
    fn groups(&self) -> Vec<(String, Vec<usize>)> {
        let mut out: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, c) in self.candidates.iter().enumerate() {
            let k = c.fit_key();
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, v)) => v.push(i),
                None => out.push((k, vec![i])),
            }
        }
        out
    }

    fn cv_spec(&self, s: &ModelSpec) -> ModelSpec {
        let mut s = s.clone();
        // An averaging ensemble is judged as the ensemble it is (all its members); a single network
        // by a cheaper fit with --cv-restarts restarts.
        if !s.bpann.ensemble {
            s.bpann.restarts = self.cv_restarts.max(1);
        }
        s
    }

    /// Under random k-fold the network's early stopping validates on a random split of rows too, so
    /// that its validation matches the protocol it is scored by (a grouped split there stops too early
    /// for a test side that shares kernels with the training side).
    fn random_cv_spec(&self, s: &ModelSpec) -> ModelSpec {
        let mut s = self.cv_spec(s);
        s.bpann.grouped_validation = false;
        s
    }

    /// Whether this run needs leave-cluster-out folds of the whole training data: asked for
    /// (`--cluster-cv`), choosing by them, or as nested CV's outer folds.
    fn wants_cluster(&self) -> bool {
        self.cluster_cv
            || self.select_by == Validation::ClusterKfold
            || self.nested == Some(Validation::ClusterKfold)
    }

    /// The inner validations nested CV scores procedures by: grouped folds always, leave-cluster-out
    /// folds too when the run reports or chooses by them (sessions 5 and 6 measured those procedures
    /// worse; they double the inner cost).
    fn inner_validations(&self) -> Vec<Validation> {
        if self.cluster_cv || self.select_by == Validation::ClusterKfold {
            VALIDATIONS.to_vec()
        } else {
            vec![Validation::GroupKfold]
        }
    }

    /// The folds of the random, grouped and leave-cluster-out CV of this run on `train`.
    /// Deterministic in the seed; computed once and handed to [`RunParams::run`] and
    /// [`RunParams::folds_csv`], so `--folds-out` writes exactly the partitions the run uses.
    pub fn fold_sets(&self, train: &Dataset) -> Result<FoldSets> {
        let random = if self.folds > 0 { Some(train.kfold(self.folds, self.seed)?) } else { None };
        let grouped =
            if self.group_folds > 0 { Some(train.group_kfold(self.group_folds, self.seed)?) } else { None };
        let cluster = if self.group_folds > 0 && self.wants_cluster() {
            Some(Validation::ClusterKfold.folds(train, self.group_folds, self.seed, &self.cluster_inputs)?)
        } else {
            None
        };
        Ok(FoldSets { random, grouped, cluster })
    }

    /// The fold assignment as CSV (`protocol,row,kernel,fold`; row = 0-based data row of the training
    /// file in reading order), for a peer (scikit-learn) to run on exactly the same partitions.
    pub fn folds_csv(&self, train: &Dataset, sets: &FoldSets) -> Result<String> {
        let mut out = String::from("protocol,row,kernel,fold\n");
        let names = ["random-kfold", "group-kfold", "cluster-kfold"];
        for (name, folds) in names.iter().zip([&sets.random, &sets.grouped, &sets.cluster]) {
            let Some(folds) = folds else { continue };
            let mut fold_of = vec![usize::MAX; train.n_rows()];
            for (k, f) in folds.iter().enumerate() {
                for &r in &f.test {
                    fold_of[r] = k;
                }
            }
            for (r, k) in fold_of.iter().enumerate() {
                let g = &train.groups[r];
                let g = if g.contains([',', '"']) {
                    format!("\"{}\"", g.replace('"', "\"\""))
                } else {
                    g.clone()
                };
                out += &format!("{name},{r},{g},{k}\n");
            }
        }
        Ok(out)
    }

    /// Progress units the whole run reports (network epochs / iterations).
    pub fn progress_len(&self) -> u64 {
        let k = self.group_folds as u64;
        let sel_seeds = self.selection_seeds.max(1) as u64;
        let nested =
            if self.nested.is_some() { k * k * self.inner_validations().len() as u64 * sel_seeds } else { 0 };
        let cluster = if self.wants_cluster() { k } else { 0 };
        // Network candidates: the selection's folds once per selection seed.
        let n_cv = self.folds as u64 + k * sel_seeds + cluster + nested;
        self.groups()
            .iter()
            .map(|(_, m)| {
                let s = &self.candidates[m[0]].spec;
                let seeds = if s.progress_len() > 0 { self.seeds as u64 } else { 1 };
                s.progress_len() * seeds + self.cv_spec(s).progress_len() * n_cv
            })
            .sum()
    }

    /// The CV fit of `spec` with selection seed `k` (0: the run's seed; k: `seed + 1000·k`).
    fn cv_spec_seed(&self, spec: &ModelSpec, k: usize) -> ModelSpec {
        let mut s = self.cv_spec(spec);
        if k > 0 {
            s.bpann.seed = self.seed.wrapping_add(1000 * k as u64);
        }
        s
    }

    /// Fits every candidate on `train`, evaluates it by every protocol asked for (the held-out set
    /// `test` once per seed, with every model alike), and chooses the default by grouped CV on `train`.
    /// Nothing is written.
    pub fn run(
        &self,
        train: &Dataset,
        test: Option<&Dataset>,
        folds: &FoldSets,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(TrainReport, Vec<Fitted>)> {
        if self.candidates.is_empty() {
            return Err(Error::Params(format!("--models is empty: name at least one of {CANDIDATE_HELP}")));
        }
        if self.selection_seeds == 0 {
            return Err(Error::Params("--selection-seeds must be at least 1".into()));
        }
        let FoldSets { random: random_folds, grouped: group_folds, cluster: cluster_folds } = folds;
        let inner_validations = self.inner_validations();
        // Nested CV of the selection procedures: outer folds of the kind asked for, and on each outer
        // training side the inner folds of every validation a procedure may choose by.
        let nested_setup = match self.nested {
            Some(outer) => {
                if self.group_folds < 2 {
                    return Err(Error::Params(
                        "--nested needs --group-folds ≥ 2 (the outer and inner k)".into(),
                    ));
                }
                let outer_folds = match outer {
                    Validation::GroupKfold => group_folds.clone(),
                    Validation::ClusterKfold => cluster_folds.clone(),
                }
                .ok_or_else(|| Error::Invalid("nested CV needs outer folds".into()))?;
                let inner = outer_folds
                    .iter()
                    .map(|o| {
                        let sub = train.select_rows(&o.train);
                        inner_validations
                            .iter()
                            .map(|v| v.folds(&sub, self.group_folds, self.seed, &self.cluster_inputs))
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<Vec<_>>>()?;
                Some((outer, outer_folds, inner))
            }
            None => None,
        };
        let n = self.candidates.len();
        let mut reports: Vec<ModelReport> = vec![ModelReport::default(); n];
        let mut fitted: Vec<Option<ModelArtifact>> = vec![None; n];
        // Every seed's held-out predictions (the first seed's are the written artifact's), for the rows
        // and for the bootstrap of the median over seeds.
        let mut held_pred_seeds: Vec<Vec<Vec<f64>>> = vec![Vec::new(); n];
        let mut group_pred: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut cluster_pred: Vec<Vec<f64>> = vec![Vec::new(); n];
        // inner_figs[outer fold][validation][candidate][selection seed] = its inner CV figures.
        let n_outer = nested_setup.as_ref().map_or(0, |(_, o, _)| o.len());
        let mut inner_figs: Vec<Vec<Vec<Vec<FoldFigures>>>> =
            vec![vec![vec![Vec::new(); n]; inner_validations.len()]; n_outer];
        // sel_figs[candidate][selection seed] = the CV figures the choice is made by.
        let mut sel_figs: Vec<Vec<FoldFigures>> = vec![Vec::new(); n];
        let targets = train.targets.to_vec();
        let select_folds = match self.select_by {
            Validation::GroupKfold => group_folds.as_ref(),
            Validation::ClusterKfold => cluster_folds.as_ref(),
        };
        for (_, members) in self.groups() {
            let spec = &self.candidates[members[0]].spec;
            let scales: Vec<f64> = members.iter().map(|&i| self.candidates[i].residual_scale).collect();
            let is_net = matches!(spec.kind, ModelKind::Bpann | ModelKind::PhysicalBpann);
            let n_seeds = if is_net { self.seeds } else { 1 };
            // A fit without a network is the same for every seed: one seed's CV figures are all of them.
            let cv_seeds = if is_net { self.selection_seeds } else { 1 };
            let mut per_seed: Vec<Vec<Metrics>> = vec![Vec::new(); members.len()];
            let mut fit_seconds = 0.0;
            for k in 0..n_seeds {
                let mut s = spec.clone();
                s.bpann.seed = self.seed.wrapping_add(1000 * k as u64);
                let started = std::time::Instant::now();
                let m = s.fit(train, progress)?;
                if k == 0 {
                    fit_seconds = started.elapsed().as_secs_f64();
                }
                for (j, &sc) in scales.iter().enumerate() {
                    let a = scale_residual(&m, sc);
                    if let Some(t) = test {
                        let p = predict(&a, t)?;
                        per_seed[j].push(Metrics::score(&p, &t.targets.to_vec(), &t.groups)?);
                        held_pred_seeds[members[j]].push(p);
                    }
                    if k == 0 {
                        fitted[members[j]] = Some(a);
                    }
                }
            }
            let random = match &random_folds {
                Some(f) => {
                    Some(cross_validate_scaled(&self.random_cv_spec(spec), train, f, &scales, progress)?)
                }
                None => None,
            };
            let grouped = match &group_folds {
                Some(f) => Some(cross_validate_scaled(&self.cv_spec(spec), train, f, &scales, progress)?),
                None => None,
            };
            let clustered = match &cluster_folds {
                Some(f) => Some(cross_validate_scaled(&self.cv_spec(spec), train, f, &scales, progress)?),
                None => None,
            };
            // The selection's figures: the run's seed (the fits above), then seeds 2..K on the same folds.
            if let Some(f) = select_folds {
                let first = match self.select_by {
                    Validation::GroupKfold => &grouped,
                    Validation::ClusterKfold => &clustered,
                };
                if let Some((_, p)) = first {
                    for (j, &i) in members.iter().enumerate() {
                        sel_figs[i].push(fold_figures(&p[j], &targets, f));
                    }
                }
                for k in 1..cv_seeds {
                    let (_, p) =
                        cross_validate_scaled(&self.cv_spec_seed(spec, k), train, f, &scales, progress)?;
                    for (j, &i) in members.iter().enumerate() {
                        sel_figs[i].push(fold_figures(&p[j], &targets, f));
                    }
                }
            }
            if let Some((_, outer_folds, inner)) = &nested_setup {
                for (o, (of, inner_o)) in outer_folds.iter().zip(inner).enumerate() {
                    let sub = train.select_rows(&of.train);
                    let targets = sub.targets.to_vec();
                    for (v, folds) in inner_o.iter().enumerate() {
                        for k in 0..cv_seeds {
                            let (_, p) = cross_validate_scaled(
                                &self.cv_spec_seed(spec, k),
                                &sub,
                                folds,
                                &scales,
                                progress,
                            )?;
                            for (j, &i) in members.iter().enumerate() {
                                inner_figs[o][v][i].push(fold_figures(&p[j], &targets, folds));
                            }
                        }
                    }
                }
            }
            for (j, &i) in members.iter().enumerate() {
                let c = &self.candidates[i];
                let model = fitted[i].as_ref().ok_or_else(|| Error::Invalid("no model was fitted".into()))?;
                let r = &mut reports[i];
                r.inputs = c.spec.inputs.clone();
                r.solver = is_net.then(|| c.spec.bpann.solver.name());
                r.residual_scale = (c.spec.kind == ModelKind::PhysicalBpann).then_some(c.residual_scale);
                r.fit_seconds = fit_seconds;
                r.predict_rows_per_s = throughput(model, test.unwrap_or(train))?;
                r.training_fit = Some(evaluate(model, train)?);
                r.held_out = per_seed[j].first().cloned();
                if per_seed[j].len() > 1 {
                    let hs = &per_seed[j];
                    r.held_out_median = Some(Median {
                        seeds: hs.len(),
                        mape_pct: median(hs.iter().map(|m| m.mape_pct).collect()),
                        rmse_w: median(hs.iter().map(|m| m.rmse_w).collect()),
                        kernel_error_pct: median(hs.iter().map(|m| m.kernel_error_pct).collect()),
                        worst_kernel_error_pct: median(hs.iter().map(|m| m.worst_kernel_error_pct).collect()),
                    });
                    r.held_out_per_seed = hs.clone();
                }
                if let Some((m, _)) = &random {
                    r.random_kfold = Some(m[j].clone());
                }
                if let Some((m, p)) = &grouped {
                    r.group_kfold = Some(m[j].clone());
                    group_pred[i] = p[j].clone();
                }
                if let Some((m, p)) = &clustered {
                    r.cluster_kfold = Some(m[j].clone());
                    cluster_pred[i] = p[j].clone();
                }
            }
        }

        // The default: chosen by CV on the training data only (or fixed by --select). The held-out
        // figures above were computed for every model alike and play no part in the choice.
        let judged = |i: usize| -> Option<(f64, f64)> {
            (!sel_figs[i].is_empty()).then(|| seed_averaged(&sel_figs[i]))
        };
        let cands: Vec<Candidate> = self
            .candidates
            .iter()
            .zip(&reports)
            .enumerate()
            .filter_map(|(i, (c, r))| {
                let (cv_mape_pct, cv_se_pct) = judged(i)?;
                Some(Candidate {
                    model: c.name.clone(),
                    complexity: c.complexity(),
                    inputs: r.inputs.clone(),
                    group_kfold: r.group_kfold.clone()?,
                    cluster_kfold: r.cluster_kfold.clone(),
                    cv_mape_pct,
                    cv_se_pct,
                    cv_mape_pct_per_seed: sel_figs[i].iter().map(|f| f.pooled_pct).collect(),
                })
            })
            .collect();
        let selection = if cands.is_empty() && self.fixed.is_none() {
            None
        } else {
            // Seeds only matter to networks: without one, a single figure per candidate is all there is.
            let seeds = cands.iter().map(|c| c.cv_mape_pct_per_seed.len()).max().unwrap_or(1).max(1);
            Some(select_default(cands, self.fixed.as_deref(), self.select_by, self.rule, seeds)?)
        };

        let nested = match &nested_setup {
            Some((outer, outer_folds, _)) => {
                let outer_pred = match outer {
                    Validation::GroupKfold => &group_pred,
                    Validation::ClusterKfold => &cluster_pred,
                };
                // Procedures: the run's list, and the base list alone when the run adds candidates to
                // it (one run then compares both lists on the same fits); one selection seed, and the
                // run's K when K > 1.
                let all: Vec<usize> = (0..n).collect();
                let among = |names: &[String]| -> Vec<usize> {
                    (0..n).filter(|&i| names.contains(&self.candidates[i].name)).collect()
                };
                let base = among(&BASE_CANDIDATES.iter().map(|s| s.to_string()).collect::<Vec<_>>());
                let default = among(&default_candidates(&self.feature_set.name, VARIANTS_BY_DEFAULT));
                let mut lists = vec![("all", all)];
                if default.len() >= 2 && default.len() < n {
                    lists.push(("default", default.clone()));
                }
                if base.len() >= 2 && base.len() < n && base != default {
                    lists.push(("base", base));
                }
                let mut seed_counts = vec![1];
                if self.selection_seeds > 1 {
                    seed_counts.push(self.selection_seeds);
                }
                let mut combos = Vec::new();
                for (v, validation) in inner_validations.iter().enumerate() {
                    for (list_name, list) in &lists {
                        for &ks in &seed_counts {
                            for rule in [Rule::Min, Rule::OneSe] {
                                combos.push((v, *validation, *list_name, list, ks, rule));
                            }
                        }
                    }
                }
                let mut procedures = Vec::new();
                for (v, validation, list_name, list, ks, rule) in combos {
                    let mut pred = vec![f64::NAN; train.n_rows()];
                    let mut chosen_per_fold = Vec::new();
                    for (o, of) in outer_folds.iter().enumerate() {
                        let scored: Vec<Scored> = list
                            .iter()
                            .map(|&i| {
                                let figs = &inner_figs[o][v][i];
                                let (mape_pct, se_pct) = seed_averaged(&figs[..ks.min(figs.len())]);
                                Scored {
                                    model: self.candidates[i].name.clone(),
                                    mape_pct,
                                    se_pct,
                                    complexity: self.candidates[i].complexity(),
                                }
                            })
                            .collect();
                        let name = choose(rule, &scored).ok_or_else(|| {
                            Error::Invalid("nested CV: no candidate had a finite inner figure".into())
                        })?;
                        let i = self.candidates.iter().position(|c| c.name == name).ok_or_else(|| {
                            Error::Invalid(format!("nested CV chose an unknown model {name}"))
                        })?;
                        for &r in &of.test {
                            pred[r] = outer_pred[i][r];
                        }
                        chosen_per_fold.push(name);
                    }
                    let rows: Vec<usize> = (0..pred.len()).filter(|&r| pred[r].is_finite()).collect();
                    let sub = train.select_rows(&rows);
                    let p: Vec<f64> = rows.iter().map(|&r| pred[r]).collect();
                    let metrics = Metrics::score(&p, &sub.targets.to_vec(), &sub.groups)?;
                    let (_, se_pct) = fold_mape(&pred, &targets, outer_folds);
                    procedures.push(Procedure {
                        validation: validation.name(),
                        rule: rule.name(),
                        selection_seeds: ks,
                        candidate_list: list_name,
                        in_use: self.fixed.is_none()
                            && validation == self.select_by
                            && rule == self.rule
                            && ks == self.selection_seeds
                            && list_name == "all",
                        outer: metrics,
                        outer_se_pct: se_pct,
                        chosen_per_fold,
                    });
                }
                Some(Nested { outer: outer.name(), folds: outer_folds.len(), procedures })
            }
            None => None,
        };

        let (rows_protocol, rows_ds, preds): (_, _, Vec<&[f64]>) = match test {
            Some(t) => (
                "held-out",
                Some(t),
                held_pred_seeds.iter().map(|s| s.first().map_or(&[][..], |p| p)).collect(),
            ),
            None => (
                "group-kfold",
                group_folds.as_ref().map(|_| train),
                group_pred.iter().map(|p| &p[..]).collect(),
            ),
        };
        let names: Vec<String> = self.candidates.iter().map(|c| c.name.clone()).collect();
        let (rows, applications) = match rows_ds {
            Some(ds) => per_row(ds, &names, &preds),
            None => (Vec::new(), Vec::new()),
        };

        // The peer's model fitted beside ours (Guerreiro et al.'s physical DVFS model), when it was.
        let peer = self.candidates.iter().any(|c| c.name == "physical").then(|| "physical".to_string());
        // A test set of one application has no spread to draw from: no intervals, and a note says so.
        let one_application =
            test.is_some_and(|t| self.bootstrap > 0 && uncertainty::applications(&t.groups) < 2);
        let held_out_uncertainty = match test {
            Some(t) if self.bootstrap > 0 && !one_application => {
                let held: Vec<SeedPredictions> = self
                    .candidates
                    .iter()
                    .zip(held_pred_seeds)
                    .map(|(c, per_seed)| SeedPredictions { model: c.name.clone(), per_seed })
                    .collect();
                Some(uncertainty::bootstrap(
                    &held,
                    &t.targets.to_vec(),
                    &t.groups,
                    peer.as_deref(),
                    self.bootstrap,
                    self.seed,
                )?)
            }
            _ => None,
        };
        let mut out = Vec::new();
        let mut models = BTreeMap::new();
        for ((c, r), a) in self.candidates.iter().zip(reports).zip(fitted) {
            let mut artifact = a.ok_or_else(|| Error::Invalid("no model was fitted".into()))?;
            let k = c.spec.kind;
            // What the fit itself recorded (the α it chose from its grid) joins the network's record.
            let from_fit = std::mem::take(&mut artifact.training);
            artifact.training = serde_json::json!({
                "command": self.command,
                "gpumodel_version": env!("CARGO_PKG_VERSION"),
                "model": c.name,
                "dataset": self.train_info,
                "test_dataset": self.test_info,
                "feature_set": self.feature_set.name,
                "seed": self.seed,
                "physical": matches!(k, ModelKind::Physical | ModelKind::PhysicalBpann).then(|| physical_record(&c.spec.physical)),
                "bpann": matches!(k, ModelKind::Bpann | ModelKind::PhysicalBpann).then(|| bpann_record(&c.spec.bpann)),
                "residual_scale": (k == ModelKind::PhysicalBpann).then_some(c.residual_scale),
                "metrics": {
                    "training-fit": r.training_fit,
                    "held-out": r.held_out,
                    "held-out-median": r.held_out_median,
                    "random-kfold": r.random_kfold,
                    "group-kfold": r.group_kfold,
                    "cluster-kfold": r.cluster_kfold,
                    "cv_restarts": self.cv_restarts,
                },
            });
            // Only with a test set and --bootstrap, so that the records of other runs are as before.
            if let Some((u, m)) = held_out_uncertainty
                .as_ref()
                .and_then(|u| Some((u, u.models.iter().find(|m| m.model == c.name)?)))
            {
                let mut rec = serde_json::to_value(m).map_err(|e| Error::Invalid(e.to_string()))?;
                rec["bootstrap"] = format!(
                    "{} draws of the {} test applications, seed {}",
                    u.resamples, u.applications, u.seed
                )
                .into();
                artifact.training["held_out_interval"] = rec;
            }
            if k == ModelKind::PhysicalBpann && c.spec.gate == GateForm::Nearest {
                artifact.training["residual_gate"] = serde_json::json!(
                    "nearest: the network's output is multiplied by g = min(1, (tau/d)^2), d = distance from the row's standardized activity inputs to the nearest training kernel's mean, tau = largest nearest-neighbour distance between training kernels"
                );
            }
            if let (Some(fit), Some(rec)) = (
                from_fit.get("bpann").and_then(|v| v.as_object()),
                artifact.training.get_mut("bpann").and_then(|v| v.as_object_mut()),
            ) {
                rec.extend(fit.clone());
            }
            if k == ModelKind::PhysicalBpann && !c.spec.residual.is_absolute() {
                artifact.training["residual"] = serde_json::json!(
                    "relative: the network fits y/P - 1 of the physical model P; the model predicts P*(1 + network)"
                );
            }
            out.push(Fitted { name: c.name.clone(), artifact });
            models.insert(c.name.clone(), r);
        }
        let report = TrainReport {
            data: self.train_info.clone(),
            test: self.test_info.clone(),
            feature_set: self.feature_set.clone(),
            headline: if test.is_some() { "held-out" } else { "group-kfold" },
            model_order: names,
            models,
            peer,
            selection,
            physical_not_applicable: self.physical_not_applicable.clone(),
            nested,
            held_out_uncertainty,
            held_out_uncertainty_skipped: one_application.then(|| {
                "no held-out intervals: the test set has one application, and the bootstrap draws whole applications".into()
            }),
            rows_protocol,
            rows,
            applications,
            artifacts: Vec::new(),
        };
        Ok((report, out))
    }
}

/// The rows of `ds` with every model's prediction, and the per-application errors.
fn per_row(ds: &Dataset, names: &[String], preds: &[&[f64]]) -> (Vec<RowPrediction>, Vec<ApplicationError>) {
    let core = column(ds, "core_mhz");
    let mem = column(ds, "mem_mhz");
    let mut rows = Vec::with_capacity(ds.n_rows());
    for r in 0..ds.n_rows() {
        let predicted_w = names
            .iter()
            .zip(preds)
            .filter_map(|(n, p)| p.get(r).filter(|v| v.is_finite()).map(|v| (n.clone(), *v)))
            .collect();
        rows.push(RowPrediction {
            kernel: ds.groups[r].clone(),
            core_mhz: core.as_ref().map(|c| c[r]),
            mem_mhz: mem.as_ref().map(|c| c[r]),
            measured_w: ds.targets[r],
            predicted_w,
        });
    }
    let mut apps = Vec::new();
    for (kernel, idx) in ds.group_rows() {
        let measured: f64 = idx.iter().map(|&r| ds.targets[r]).sum::<f64>() / idx.len() as f64;
        let mut models = BTreeMap::new();
        for (n, p) in names.iter().zip(preds) {
            if p.len() != ds.n_rows() || idx.iter().any(|&r| !p[r].is_finite()) {
                continue;
            }
            let predicted: f64 = idx.iter().map(|&r| p[r]).sum::<f64>() / idx.len() as f64;
            let mape = gpumodel_models::stats::mape(idx.iter().map(|&r| (p[r], ds.targets[r])));
            let error_pct =
                if measured != 0.0 { 100.0 * (predicted - measured).abs() / measured } else { f64::NAN };
            models.insert(n.clone(), AppModelError { predicted_w: predicted, error_pct, mape_pct: mape });
        }
        apps.push(ApplicationError { kernel, rows: idx.len(), measured_w: measured, models });
    }
    apps.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    (rows, apps)
}

/// The held-out figures with their bootstrap intervals, and each model against the reference.
fn uncertainty_section(u: &Uncertainty) -> Section {
    let mut cols = vec![
        Column::new("model", "model"),
        Column::new("seeds", "seeds"),
        Column::new("mape_pct", "MAPE %"),
        Column::new("ci95_lo_pct", "95% from"),
        Column::new("ci95_hi_pct", "95% to"),
    ];
    if let Some(r) = &u.reference {
        cols.extend([
            Column::new("difference_pct", format!("− {r} (points)")),
            Column::new("difference_ci95_lo_pct", "95% from"),
            Column::new("difference_ci95_hi_pct", "95% to"),
            Column::new("share_better", format!("below {r}, share of resamples")),
        ]);
    }
    let mut s = Section::titled(
        format!(
            "Held-out MAPE with 95% intervals (bootstrap over the {} applications, {} resamples){}",
            u.applications,
            u.resamples,
            u.reference
                .as_ref()
                .map_or(String::new(), |r| format!("; the difference to `{r}` on the same resamples")),
        ),
        cols,
    );
    for m in &u.models {
        let mut row = vec![
            Cell::text(&m.model),
            Cell::int(m.seeds as i64),
            Cell::num(m.mape_pct, 2),
            Cell::num(m.ci95_pct.lo, 2),
            Cell::num(m.ci95_pct.hi, 2),
        ];
        match &m.vs_reference {
            Some(p) => row.extend([
                Cell::num(p.difference_pct, 2),
                Cell::num(p.ci95_pct.lo, 2),
                Cell::num(p.ci95_pct.hi, 2),
                Cell::num(p.share_better, 3),
            ]),
            None if u.reference.is_some() => row.extend([Cell::Empty, Cell::Empty, Cell::Empty, Cell::Empty]),
            None => {}
        }
        s.push(row);
    }
    s
}

fn metric_cells(x: &Metrics) -> Vec<Cell> {
    vec![
        Cell::num(x.mape_pct, 2),
        Cell::num(x.rmse_w, 2),
        Cell::num(x.kernel_error_pct, 2),
        Cell::text(&x.worst_kernel),
        Cell::num(x.worst_kernel_error_pct, 2),
    ]
}

impl Export for TrainReport {
    const COMMAND: &'static str = "train";

    fn preamble(&self) -> Vec<String> {
        let mut v = vec![format!(
            "Training data: {} ({} rows, {} kernels); feature set {} ({} inputs)",
            self.data.name,
            self.data.rows,
            self.data.kernels,
            self.feature_set.name,
            self.feature_set.inputs.len()
        )];
        if let Some(t) = &self.test {
            v.push(format!("Held-out test: {} ({} rows, {} kernels)", t.name, t.rows, t.kernels));
        }
        v
    }

    fn sections(&self) -> Vec<Section> {
        let mut main = Section::new(vec![
            Column::new("model", "model"),
            Column::new("protocol", "protocol"),
            Column::new("mape_pct", "MAPE %"),
            Column::new("rmse_w", "RMSE W"),
            Column::new("kernel_error_pct", "kernel err %"),
            Column::new("worst_kernel", "worst kernel"),
            Column::new("worst_kernel_error_pct", "worst %"),
        ]);
        for name in &self.model_order {
            let Some(m) = self.models.get(name) else { continue };
            for (p, x) in [
                ("held-out", &m.held_out),
                ("group-kfold", &m.group_kfold),
                ("cluster-kfold", &m.cluster_kfold),
                ("random-kfold", &m.random_kfold),
            ] {
                if let Some(x) = x {
                    let mut row = vec![Cell::text(name), Cell::text(p)];
                    row.extend(metric_cells(x));
                    main.push(row);
                }
            }
            if let Some(md) = &m.held_out_median {
                main.push(vec![
                    Cell::text(name),
                    Cell::text(format!("held-out median of {} seeds", md.seeds)),
                    Cell::num(md.mape_pct, 2),
                    Cell::num(md.rmse_w, 2),
                    Cell::num(md.kernel_error_pct, 2),
                    Cell::Empty,
                    Cell::num(md.worst_kernel_error_pct, 2),
                ]);
            }
        }
        let mut out = vec![main];
        if let Some(u) = &self.held_out_uncertainty {
            out.push(uncertainty_section(u));
        }
        if let Some(n) = &self.nested {
            let mut s = Section::titled(
                format!("Selection procedures under nested CV (outer: {} × {})", n.outer, n.folds),
                vec![
                    Column::new("validation", "chooses by"),
                    Column::new("rule", "rule"),
                    Column::new("selection_seeds", "seeds"),
                    Column::new("candidate_list", "list"),
                    Column::new("in_use", "in use"),
                    Column::new("mape_pct", "outer MAPE %"),
                    Column::new("se_pct", "± SE"),
                    Column::new("rmse_w", "RMSE W"),
                    Column::new("worst_kernel_error_pct", "worst %"),
                    Column::new("chosen", "chosen per outer fold"),
                ],
            );
            for p in &n.procedures {
                s.push(vec![
                    Cell::text(p.validation),
                    Cell::text(p.rule),
                    Cell::int(p.selection_seeds as i64),
                    Cell::text(p.candidate_list),
                    Cell::text(if p.in_use { "yes" } else { "" }),
                    Cell::num(p.outer.mape_pct, 2),
                    Cell::num(p.outer_se_pct, 2),
                    Cell::num(p.outer.rmse_w, 2),
                    Cell::num(p.outer.worst_kernel_error_pct, 2),
                    Cell::text(p.chosen_per_fold.join(" ")),
                ]);
            }
            out.push(s);
        }
        if !self.applications.is_empty() {
            let models: Vec<&String> = self
                .model_order
                .iter()
                .filter(|n| self.applications.iter().any(|a| a.models.contains_key(*n)))
                .collect();
            let mut cols = vec![
                Column::new("kernel", "application"),
                Column::new("rows", "rows"),
                Column::new("measured_w", "measured W"),
            ];
            cols.extend(models.iter().map(|n| Column::new(format!("{n}_error_pct"), format!("{n} err %"))));
            let mut s = Section::titled(
                format!(
                    "Average-power error per application ({}, |mean predicted − mean measured| / mean measured)",
                    self.rows_protocol
                ),
                cols,
            );
            for a in &self.applications {
                let mut row =
                    vec![Cell::text(&a.kernel), Cell::int(a.rows as i64), Cell::num(a.measured_w, 1)];
                row.extend(models.iter().map(|n| Cell::opt(a.models.get(*n).map(|e| e.error_pct), 2)));
                s.push(row);
            }
            out.push(s);
        }
        out
    }

    fn notes(&self) -> Vec<String> {
        let mut v = vec![format!("Headline protocol: {}", self.headline)];
        if let Some(p) = &self.peer {
            v.push(format!("Peer baseline: `{p}` is Guerreiro et al.'s physical DVFS model (TPDS'19 form), fitted by gpumodel on the same data"));
        }
        match &self.selection {
            Some(s) => {
                let mut line = format!("Default model: {} ({}", s.chosen, s.how);
                if !s.candidates.is_empty() && s.criterion != "none" {
                    let c: Vec<String> = s
                        .candidates
                        .iter()
                        .map(|c| format!("{} {:.2}±{:.2}%", c.model, c.cv_mape_pct, c.cv_se_pct))
                        .collect();
                    line += &format!(", {}: {} MAPE ± SE {}", s.criterion, s.validation, c.join(", "));
                }
                line += if self.test.is_some() { "; the held-out test set played no part in the choice)" } else { ")" };
                v.push(line);
            }
            None => v.push(
                "Default model: none chosen (grouped CV was skipped; keep --group-folds ≥ 2 or pass --select MODEL)".into(),
            ),
        }
        if let Some(why) = &self.physical_not_applicable {
            v.push(format!("Physical DVFS model not fitted: {why}"));
        }
        if let Some(why) = &self.held_out_uncertainty_skipped {
            v.push(format!("Held-out intervals: {why}"));
        }
        if let Some(n) = &self.nested {
            v.push(format!(
                "Nested CV ({} outer {} folds, each procedure choosing on the outer training side only): see the procedures table",
                n.folds, n.outer
            ));
        }
        for a in &self.artifacts {
            v.push(format!("wrote {a}"));
        }
        v
    }
}

/// One candidate of the default-model choice with the CV figures it was judged by.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub model: String,
    /// What the one-standard-error rule counts as simpler: rank, then network weights.
    pub complexity: Complexity,
    /// The model's inputs (its input set).
    pub inputs: Vec<String>,
    pub group_kfold: Metrics,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_kfold: Option<Metrics>,
    /// The pooled MAPE of the validation the choice was made by (`Selection::validation`), %.
    pub cv_mape_pct: f64,
    /// Standard error of that validation's per-fold MAPEs (with several selection seeds: of the
    /// per-fold MAPEs averaged over the seeds), %.
    pub cv_se_pct: f64,
    /// The pooled CV MAPE of each selection seed (`--selection-seeds`); `cv_mape_pct` is their mean.
    pub cv_mape_pct_per_seed: Vec<f64>,
}

/// The choice of the default model and the evidence for it.
#[derive(Debug, Clone, Serialize)]
pub struct Selection {
    pub chosen: String,
    /// `cross-validation on the training data` or `fixed by --select`.
    pub how: String,
    /// e.g. `1se over cluster-kfold` or `none`.
    pub criterion: String,
    /// The folds the choice was judged by.
    pub validation: &'static str,
    /// `min` or `1se`.
    pub rule: &'static str,
    /// Network seeds each candidate's CV figures were averaged over (`--selection-seeds`).
    pub selection_seeds: usize,
    pub candidates: Vec<Candidate>,
}

/// Nested cross-validation of the selection procedures: the outer folds score what each procedure
/// (a validation and a rule, choosing on the outer training side only) would have shipped.
#[derive(Debug, Clone, Serialize)]
pub struct Nested {
    /// Kind of the outer folds (`group-kfold`, `cluster-kfold`).
    pub outer: &'static str,
    pub folds: usize,
    pub procedures: Vec<Procedure>,
}

/// One selection procedure under nested CV.
#[derive(Debug, Clone, Serialize)]
pub struct Procedure {
    /// Inner folds the procedure chooses by.
    pub validation: &'static str,
    pub rule: &'static str,
    /// Network seeds the inner CV figures are averaged over (`--selection-seeds`).
    pub selection_seeds: usize,
    /// `all`: the run's candidate list; `default`: only its members of the default list
    /// ([`default_candidates`]), `base`: only its members of the base list ([`BASE_CANDIDATES`]) —
    /// each scored from the same fits when the run adds candidates to it.
    pub candidate_list: &'static str,
    /// This run's own procedure.
    pub in_use: bool,
    /// Pooled outer out-of-fold figures of the chosen models.
    pub outer: Metrics,
    /// Standard error of the per-outer-fold MAPEs, %.
    pub outer_se_pct: f64,
    /// The model chosen in each outer fold.
    pub chosen_per_fold: Vec<String>,
}

/// Picks the default by `rule` over the `validation` figures of the candidates (see
/// [`crate::selection`]). `fixed` names a model to take regardless.
pub fn select_default(
    candidates: Vec<Candidate>,
    fixed: Option<&str>,
    validation: Validation,
    rule: Rule,
    selection_seeds: usize,
) -> Result<Selection> {
    if let Some(name) = fixed {
        return Ok(Selection {
            chosen: name.to_string(),
            how: "fixed by --select".into(),
            criterion: "none".into(),
            validation: validation.name(),
            rule: rule.name(),
            selection_seeds,
            candidates,
        });
    }
    let scored: Vec<Scored> = candidates
        .iter()
        .map(|c| Scored {
            model: c.model.clone(),
            mape_pct: c.cv_mape_pct,
            se_pct: c.cv_se_pct,
            complexity: c.complexity,
        })
        .collect();
    let chosen = choose(rule, &scored).ok_or_else(|| {
        Error::Invalid(
            "choosing the default model needs cross-validation: keep --group-folds ≥ 2, or fix the choice \
             with --select MODEL"
                .into(),
        )
    })?;
    Ok(Selection {
        chosen,
        how: "cross-validation on the training data".into(),
        criterion: if selection_seeds > 1 {
            format!("{} over {} averaged over {selection_seeds} seeds", rule.name(), validation.name())
        } else {
            format!("{} over {}", rule.name(), validation.name())
        },
        validation: validation.name(),
        rule: rule.name(),
        selection_seeds,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(model: &str, mape_pct: f64, se_pct: f64) -> Candidate {
        let m = Metrics::score(&[100.0 * (1.0 + mape_pct / 100.0)], &[100.0], &["k".to_string()]).unwrap();
        let rank = match model {
            "mlr+" => 4,
            "physical" => 8,
            "bpann" => 12,
            _ => 16,
        };
        Candidate {
            model: model.into(),
            complexity: Complexity { rank, params: 69 },
            inputs: Vec::new(),
            group_kfold: m,
            cluster_kfold: None,
            cv_mape_pct: mape_pct,
            cv_se_pct: se_pct,
            cv_mape_pct_per_seed: vec![mape_pct],
        }
    }

    #[test]
    fn the_rule_chooses_from_the_cv_figures_unless_the_choice_is_fixed() {
        let c = vec![cand("bpann", 6.0, 0.5), cand("physical", 5.0, 0.5), cand("mlr+", 9.0, 0.5)];
        let (g, cl) = (Validation::GroupKfold, Validation::ClusterKfold);
        let s = select_default(c.clone(), None, g, Rule::Min, 1).unwrap();
        assert_eq!(s.chosen, "physical");
        assert_eq!(s.candidates.len(), 3);
        let c2 = vec![cand("physical+bpann-lbfgs", 4.0, 1.5), cand("physical", 5.0, 0.5)];
        assert_eq!(
            select_default(c2.clone(), None, cl, Rule::Min, 1).unwrap().chosen,
            "physical+bpann-lbfgs"
        );
        let s = select_default(c2, None, cl, Rule::OneSe, 1).unwrap();
        assert_eq!((s.chosen.as_str(), s.criterion.as_str()), ("physical", "1se over cluster-kfold"));
        let s = select_default(c, Some("bpann"), g, Rule::Min, 1).unwrap();
        assert_eq!((s.chosen.as_str(), s.how.as_str()), ("bpann", "fixed by --select"));
        let msg = select_default(Vec::new(), None, g, Rule::Min, 1).unwrap_err().to_string();
        assert!(msg.contains("--group-folds") && msg.contains("--select"), "{msg}");
    }

    #[test]
    fn candidate_names_parse_and_bad_ones_name_the_valid_ones() {
        assert_eq!(
            parse_candidate("physical+bpann-lbfgs/2").unwrap(),
            (ModelKind::PhysicalBpann, Solver::Lbfgs, 0.5)
        );
        assert_eq!(parse_candidate("mlrplus").unwrap(), (ModelKind::MlrPlus, Solver::Adam, 1.0));
        assert_eq!(file_stem("physical+bpann-lbfgs/2"), "physical-bpann-lbfgs-half");
        assert_eq!(file_stem("mlr+"), "mlrplus");
        for bad in [
            "svm",
            "mlr-lbfgs",
            "bpann/2",
            "physical/2",
            "physical+bpann/3",
            "mlr@8",
            "bpann@0",
            "bpann*1",
            "physical~titanx-clock-physics",
            "bpann~",
            "bpann.roofline",
            "physical.rooflines",
            "mlr.roofline",
        ] {
            let msg = parse_candidate(bad).unwrap_err().to_string();
            assert!(msg.contains("unknown model") && msg.contains("physical+bpann"), "{msg}");
        }
        let c = CandidateName::parse("physical+bpann-lbfgs@8x8~titanx-clock-physics*5/4").unwrap();
        assert_eq!(c.hidden, Some(vec![8, 8]));
        assert_eq!(c.features.as_deref(), Some("titanx-clock-physics"));
        assert_eq!((c.members, c.scale), (Some(5), 0.25));
        assert_eq!(c.canonical(), "physical+bpann-lbfgs@8x8~titanx-clock-physics*5/4");
        assert_eq!(file_stem(&c.canonical()), "physical-bpann-lbfgs-h8x8-titanx-clock-physics-avg5-quarter");
        assert!(!c.roofline);
        // The roofline twins: the marker rides on the physical part and survives canonicalization.
        let r = CandidateName::parse("physical.roofline+bpann-lbfgs*5/2").unwrap();
        assert!(r.roofline && r.kind == ModelKind::PhysicalBpann && r.members == Some(5) && r.scale == 0.5);
        assert_eq!(r.canonical(), "physical.roofline+bpann-lbfgs*5/2");
        assert_eq!(
            CandidateName::parse("physical.roofline-bpann").unwrap().canonical(),
            "physical.roofline+bpann"
        );
        assert_eq!(file_stem("physical.roofline+bpann-lbfgs*5/2"), "physical-roofline-bpann-lbfgs-avg5-half");
        for t in ROOFLINE_TWINS {
            assert_eq!(CandidateName::parse(t).unwrap().canonical(), *t);
            assert!(CandidateName::parse(t).unwrap().roofline);
        }
        let default = default_candidates("titanx-utilizations", false);
        assert_eq!(default[..9], *BASE_CANDIDATES);
        assert_eq!(default[9..], *SEED_ENSEMBLES);
        // The variants hold the seed ensembles too: `--variants` is a superset of the default list.
        let variants = default_candidates("titanx-utilizations", true);
        assert!(default.iter().all(|d| variants.contains(d)), "{variants:?}");
        assert_eq!(default_candidates("titanx-utilizations", true).len(), 22);
        assert_eq!(default_candidates("custom", true).len(), 18, "no input-set alternative");
        for fs in ["titanx-utilizations", "nvdvfs-rates", "custom"] {
            let names = default_candidates(fs, true);
            for name in &names {
                assert_eq!(CandidateName::parse(name).unwrap().canonical(), *name);
            }
            let stems: std::collections::BTreeSet<String> = names.iter().map(|n| file_stem(n)).collect();
            assert_eq!(stems.len(), names.len(), "two candidates would write the same file");
        }
    }

    #[test]
    fn variants_build_their_own_inputs_width_and_ensemble_and_rank_by_complexity() {
        let fs = gpumodel_models::features::builtin("titanx-utilizations").unwrap();
        let phys = PhysicalParams::from_activities(
            &["SP", "INT", "DP", "SFU", "CF", "L2", "Shared", "DRAM"].map(String::from),
            &fs.name,
        );
        let bp = BpannParams::default();
        let spec = |n: &str| CandidateSpec::new(n, &fs, &bp, &phys).unwrap();
        let base = spec("physical+bpann-lbfgs");
        let wide = spec("physical+bpann-lbfgs@8x8");
        let alt = spec("physical+bpann-lbfgs~titanx-clock-physics");
        let avg = spec("physical+bpann-lbfgs*5/2");
        assert_eq!(wide.spec.bpann.hidden, vec![8, 8]);
        assert!(alt.spec.inputs.iter().any(|i| i == "core_mhz^3"), "{:?}", alt.spec.inputs);
        assert_eq!((avg.spec.bpann.restarts, avg.spec.bpann.ensemble, avg.members), (5, true, 5));
        assert_eq!(avg.fit_key(), "physical+bpann-lbfgs*5");
        // Ranks: physical < ¼ residual < ½ residual = network < whole residual; weights break ties.
        let ranks: Vec<Complexity> =
            ["mlr", "mlr+", "physical", "physical+bpann/4", "bpann", "physical+bpann"]
                .iter()
                .map(|n| spec(n).complexity())
                .collect();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{ranks:?}");
        assert!(base.complexity() < wide.complexity());
        assert!(base.complexity() < alt.complexity());
        assert_eq!(spec("physical+bpann-lbfgs*5").complexity().params, 5 * base.complexity().params);
        // 10 inputs → 4 → 4 → 1: 44 + 20 + 5 weights.
        assert_eq!(base.complexity().params, 69);
        // α chosen inside the fit (`--l2 auto`) reaches the standalone networks only; every
        // `physical+bpann…` network keeps the fixed α.
        let auto =
            BpannParams { l2_grid: Some(crate::bpann::L2_AUTO_GRID.to_vec()), l2_folds: 5, ..bp.clone() };
        for (n, grid) in [
            ("bpann", true),
            ("bpann-lbfgs", true),
            ("bpann-lbfgs*5", true),
            ("physical+bpann", false),
            ("physical+bpann-lbfgs*5/2", false),
        ] {
            let c = CandidateSpec::new(n, &fs, &auto, &phys).unwrap();
            assert_eq!((c.spec.bpann.l2_grid.is_some(), c.spec.bpann.l2_folds > 0), (grid, grid), "{n}");
            assert_eq!(c.spec.bpann.l2, bp.l2, "{n}: the fixed α is the default");
        }
        // Mini-batches (`--batch-size`) reach the standalone Adam networks only, and the record names them
        // only when there are some (a full-batch record is as before).
        let mini = BpannParams { batch_size: 200, ..bp.clone() };
        for (n, batched) in [
            ("bpann", true),
            ("bpann*5", true),
            ("bpann-lbfgs", false),
            ("physical+bpann", false),
            ("physical+bpann/2", false),
            ("physical+bpann-lbfgs*5", false),
        ] {
            let c = CandidateSpec::new(n, &fs, &mini, &phys).unwrap();
            assert_eq!(c.spec.bpann.batch_size, if batched { 200 } else { 0 }, "{n}");
        }
        assert!(bpann_record(&bp).get("batch_size").is_none());
        let record = bpann_record(&mini);
        assert_eq!(
            (record["batch_size"].as_u64(), record["batch_learning_rate"].as_f64()),
            (Some(200), Some(1e-3))
        );
        assert!(record["backend"].as_str().unwrap_or("").contains("mini-batch Adam"), "{record}");
        // A roofline twin needs the clocks the utilizations were measured at; with them it is its plain
        // twin's recipe (same inputs and complexity: within the 1se band the lower CV figure of the two
        // wins) on its own fit.
        let msg = CandidateSpec::new("physical.roofline", &fs, &bp, &phys).unwrap_err().to_string();
        assert!(msg.contains("drop .roofline"), "{msg}");
        let clocks = Some(gpumodel_models::artifact::Roofline { core_mhz: 975.0, mem_mhz: 3505.0 });
        let phys = PhysicalParams { utilization_clocks: clocks, ..phys };
        let twin = CandidateSpec::new("physical.roofline+bpann-lbfgs*5/2", &fs, &bp, &phys).unwrap();
        let plain = CandidateSpec::new("physical+bpann-lbfgs*5/2", &fs, &bp, &phys).unwrap();
        assert!(twin.spec.physical.roofline && !plain.spec.physical.roofline);
        assert_eq!(
            (twin.spec.inputs.clone(), twin.complexity()),
            (plain.spec.inputs.clone(), plain.complexity())
        );
        assert_eq!(twin.fit_key(), "physical.roofline+bpann-lbfgs*5");
        // Candidates whose networks fit different residuals never share a fit.
        let mut rel = CandidateSpec::new("physical+bpann-lbfgs*5/2", &fs, &bp, &phys).unwrap();
        rel.spec.residual = Residual::Relative;
        assert_ne!(rel.fit_key(), plain.fit_key());
        // … nor do gated and ungated networks.
        let mut gated = rel.clone();
        gated.spec.gate = GateForm::Nearest;
        assert_ne!(gated.fit_key(), rel.fit_key());
        // A hand-built name with the marker on a kind without a physical part spells that kind.
        for kind in [ModelKind::Bpann, ModelKind::Mlr, ModelKind::MlrPlus] {
            let c = CandidateName { kind, roofline: true, ..CandidateName::parse("physical").unwrap() };
            assert_eq!(c.canonical(), kind.name());
        }
    }

    #[test]
    fn a_halved_residual_is_the_mean_of_physical_and_physical_plus_bpann() {
        use gpumodel_models::artifact::{Activation, Dense, FORMAT_VERSION, Scaling};
        // A one-input "network" y = 3x + 1 (standardized), target scaling mean 2, std 4: output 4(3x+1)+2.
        let a = ModelArtifact {
            format_version: FORMAT_VERSION,
            kind: ModelKind::Bpann,
            inputs: vec!["x".into()],
            target: "power_w".into(),
            feature_set: "t".into(),
            input_scaling: Scaling { mean: vec![0.0], std: vec![1.0] },
            target_scaling: Scaling { mean: vec![2.0], std: vec![4.0] },
            layers: vec![Dense {
                weights: vec![vec![3.0]],
                bias: vec![1.0],
                activation: Activation::Identity,
            }],
            base_columns: vec!["x".into()],
            training: serde_json::Value::Null,
            physical: None,
            arithmetic: None,
            residual: Default::default(),
            target_transform: Default::default(),
        };
        let half = scale_residual(&a, 0.5);
        for x in [-1.0, 0.0, 2.5] {
            assert!((half.predict_one(&[x]) - 0.5 * a.predict_one(&[x])).abs() < 1e-12);
        }
    }
}
