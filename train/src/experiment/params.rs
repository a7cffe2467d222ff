//! What `gpumodel train` is asked to do, checked in two stages as linfa checks its parameters: the
//! settings alone ([`TrainParams::check`], before any file is opened), then against the data
//! ([`CheckedParams::prepare`], before any fit). Every error is one line that names the setting and
//! says what to do.

use super::candidates::{CANDIDATE_HELP, CandidateName, CandidateSpec, DEFAULT_CANDIDATES, needs_physical};
use super::data::{DataInfo, open_dataset, physical_roles};
use super::run::RunParams;
use crate::bpann::BpannParams;
use crate::physical::PhysicalParams;
use crate::{Error, Result};
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::Opened;
use gpumodel_models::{Dataset, FeatureSet, Table, features};
use std::path::Path;

/// Network seeds the default selection averages each candidate's CV figures over when it chooses by CV.
pub const DEFAULT_SELECTION_SEEDS: usize = 3;

/// Unchecked settings of one training run.
#[derive(Debug, Clone)]
pub struct TrainParams {
    /// Training data: a registered dataset name or a file path.
    pub data: String,
    /// Format of a file given by path (`None`: from the registry, or guessed).
    pub import: Option<Format>,
    /// Held-out test data; `None`: the registry's test set of `data`, if any.
    pub test: Option<String>,
    /// Score no held-out test set even when the registry names one.
    pub no_test: bool,
    /// A built-in feature set's name or a TOML file; `None`: the data's default input set.
    pub features: Option<String>,
    /// Skip data rows that do not parse instead of stopping at the first.
    pub skip_bad_rows: bool,
    /// Candidate model names; empty: [`DEFAULT_CANDIDATES`].
    pub models: Vec<String>,
    /// The model that becomes the default; `None`: chosen by grouped CV on the training data.
    pub select: Option<String>,
    /// Network seeds the CV figures of the choice are averaged over; `None`: 3 when choosing by CV.
    pub selection_seeds: Option<usize>,
    /// Also run leave-cluster-out CV.
    pub cluster_cv: bool,
    /// Bootstrap resamples of the held-out figures' intervals (0: none).
    pub bootstrap: usize,
    /// The networks' settings (the candidates set solver, restarts and averaging).
    pub bpann: BpannParams,
    /// Seed of the networks and of the CV shuffles.
    pub seed: u64,
    /// Held-out fits per network (seed, seed + 1000, …); the median is reported.
    pub seeds: usize,
    /// Network restarts inside each CV fold.
    pub cv_restarts: usize,
    /// Random k-fold folds (0: skipped) and grouped k-fold folds (0: skipped).
    pub folds: usize,
    pub group_folds: usize,
    /// The command line as typed, recorded in the artifacts.
    pub command: String,
}

impl Default for TrainParams {
    fn default() -> Self {
        TrainParams {
            data: "guerreiro-titanx-micro".into(),
            import: None,
            test: None,
            no_test: false,
            features: None,
            skip_bad_rows: false,
            models: Vec::new(),
            select: None,
            selection_seeds: None,
            cluster_cv: false,
            bootstrap: 2000,
            bpann: BpannParams::default(),
            seed: 1,
            seeds: 1,
            cv_restarts: 1,
            folds: 10,
            group_folds: 5,
            command: "gpumodel train".into(),
        }
    }
}

/// Settings that passed [`TrainParams::check`].
#[derive(Debug, Clone)]
pub struct CheckedParams {
    params: TrainParams,
    /// Candidate names as written everywhere.
    names: Vec<String>,
    models_given: bool,
    fixed: Option<String>,
    selection_seeds: usize,
}

/// A run ready to start: the settings, the training and test data.
#[derive(Debug)]
pub struct Prepared {
    pub run: RunParams,
    pub train: Dataset,
    pub test: Option<Dataset>,
    /// Things the user should know that do not stop the run (one line each).
    pub notes: Vec<String>,
}

fn bad<T>(m: String) -> Result<T> {
    Err(Error::Params(m))
}

impl TrainParams {
    /// Checks the settings that need no data.
    pub fn check(self) -> Result<CheckedParams> {
        let models_given = !self.models.is_empty();
        let names: Vec<String> = if models_given {
            let given: Vec<&str> = self.models.iter().map(|m| m.trim()).filter(|m| !m.is_empty()).collect();
            if given.is_empty() {
                return bad(format!("--models is empty: name at least one of {CANDIDATE_HELP}"));
            }
            given.iter().map(|n| CandidateName::parse(n).map(|c| c.name())).collect::<Result<_>>()?
        } else {
            DEFAULT_CANDIDATES.iter().map(|s| s.to_string()).collect()
        };
        let fixed = match self.select.as_deref().map(str::trim) {
            None | Some("cv") => None,
            Some(m) => {
                let m = CandidateName::parse(m)
                    .map_err(|_| Error::Params(format!("--select {m}: use cv or one of {CANDIDATE_HELP}")))?
                    .name();
                if !names.contains(&m) {
                    let list = if models_given {
                        "--models; add it there"
                    } else {
                        "the default list; name it in --models"
                    };
                    return bad(format!("--select {m}: that model is not in {list}"));
                }
                Some(m)
            }
        };
        self.bpann.clone().check()?;
        if self.seeds == 0 || self.seeds > 100 {
            return bad(format!("--seeds {} must be between 1 and 100", self.seeds));
        }
        if self.folds == 1 || self.group_folds == 1 {
            return bad("--folds and --group-folds must be 0 (skip) or at least 2".into());
        }
        if (1..100).contains(&self.bootstrap) || self.bootstrap > 1_000_000 {
            return bad(format!(
                "--bootstrap {}: give 0 (no intervals) or between 100 and 1000000 resamples",
                self.bootstrap
            ));
        }
        if self.cv_restarts == 0 || self.cv_restarts > 100 {
            return bad(format!("--cv-restarts {} must be between 1 and 100", self.cv_restarts));
        }
        let chooses_by_cv = self.group_folds > 0 && fixed.is_none();
        let selection_seeds = match self.selection_seeds {
            Some(k) if k == 0 || k > 20 => {
                return bad(format!("--selection-seeds {k} must be between 1 and 20"));
            }
            Some(k) if k > 1 && !chooses_by_cv => {
                return bad(
                    "--selection-seeds averages the CV figures --select cv chooses by: keep --group-folds ≥ 2 and --select cv"
                        .into(),
                );
            }
            Some(k) => k,
            None if chooses_by_cv => DEFAULT_SELECTION_SEEDS,
            None => 1,
        };
        Ok(CheckedParams { params: self, names, models_given, fixed, selection_seeds })
    }
}

/// The feature set of a run: the one named (`explicit`), or the data's default input set.
fn feature_set(named: Option<&str>, opened: &Opened) -> Result<FeatureSet> {
    if let Some(f) = named {
        let p = Path::new(f);
        if p.exists() {
            return Ok(FeatureSet::from_toml_file(p)?);
        }
        return Ok(features::builtin(f)?);
    }
    match opened.format {
        Format::Guerreiro => Ok(features::guerreiro_default(&opened.imported.table)?),
        Format::Nvdvfs => Ok(features::builtin("nvdvfs-rates")?),
        Format::Table => Err(Error::Params(format!(
            "{}: a plain table has no default feature set: pass --features NAME|FILE.toml (built-ins: {})",
            opened.path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
            features::BUILTIN.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The training or test rows of `table` for the inputs of `fs`.
fn dataset(table: &mut Table, fs: &FeatureSet) -> Result<Dataset> {
    features::derive_columns(table, &fs.inputs)?;
    Ok(Dataset::from_table(table, fs)?)
}

/// The inputs of `fs` that take one value on every row of `table`, with that value.
fn constant_inputs(table: &Table, fs: &FeatureSet) -> Result<Vec<(String, f64)>> {
    let mut t = table.clone();
    Ok(dataset(&mut t, fs)?.constant_inputs())
}

impl CheckedParams {
    /// The candidate names of the run (before the data may rule the physical ones out).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Opens the data and checks the settings against it: the feature set, the physical model's roles,
    /// the inputs every candidate reads. A constant input of the data's default input set is left out
    /// (a note says so); a constant input the user named is an error.
    pub fn prepare(self) -> Result<Prepared> {
        let CheckedParams { params: p, mut names, models_given, fixed, selection_seeds } = self;
        let bad_rows = if p.skip_bad_rows { BadRows::Skip } else { BadRows::Fail };
        let (mut opened, train_info) = open_dataset(&p.data, p.import, bad_rows)?;
        let mut fs = feature_set(p.features.as_deref(), &opened)?;
        let mut notes = Vec::new();
        let mut dropped = Vec::new();
        let constant = constant_inputs(&opened.imported.table, &fs)
            .map_err(|e| Error::Invalid(format!("training data {}: {e}", train_info.name)))?;
        if let Some((name, v)) = constant.first() {
            if p.features.is_some() {
                return bad(format!(
                    "training data {}: input '{name}' is {v} on every row, so it carries no information: remove it from the feature set (--features FILE.toml)",
                    train_info.name
                ));
            }
            for (name, v) in &constant {
                notes.push(format!(
                    "note: input '{name}' is {v} on every row of {}: left out of the default input set",
                    train_info.name
                ));
                dropped.push(name.clone());
            }
            fs.inputs.retain(|i| !dropped.contains(i));
            fs.mlr_base.retain(|i| !dropped.contains(i));
        }
        let mut physical_not_applicable = None;
        let phys = if names.iter().any(|n| needs_physical(n)) {
            let table = &opened.imported.table;
            match physical_roles(table, opened.format, &fs.name, &fs.inputs, &dropped) {
                Ok(roles) => roles.check()?,
                Err(why) if !models_given => {
                    // The default list adapts to the data; an explicit request is an error.
                    names.retain(|n| !needs_physical(n));
                    physical_not_applicable = Some(why);
                    PhysicalParams::default()
                }
                Err(why) => {
                    return bad(format!(
                        "--models physical: {why}; the physical DVFS model needs core_mhz and mem_mhz at several core clock levels and activity columns — leave physical out of --models"
                    ));
                }
            }
        } else {
            PhysicalParams::default()
        };
        if let Some(m) = &fixed
            && !names.contains(m)
        {
            return bad(format!(
                "--select {m}: {}",
                physical_not_applicable.as_deref().unwrap_or("not fitted")
            ));
        }
        let candidates =
            names.iter().map(|n| CandidateSpec::new(n, &fs, &p.bpann, &phys)).collect::<Result<Vec<_>>>()?;
        // The data holds the feature set's inputs and every candidate's (the physical model's activities).
        let mut data_fs = fs.clone();
        for i in candidates.iter().flat_map(|c| c.spec.inputs.iter()) {
            if !data_fs.inputs.contains(i) {
                data_fs.inputs.push(i.clone());
            }
        }
        let train = dataset(&mut opened.imported.table, &data_fs)
            .map_err(|e| Error::Invalid(format!("training data {}: {e}", train_info.name)))?;
        zero_targets(&train, "training data", &train_info.name)?;
        let test_spec = if p.no_test {
            None
        } else {
            p.test.clone().or_else(|| opened.entry.as_ref().and_then(|e| e.test_set.clone()))
        };
        let (test, test_info): (Option<Dataset>, Option<DataInfo>) = match &test_spec {
            Some(spec) => {
                let (mut o, info) = open_dataset(spec, p.import.filter(|_| p.test.is_some()), bad_rows)?;
                let ds = dataset(&mut o.imported.table, &data_fs)
                    .map_err(|e| Error::Invalid(format!("test data {}: {e}", info.name)))?;
                zero_targets(&ds, "test data", &info.name)?;
                (Some(ds), Some(info))
            }
            None => (None, None),
        };
        // Kernels are clustered by what they do (the activity inputs: the MLR base, which holds no clock
        // term), not by the clocks they ran at.
        let cluster_inputs: Vec<String> = if fs.mlr_base.is_empty() {
            fs.inputs.iter().filter(|i| !matches!(i.as_str(), "core_mhz" | "mem_mhz")).cloned().collect()
        } else {
            fs.mlr_base.clone()
        };
        let run = RunParams {
            candidates,
            fixed,
            seed: p.seed,
            seeds: p.seeds,
            folds: p.folds,
            group_folds: p.group_folds,
            cv_restarts: p.cv_restarts,
            command: p.command,
            feature_set: fs,
            dropped_inputs: dropped,
            train_info,
            test_info,
            physical_not_applicable,
            cluster_inputs,
            selection_seeds,
            cluster_cv: p.cluster_cv,
            bootstrap: p.bootstrap,
        };
        Ok(Prepared { run, train, test, notes })
    }
}

/// A zero target makes every MAPE undefined: refused before any training, naming the row.
fn zero_targets(ds: &Dataset, what: &str, name: &str) -> Result<()> {
    match ds.targets.iter().position(|t| *t == 0.0) {
        Some(i) => bad(format!(
            "{what} {name}: row {}: the measured {} is 0, so MAPE is undefined: remove rows with zero power",
            i + 1,
            ds.target_name
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(p: TrainParams) -> String {
        p.check().map(|_| String::new()).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn settings_that_contradict_each_other_fail_before_any_data_is_read() {
        let none = || TrainParams { data: "no-such-dataset".into(), ..TrainParams::default() };
        for (p, says) in [
            (TrainParams { models: vec![" ".into()], ..none() }, "--models is empty"),
            (TrainParams { models: vec!["svm".into()], ..none() }, "unknown model 'svm'"),
            (TrainParams { select: Some("svm".into()), ..none() }, "--select svm: use cv"),
            (
                TrainParams { models: vec!["mlr".into()], select: Some("physical".into()), ..none() },
                "--select physical: that model is not in --models",
            ),
            (TrainParams { seeds: 0, ..none() }, "--seeds 0"),
            (TrainParams { folds: 1, ..none() }, "--folds and --group-folds"),
            (TrainParams { bootstrap: 50, ..none() }, "--bootstrap 50"),
            (TrainParams { cv_restarts: 0, ..none() }, "--cv-restarts 0"),
            (TrainParams { selection_seeds: Some(21), ..none() }, "--selection-seeds 21"),
            (TrainParams { selection_seeds: Some(3), group_folds: 0, ..none() }, "--group-folds"),
            (
                TrainParams { selection_seeds: Some(3), select: Some("physical".into()), ..none() },
                "--select cv",
            ),
            (
                TrainParams { bpann: BpannParams { hidden: vec![0], ..BpannParams::default() }, ..none() },
                "--hidden",
            ),
        ] {
            let msg = check(p);
            assert!(msg.contains(says), "{says}: {msg}");
            assert!(!msg.contains('\n'), "one line: {msg}");
        }
        let ok = none().check().unwrap();
        assert_eq!(ok.names(), DEFAULT_CANDIDATES);
        assert_eq!(ok.selection_seeds, DEFAULT_SELECTION_SEEDS);
        let fixed = TrainParams { select: Some("physical".into()), ..none() }.check().unwrap();
        assert_eq!((fixed.fixed.as_deref(), fixed.selection_seeds), (Some("physical"), 1));
    }
}
