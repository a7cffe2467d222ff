//! The one typed result of `gpumodel train` ([`TrainReport`]) that every output format renders, and the
//! choice of the default model from the grouped-CV figures.

use crate::metrics::Metrics;
use crate::selection::{Complexity, Rule, Scored, Validation, choose};
use crate::uncertainty::Uncertainty;
use crate::{Error, Result};
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::{Dataset, FeatureSet};
use serde::Serialize;
use std::collections::BTreeMap;

use super::data::DataInfo;

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
    /// Inputs of the data's default input set left out because they are constant on every row.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_inputs: Vec<String>,
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
    /// Models whose fit failed (a training-fit MAPE above 100 %), with the reason: reported, never written
    /// and never chosen as the default.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub failed: BTreeMap<String, String>,
}

/// A fitted model ready to write: its candidate name and the artifact (with its `training` record).
#[derive(Debug, Clone)]
pub struct Fitted {
    pub name: String,
    pub artifact: ModelArtifact,
}

/// The rows of `ds` with every model's prediction, and the per-application errors.
pub(super) fn per_row(
    ds: &Dataset,
    names: &[String],
    preds: &[&[f64]],
) -> (Vec<RowPrediction>, Vec<ApplicationError>) {
    let column =
        |name: &str| ds.feature_names.iter().position(|f| f == name).map(|j| ds.records.column(j).to_vec());
    let core = column("core_mhz");
    let mem = column("mem_mhz");
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
        v.extend(self.failed.iter().map(|(m, why)| format!("{m}: {why}")));
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
        if !self.dropped_inputs.is_empty() {
            v.push(format!(
                "Left out of the default input set, constant on every training row: {}",
                self.dropped_inputs.join(", ")
            ));
        }
        if let Some(why) = &self.physical_not_applicable {
            v.push(format!("Physical DVFS model not fitted: {why}"));
        }
        if let Some(why) = &self.held_out_uncertainty_skipped {
            v.push(format!("Held-out intervals: {why}"));
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

/// Picks the default by the one-standard-error rule over the grouped-CV figures of the candidates (see
/// [`crate::selection`]). `fixed` names a model to take regardless.
pub fn select_default(
    candidates: Vec<Candidate>,
    fixed: Option<&str>,
    selection_seeds: usize,
) -> Result<Selection> {
    let (validation, rule) = (Validation::GroupKfold, Rule::OneSe);
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

    fn cand(model: &str, mape_pct: f64, se_pct: f64, rank: u32) -> Candidate {
        let m = Metrics::score(&[100.0 * (1.0 + mape_pct / 100.0)], &[100.0], &["k".to_string()]).unwrap();
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
    fn the_simplest_model_within_one_standard_error_is_chosen_unless_the_choice_is_fixed() {
        let c = vec![cand("physical-bpann-lbfgs", 4.0, 1.5, 16), cand("physical", 5.0, 0.5, 8)];
        let s = select_default(c.clone(), None, 1).unwrap();
        assert_eq!((s.chosen.as_str(), s.criterion.as_str()), ("physical", "1se over group-kfold"));
        let far = vec![cand("physical-bpann-lbfgs", 4.0, 0.5, 16), cand("physical", 5.0, 0.5, 8)];
        assert_eq!(select_default(far, None, 3).unwrap().chosen, "physical-bpann-lbfgs");
        let s = select_default(c, Some("physical-bpann-lbfgs"), 1).unwrap();
        assert_eq!((s.chosen.as_str(), s.how.as_str()), ("physical-bpann-lbfgs", "fixed by --select"));
        let msg = select_default(Vec::new(), None, 1).unwrap_err().to_string();
        assert!(msg.contains("--group-folds") && msg.contains("--select"), "{msg}");
    }
}
