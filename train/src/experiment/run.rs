//! One training run: every candidate fitted on the training data and scored by every protocol asked for
//! (held-out test set, random, grouped and leave-cluster-out k-fold), and the default chosen by grouped
//! CV on the training data only — never by the test set.

use super::candidates::CandidateSpec;
use super::data::DataInfo;
use super::report::{Candidate, Fitted, Median, ModelReport, TrainReport, per_row, select_default};
use crate::bpann::BpannParams;
use crate::eval::{ModelSpec, cross_validate_scaled, evaluate, predict};
use crate::metrics::Metrics;
use crate::physical::PhysicalParams;
use crate::selection::{FoldFigures, Validation, fold_figures, seed_averaged};
use crate::uncertainty::{self, SeedPredictions, Uncertainty};
use crate::{Error, Result};
use gpumodel_models::artifact::{ModelArtifact, ModelKind};
use gpumodel_models::stats::median;
use gpumodel_models::{Dataset, FeatureSet, Fold};

/// The protocols and settings of one run (made by [`super::CheckedParams::prepare`]).
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
    /// Inputs of the data's default input set left out because they are constant.
    pub dropped_inputs: Vec<String>,
    pub train_info: DataInfo,
    pub test_info: Option<DataInfo>,
    pub physical_not_applicable: Option<String>,
    /// The columns leave-cluster-out folds cluster kernels by (the feature set's activity inputs).
    pub cluster_inputs: Vec<String>,
    /// The CV figures the choice compares are averaged over this many network seeds (`seed`,
    /// `seed + 1000`, …) on the same folds ([`crate::selection::seed_averaged`]); 1 = one seed.
    pub selection_seeds: usize,
    /// Leave-cluster-out CV of every candidate.
    pub cluster_cv: bool,
    /// Resamples of the test set's applications for the held-out figures' intervals
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

/// What the fits of a run leave, per candidate.
struct Fits {
    reports: Vec<ModelReport>,
    artifacts: Vec<Option<ModelArtifact>>,
    /// Every seed's held-out predictions (the first seed's are the written artifact's).
    held_out: Vec<Vec<Vec<f64>>>,
    /// Out-of-fold predictions of grouped CV.
    grouped: Vec<Vec<f64>>,
    /// Per selection seed, the grouped-CV figures the choice is made by.
    selection: Vec<Vec<FoldFigures>>,
}

/// The network of a `physical-bpann` artifact scaled by `s` (exact: its output layer is linear).
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

/// A network's recorded hyper-parameters.
fn bpann_record(b: &BpannParams) -> serde_json::Value {
    serde_json::json!({
        "hidden": b.hidden, "restarts": b.restarts, "max_epochs": b.max_epochs,
        "patience": b.patience, "learning_rate": b.learning_rate, "adam_epsilon": b.epsilon,
        "l2": b.l2, "solver": b.solver.name(),
        "validation_fraction": b.validation_fraction, "validation": if b.grouped_validation { "grouped (whole kernels)" } else { "random rows" },
        "ensemble_of_restarts": b.ensemble,
        "backend": b.backend_description(),
    })
}

/// How a physical model was fitted, for the artifact's `training` record.
fn physical_record(p: &PhysicalParams) -> serde_json::Value {
    serde_json::json!({
        "form": "Guerreiro et al. TPDS'19: P = b0*Vc + Vc^2*fc*(bc + sum bi*Ui) + b1*Vm + Vm^2*fm*(bm + sum bj*Uj)",
        "fit": "alternating non-negative least squares (betas) and neighbour-bounded 1-D least squares (one voltage per clock level), until the error stops falling",
        "core_inputs": p.core_inputs, "mem_inputs": p.mem_inputs,
    })
}

impl RunParams {
    /// Candidates that share their fits (they differ only in the residual share kept), in run order.
    fn groups(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, c) in self.candidates.iter().enumerate() {
            let k = c.fit_key();
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, v)) => v.push(i),
                None => out.push((k, vec![i])),
            }
        }
        out.into_iter().map(|(_, v)| v).collect()
    }

    /// The CV fit of `spec` with selection seed `k` (0: the run's seed; k: `seed + 1000·k`). An averaging
    /// ensemble is judged as the ensemble it is (all its members); a single network by a cheaper fit
    /// with `cv_restarts` restarts.
    fn cv_spec(&self, s: &ModelSpec, k: usize) -> ModelSpec {
        let mut s = s.clone();
        if !s.bpann.ensemble {
            s.bpann.restarts = self.cv_restarts.max(1);
        }
        if k > 0 {
            s.bpann.seed = self.seed.wrapping_add(1000 * k as u64);
        }
        s
    }

    /// Under random k-fold the network's early stopping validates on a random split of rows too, so
    /// that its validation matches the protocol it is scored by (a grouped split there stops too early
    /// for a test side that shares kernels with the training side).
    fn random_cv_spec(&self, s: &ModelSpec) -> ModelSpec {
        let mut s = self.cv_spec(s, 0);
        s.bpann.grouped_validation = false;
        s
    }

    /// The folds of the random, grouped and leave-cluster-out CV of this run on `train`.
    /// Deterministic in the seed; computed once and handed to [`RunParams::run`] and
    /// [`RunParams::folds_csv`], so `--folds-out` writes exactly the partitions the run uses.
    pub fn fold_sets(&self, train: &Dataset) -> Result<FoldSets> {
        let random = if self.folds > 0 { Some(train.kfold(self.folds, self.seed)?) } else { None };
        let grouped =
            if self.group_folds > 0 { Some(train.group_kfold(self.group_folds, self.seed)?) } else { None };
        let cluster = if self.group_folds > 0 && self.cluster_cv {
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
        let cluster = if self.cluster_cv { k } else { 0 };
        // Network candidates: the selection's folds once per selection seed.
        let n_cv = self.folds as u64 + k * self.selection_seeds.max(1) as u64 + cluster;
        self.groups()
            .iter()
            .map(|m| {
                let s = &self.candidates[m[0]].spec;
                let seeds = if s.progress_len() > 0 { self.seeds as u64 } else { 1 };
                s.progress_len() * seeds + self.cv_spec(s, 0).progress_len() * n_cv
            })
            .sum()
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
            return Err(Error::Params("no candidate model to train".into()));
        }
        let n = self.candidates.len();
        let mut fits = Fits {
            reports: vec![ModelReport::default(); n],
            artifacts: vec![None; n],
            held_out: vec![Vec::new(); n],
            grouped: vec![Vec::new(); n],
            selection: vec![Vec::new(); n],
        };
        for members in self.groups() {
            self.fit_group(&members, train, test, folds, &mut fits, progress)?;
        }
        let selection = self.choose(&fits)?;
        let names: Vec<String> = self.candidates.iter().map(|c| c.name.clone()).collect();
        let (rows_protocol, rows_ds, preds): (_, _, Vec<&[f64]>) = match test {
            Some(t) => (
                "held-out",
                Some(t),
                fits.held_out.iter().map(|s| s.first().map_or(&[][..], |p| p)).collect(),
            ),
            None => (
                "group-kfold",
                folds.grouped.as_ref().map(|_| train),
                fits.grouped.iter().map(|p| &p[..]).collect(),
            ),
        };
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
                Some(self.bootstrap(t, std::mem::take(&mut fits.held_out), peer.as_deref())?)
            }
            _ => None,
        };
        let failed = self
            .candidates
            .iter()
            .zip(&fits.reports)
            .filter_map(|(c, r)| Some((c.name.clone(), unusable(r)?)))
            .collect();
        let (mut fitted, models) =
            self.records(fits.reports, fits.artifacts, held_out_uncertainty.as_ref())?;
        // Models on power inputs carry the rows' statistics, so that a profile lacking some input still
        // gets a power answer (a line on the inputs it gives; `gpumodel_models::artifact::SubsetFits`).
        let subset = subset_fits(train);
        for f in &mut fitted {
            if f.artifact.inputs == train.feature_names {
                f.artifact.subset = subset.clone();
            }
        }
        let report = TrainReport {
            failed,
            data: self.train_info.clone(),
            test: self.test_info.clone(),
            feature_set: self.feature_set.clone(),
            dropped_inputs: self.dropped_inputs.clone(),
            headline: if test.is_some() { "held-out" } else { "group-kfold" },
            model_order: names,
            models,
            peer,
            selection,
            physical_not_applicable: self.physical_not_applicable.clone(),
            held_out_uncertainty,
            held_out_uncertainty_skipped: one_application.then(|| {
                "no held-out intervals: the test set has one application, and the bootstrap draws whole applications".into()
            }),
            rows_protocol,
            rows,
            applications,
            artifacts: Vec::new(),
        };
        Ok((report, fitted))
    }

    /// Fits the candidates `members` (which share their fits) once per seed on `train`, scores them on
    /// `test` and by every CV asked for, and files the figures in `fits`.
    fn fit_group(
        &self,
        members: &[usize],
        train: &Dataset,
        test: Option<&Dataset>,
        folds: &FoldSets,
        fits: &mut Fits,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let first = &self.candidates[members[0]];
        let spec = &first.spec;
        let scales: Vec<f64> = members.iter().map(|&i| self.candidates[i].residual_scale).collect();
        let is_net = first.is_network();
        // A fit without a network is the same for every seed: one seed's figures are all of them.
        let (n_seeds, cv_seeds) = if is_net { (self.seeds, self.selection_seeds) } else { (1, 1) };
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
                    fits.held_out[members[j]].push(p);
                }
                if k == 0 {
                    fits.artifacts[members[j]] = Some(a);
                }
            }
        }
        let cv = |s: &ModelSpec, f: &Option<Vec<Fold>>, progress: &mut dyn FnMut(u64)| match f {
            Some(f) => cross_validate_scaled(s, train, f, &scales, progress).map(Some),
            None => Ok(None),
        };
        let random = cv(&self.random_cv_spec(spec), &folds.random, progress)?;
        let grouped = cv(&self.cv_spec(spec, 0), &folds.grouped, progress)?;
        let clustered = cv(&self.cv_spec(spec, 0), &folds.cluster, progress)?;
        // The selection's figures: the run's seed (the grouped CV above), then seeds 2..K on the same folds.
        if let (Some(f), Some((_, p))) = (&folds.grouped, &grouped) {
            let targets = train.targets.to_vec();
            for (j, &i) in members.iter().enumerate() {
                fits.selection[i].push(fold_figures(&p[j], &targets, f));
            }
            for k in 1..cv_seeds {
                let (_, p) = cross_validate_scaled(&self.cv_spec(spec, k), train, f, &scales, progress)?;
                for (j, &i) in members.iter().enumerate() {
                    fits.selection[i].push(fold_figures(&p[j], &targets, f));
                }
            }
        }
        for (j, &i) in members.iter().enumerate() {
            let c = &self.candidates[i];
            let model =
                fits.artifacts[i].as_ref().ok_or_else(|| Error::Invalid("no model was fitted".into()))?;
            let r = &mut fits.reports[i];
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
            r.random_kfold = random.as_ref().map(|(m, _)| m[j].clone());
            if let Some((m, p)) = &grouped {
                r.group_kfold = Some(m[j].clone());
                fits.grouped[i] = p[j].clone();
            }
            r.cluster_kfold = clustered.as_ref().map(|(m, _)| m[j].clone());
        }
        Ok(())
    }

    /// The default: chosen by grouped CV on the training data only (or fixed by `--select`). The
    /// held-out figures play no part in the choice.
    fn choose(&self, fits: &Fits) -> Result<Option<super::report::Selection>> {
        let cands: Vec<Candidate> = self
            .candidates
            .iter()
            .zip(&fits.reports)
            .zip(&fits.selection)
            .filter(|((_, r), figs)| !figs.is_empty() && unusable(r).is_none())
            .filter_map(|((c, r), figs)| {
                let (cv_mape_pct, cv_se_pct) = seed_averaged(figs);
                Some(Candidate {
                    model: c.name.clone(),
                    complexity: c.complexity(),
                    inputs: r.inputs.clone(),
                    group_kfold: r.group_kfold.clone()?,
                    cluster_kfold: r.cluster_kfold.clone(),
                    cv_mape_pct,
                    cv_se_pct,
                    cv_mape_pct_per_seed: figs.iter().map(|f| f.pooled_pct).collect(),
                })
            })
            .collect();
        if cands.is_empty() && self.fixed.is_none() {
            return Ok(None);
        }
        // Seeds only matter to networks: without one, a single figure per candidate is all there is.
        let seeds = cands.iter().map(|c| c.cv_mape_pct_per_seed.len()).max().unwrap_or(1).max(1);
        select_default(cands, self.fixed.as_deref(), seeds).map(Some)
    }

    /// The held-out figures' intervals: a bootstrap over the test set's applications.
    fn bootstrap(
        &self,
        test: &Dataset,
        held_out: Vec<Vec<Vec<f64>>>,
        peer: Option<&str>,
    ) -> Result<Uncertainty> {
        let held: Vec<SeedPredictions> = self
            .candidates
            .iter()
            .zip(held_out)
            .map(|(c, per_seed)| SeedPredictions { model: c.name.clone(), per_seed })
            .collect();
        Ok(uncertainty::bootstrap(
            &held,
            &test.targets.to_vec(),
            &test.groups,
            peer,
            self.bootstrap,
            self.seed,
        )?)
    }

    /// Each candidate's artifact with its `training` record, and its figures by name.
    fn records(
        &self,
        reports: Vec<ModelReport>,
        artifacts: Vec<Option<ModelArtifact>>,
        uncertainty: Option<&Uncertainty>,
    ) -> Result<(Vec<Fitted>, std::collections::BTreeMap<String, ModelReport>)> {
        let mut out = Vec::new();
        let mut models = std::collections::BTreeMap::new();
        for ((c, r), a) in self.candidates.iter().zip(reports).zip(artifacts) {
            let mut artifact = a.ok_or_else(|| Error::Invalid("no model was fitted".into()))?;
            let k = c.spec.kind;
            artifact.training = serde_json::json!({
                "command": self.command,
                "gpumodel_version": env!("CARGO_PKG_VERSION"),
                "model": c.name,
                "dataset": self.train_info,
                "test_dataset": self.test_info,
                "feature_set": self.feature_set.name,
                "seed": self.seed,
                "physical": c.is_physical().then(|| physical_record(&c.spec.physical)),
                "bpann": c.is_network().then(|| bpann_record(&c.spec.bpann)),
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
            if !self.dropped_inputs.is_empty() {
                artifact.training["dropped_constant_inputs"] = serde_json::json!(self.dropped_inputs);
            }
            if k == ModelKind::PhysicalBpann {
                artifact.training["residual"] = serde_json::json!(
                    "relative: the network fits y/P - 1 of the physical model P; the model predicts P*(1 + network)"
                );
            }
            if let Some((u, m)) =
                uncertainty.and_then(|u| Some((u, u.models.iter().find(|m| m.model == c.name)?)))
            {
                let mut rec = serde_json::to_value(m).map_err(|e| Error::Invalid(e.to_string()))?;
                rec["bootstrap"] = format!(
                    "{} draws of the {} test applications, seed {}",
                    u.resamples, u.applications, u.seed
                )
                .into();
                artifact.training["held_out_interval"] = rec;
            }
            // A model that cannot fit its own training rows is reported, not written as if usable.
            if unusable(&r).is_none() {
                out.push(Fitted { name: c.name.clone(), artifact });
            }
            models.insert(c.name.clone(), r);
        }
        Ok((out, models))
    }
}

/// Folds of the subset statistics: whole kernels (groups) at a time.
const SUBSET_FOLDS: usize = 5;

/// The least-squares statistics of `train` for models whose inputs are all power inputs
/// ([`gpumodel_models::power_inputs`]), folded by kernel: `None` for other inputs or fewer than two kernels.
fn subset_fits(train: &Dataset) -> Option<gpumodel_models::artifact::SubsetFits> {
    let names = &train.feature_names;
    // Power inputs and the clocks (a suite over clocks trains on both): every source gives the clocks.
    let usable =
        |n: &String| gpumodel_models::power_inputs::is_power_input(n) || n == "core_mhz" || n == "mem_mhz";
    if names.is_empty() || !names.iter().all(usable) {
        return None;
    }
    let mut groups: Vec<&String> = train.groups.iter().collect();
    groups.sort();
    groups.dedup();
    let k = SUBSET_FOLDS.min(groups.len());
    if k < 2 {
        return None;
    }
    let fold_of: Vec<usize> =
        train.groups.iter().map(|g| groups.binary_search(&g).map_or(0, |i| i % k)).collect();
    let rows: Vec<Vec<f64>> = train.records.rows().into_iter().map(|r| r.to_vec()).collect();
    gpumodel_models::artifact::SubsetFits::build(
        names,
        &rows,
        &train.targets.to_vec(),
        &fold_of,
        &format!("group-kfold by kernel, {k} folds"),
    )
}

/// A training-fit MAPE above this, %, marks a fit as failed: a model that misses its own training rows by
/// more than their size predicts nothing (a singular regression, a network that did not converge).
pub const UNUSABLE_TRAINING_MAPE_PCT: f64 = 100.0;

/// Why a fitted model is unusable, or `None` when it is usable.
pub fn unusable(r: &ModelReport) -> Option<String> {
    let m = r.training_fit.as_ref()?;
    (!m.mape_pct.is_finite() || m.mape_pct > UNUSABLE_TRAINING_MAPE_PCT).then(|| {
        format!(
            "failed: {} % MAPE on its own training rows (above {UNUSABLE_TRAINING_MAPE_PCT} %: a singular or \
             unconverged fit); not written",
            gpumodel_models::table::format_number((m.mape_pct * 10.0).round() / 10.0)
        )
    })
}

#[cfg(test)]
mod unusable_tests {
    use super::*;
    use crate::metrics::Metrics;

    /// A fit that misses its own training rows by more than their size is failed; a usable one is not.
    #[test]
    fn a_fit_worse_than_its_own_rows_is_unusable() {
        let groups = ["a".to_string(), "b".to_string()];
        let bad = Metrics::score(&[250.0, 10.0], &[100.0, 100.0], &groups).unwrap();
        let r = ModelReport { training_fit: Some(bad), ..ModelReport::default() };
        let why = unusable(&r).expect("120 % MAPE is unusable");
        assert!(why.contains("120") && why.contains("not written"), "{why}");
        let good = Metrics::score(&[101.0, 99.0], &[100.0, 100.0], &groups).unwrap();
        assert!(unusable(&ModelReport { training_fit: Some(good), ..ModelReport::default() }).is_none());
    }
}
