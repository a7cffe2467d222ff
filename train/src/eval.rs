//! Evaluation protocols: (a) the paper's k-fold cross-validation over random samples,
//! (b) grouped k-fold that leaves whole kernels out, (c) a held-out test set. Cross-validation pools the
//! out-of-fold predictions of every fold and scores them once.

use crate::bpann::BpannParams;
use crate::metrics::Metrics;
use crate::mlr::fit_mlr;
use crate::physical::PhysicalParams;
use crate::{Error, Result};
use gpumodel_models::artifact::{ModelArtifact, ModelKind, Residual};
use gpumodel_models::{Dataset, FeatureSet, Fold};
use serde::Serialize;

/// An evaluation protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// k folds over randomly shuffled rows (the paper's protocol).
    RandomKfold,
    /// k folds of whole groups (kernels): no kernel is in both the train and the test side.
    GroupKfold,
    /// Train on the whole training set, test on a separate held-out file.
    HeldOut,
}

impl Protocol {
    /// Name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::RandomKfold => "random-kfold",
            Protocol::GroupKfold => "group-kfold",
            Protocol::HeldOut => "held-out",
        }
    }
}

/// Which model to fit, and how.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    pub kind: ModelKind,
    /// BP-ANN hyper-parameters (ignored by MLR / MLR+).
    pub bpann: BpannParams,
    /// Inputs of this model: the MLR base subset for MLR, every input otherwise.
    pub inputs: Vec<String>,
    pub feature_set: String,
    /// Physical DVFS model roles (used by `physical` and `physical+bpann`).
    pub physical: PhysicalParams,
}

impl ModelSpec {
    /// The three models of the paper on a feature set: BP-ANN and MLR+ on every input, MLR on the base set.
    /// The physical model reads `physical`'s inputs; `physical+bpann` the feature set's and those.
    pub fn for_feature_set(
        kind: ModelKind,
        fs: &FeatureSet,
        bpann: &BpannParams,
        physical: &PhysicalParams,
    ) -> ModelSpec {
        let inputs = match kind {
            ModelKind::Mlr => fs.base_inputs().to_vec(),
            ModelKind::Physical => physical.inputs(),
            ModelKind::PhysicalBpann => {
                let mut v = fs.inputs.clone();
                v.extend(physical.inputs().into_iter().filter(|i| !fs.inputs.contains(i)));
                v
            }
            _ => fs.inputs.clone(),
        };
        let mut bpann = bpann.clone();
        bpann.feature_set = fs.name.clone();
        let mut physical = physical.clone();
        physical.feature_set = fs.name.clone();
        ModelSpec { kind, bpann, inputs, feature_set: fs.name.clone(), physical }
    }

    /// Fits this model on `ds` (which must hold at least `self.inputs`).
    pub fn fit(&self, ds: &Dataset, progress: &mut dyn FnMut(u64)) -> Result<ModelArtifact> {
        let sub = ds.select_features(&self.inputs)?;
        match self.kind {
            ModelKind::Bpann => Ok(self.bpann.fit_report(&sub, progress)?.artifact),
            ModelKind::Physical => self.physical.fit(&sub),
            ModelKind::PhysicalBpann => {
                // The network learns what the physical model leaves, relative to it: fit the physics,
                // then the BP-ANN on `y/P − 1` of the same training rows (its squared error is the
                // squared relative error MAPE scores); the artifact predicts `P·(1 + network)`.
                let phys = self.physical.fit(&sub)?;
                let base = predict(&phys, &sub)?;
                let mut resid = sub.clone();
                for (t, b) in resid.targets.iter_mut().zip(&base) {
                    *t = relative_residual(*t, *b)?;
                }
                let mut net = self.bpann.fit_report(&resid, progress)?.artifact;
                net.kind = ModelKind::PhysicalBpann;
                net.physical = phys.physical;
                net.residual = Some(Residual::Relative);
                net.check()?;
                Ok(net)
            }
            kind => fit_mlr(&sub, &self.feature_set, kind),
        }
    }

    /// Progress units one fit reports.
    pub fn progress_len(&self) -> u64 {
        match self.kind {
            ModelKind::Bpann | ModelKind::PhysicalBpann => self.bpann.progress_len(),
            _ => 0,
        }
    }
}

/// Predicts every row of `ds` with `model`, checking that the data has the model's inputs.
pub fn predict(model: &ModelArtifact, ds: &Dataset) -> Result<Vec<f64>> {
    let idx = model.check_inputs(&ds.feature_names)?;
    let x = ds.records.select(ndarray::Axis(1), &idx);
    Ok(model.predict(x.view()).to_vec())
}

/// What a `physical+bpann` network is fitted to on a row with power `y` and physical-model power `p`:
/// `y/p − 1`, applied back as `p·(1 + network)`. It needs a positive, finite `p` and a finite quotient
/// (a `p` so small that `y/p` overflows is refused too).
fn relative_residual(y: f64, p: f64) -> Result<f64> {
    let r = y / p - 1.0;
    if p > 0.0 && p.is_finite() && r.is_finite() {
        Ok(r)
    } else {
        Err(Error::Invalid(format!(
            "the physical model predicts {p} W on a training row (measured {y} W), so the residual network cannot fit its relative error there: leave physical-bpann out of --models"
        )))
    }
}

/// Scores a fitted model on a dataset.
pub fn evaluate(model: &ModelArtifact, ds: &Dataset) -> Result<Metrics> {
    let p = predict(model, ds)?;
    Metrics::score(&p, ds.targets.as_slice().unwrap_or(&ds.targets.to_vec()), &ds.groups)
}

/// Cross-validates `spec` over `folds`: fits on each train side, predicts the test side, and scores the
/// pooled out-of-fold predictions.
pub fn cross_validate(
    spec: &ModelSpec,
    ds: &Dataset,
    folds: &[Fold],
    progress: &mut dyn FnMut(u64),
) -> Result<Metrics> {
    let (mut m, _) = cross_validate_scaled(spec, ds, folds, &[1.0], progress)?;
    m.pop().ok_or_else(|| Error::Invalid("cross-validation produced no metrics".into()))
}

/// Cross-validates `spec` once per fold and scores every `scales[j]` variant of it from the same fits
/// (the residual network of `physical+bpann` scaled by `scales[j]`; 1 = the model itself). Returns the
/// metrics and the out-of-fold predictions (NaN where a row was in no test side) per variant.
pub fn cross_validate_scaled(
    spec: &ModelSpec,
    ds: &Dataset,
    folds: &[Fold],
    scales: &[f64],
    progress: &mut dyn FnMut(u64),
) -> Result<(Vec<Metrics>, Vec<Vec<f64>>)> {
    if folds.is_empty() {
        return Err(Error::Invalid("cross-validation needs at least one fold".into()));
    }
    let mut pred = vec![vec![f64::NAN; ds.n_rows()]; scales.len()];
    for f in folds {
        let model = spec.fit(&ds.select_rows(&f.train), progress)?;
        let test = ds.select_rows(&f.test);
        for (j, &s) in scales.iter().enumerate() {
            let mut m = model.clone();
            if s != 1.0 {
                for v in m.target_scaling.mean.iter_mut().chain(m.target_scaling.std.iter_mut()) {
                    *v *= s;
                }
            }
            let p = predict(&m, &test)?;
            for (&i, v) in f.test.iter().zip(p) {
                pred[j][i] = v;
            }
        }
    }
    let rows: Vec<usize> = (0..ds.n_rows()).filter(|&i| pred[0][i].is_finite()).collect();
    let sub = ds.select_rows(&rows);
    let metrics = pred
        .iter()
        .map(|pj| {
            let p: Vec<f64> = rows.iter().map(|&i| pj[i]).collect();
            Metrics::score(&p, &sub.targets.to_vec(), &sub.groups)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((metrics, pred))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2};

    #[test]
    fn an_artifact_from_another_feature_set_is_a_clear_error() {
        let ds = Dataset {
            records: Array2::from_shape_fn((20, 2), |(i, j)| (i * (j + 2) % 7) as f64),
            targets: Array1::from_shape_fn(20, |i| 50.0 + i as f64),
            feature_names: vec!["a".into(), "b".into()],
            target_name: "power_w".into(),
            groups: (0..20).map(|i| format!("k{}", i % 4)).collect(),
        };
        let model = fit_mlr(&ds, "set-ab", ModelKind::MlrPlus).unwrap();
        let other = ds.select_features(&["a".to_string()]).unwrap();
        let msg = evaluate(&model, &other).unwrap_err().to_string();
        assert!(msg.contains("feature set 'set-ab'") && msg.contains("input(s) b"), "{msg}");
    }

    /// Power of a physical form times `1 + 0.3·U1·U2` (an interaction the physical model cannot express):
    /// 12 kernels × 4 core × 2 memory clocks.
    fn multiplicative() -> Dataset {
        let mut rows = Vec::new();
        let mut y = Vec::new();
        let mut groups = Vec::new();
        for k in 0..12 {
            let (u1, u2, d) = ((k % 4) as f64 / 3.0, ((k * 7) % 5) as f64 / 4.0, ((k * 3) % 6) as f64 / 5.0);
            for c in [600.0, 800.0, 1000.0, 1200.0] {
                for m in [2000.0, 3000.0] {
                    let (fc, fm, vc) = (c / 1000.0, m / 3000.0, 0.6 + 0.4 * c / 1000.0);
                    let p = 30.0 * vc
                        + vc * vc * fc * (20.0 + 60.0 * u1 + 25.0 * u2)
                        + 8.0
                        + fm * (5.0 + 30.0 * d);
                    rows.extend([u1, u2, d, c, m]);
                    y.push(p * (1.0 + 0.3 * u1 * u2));
                    groups.push(format!("k{k}"));
                }
            }
        }
        Dataset {
            records: Array2::from_shape_vec((y.len(), 5), rows).unwrap(),
            targets: Array1::from(y),
            feature_names: ["U1", "U2", "DRAM", "core_mhz", "mem_mhz"].map(String::from).to_vec(),
            target_name: "power_w".into(),
            groups,
        }
    }

    /// A one-restart L-BFGS relative-residual network on the physical model of [`multiplicative`]'s
    /// inputs, trained for `epochs` epochs.
    fn relative_residual_spec(epochs: usize) -> ModelSpec {
        let physical = PhysicalParams {
            ref_core_mhz: Some(1000.0),
            ref_mem_mhz: Some(3000.0),
            ..PhysicalParams::from_activities(&["U1".into(), "U2".into(), "DRAM".into()], "t")
        }
        .check()
        .unwrap();
        let bpann = BpannParams {
            solver: crate::bpann::Solver::Lbfgs,
            restarts: 1,
            max_epochs: epochs,
            patience: epochs,
            ..Default::default()
        };
        ModelSpec {
            kind: ModelKind::PhysicalBpann,
            bpann,
            inputs: physical.inputs(),
            feature_set: "t".into(),
            physical,
        }
    }

    /// The relative residual is fitted and applied the same way: the network fits `y/P − 1`, and the
    /// artifact's prediction is, computed here by hand from its two parts, `P·(1 + network)`; a mismatch
    /// between the fit's target and the artifact's combination would leave the physical model's error.
    #[test]
    fn a_relative_residual_network_is_applied_as_it_was_fitted() {
        let ds = multiplicative();
        let spec = relative_residual_spec(400);
        let physical = spec.physical.clone();
        let model = spec.fit(&ds, &mut |_| {}).unwrap();
        assert_eq!(model.residual, Some(Residual::Relative));
        let phys = physical.fit(&ds).unwrap();
        let net_only = ModelArtifact { kind: ModelKind::Bpann, physical: None, ..model.clone() };
        let (p, n, full) =
            (predict(&phys, &ds).unwrap(), predict(&net_only, &ds).unwrap(), predict(&model, &ds).unwrap());
        for i in 0..full.len() {
            assert!((full[i] - p[i] * (1.0 + n[i])).abs() < 1e-9 * full[i].abs(), "row {i}");
        }
        let y = ds.targets.to_vec();
        let (mape_phys, mape_full) =
            (crate::metrics::mape(&p, &y).unwrap(), crate::metrics::mape(&full, &y).unwrap());
        assert!(
            mape_full < 0.6 * mape_phys,
            "physical {mape_phys}%, with the relative residual {mape_full}%"
        );
    }

    #[test]
    fn a_relative_residual_target_needs_a_positive_finite_physical_power() {
        assert!((relative_residual(110.0, 100.0).unwrap() - 0.1).abs() < 1e-12);
        for p in [0.0, -5.0, f64::NAN, f64::INFINITY, 1e-320] {
            let msg = relative_residual(110.0, p).unwrap_err().to_string();
            assert!(msg.contains("leave physical-bpann out") && !msg.contains('\n'), "{p}: {msg}");
        }
    }
}
