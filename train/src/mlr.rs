//! MLR and MLR+ (Nagasaka et al. 2010, as the baselines of Song et al. §5.7-B): ordinary least squares
//! with linfa-linear. MLR is fitted on the feature set's base subset, MLR+ on every input; both become a
//! one-layer artifact (standardized inputs, identity activation) that `gpumodel-models` evaluates.

use crate::{Error, Result};
use gpumodel_models::Dataset;
use gpumodel_models::artifact::{Activation, Dense, FORMAT_VERSION, ModelArtifact, ModelKind, Scaling};
use linfa::prelude::Fit;
use ndarray::{Array2, Axis};

/// Column means and standard deviations of `records`; a constant column gets std 1 so that it
/// standardizes to 0 instead of dividing by zero.
pub fn input_scaling(records: &Array2<f64>) -> Scaling {
    let n = records.nrows().max(1) as f64;
    let mean: Vec<f64> = records.mean_axis(Axis(0)).map(|m| m.to_vec()).unwrap_or_default();
    let std = records
        .columns()
        .into_iter()
        .zip(&mean)
        .map(|(c, m)| {
            let s = (c.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt();
            if s > 1e-12 * m.abs().max(1.0) { s } else { 1.0 }
        })
        .collect();
    Scaling { mean, std }
}

/// Standardizes `records` with `s`.
pub fn standardize(records: &Array2<f64>, s: &Scaling) -> Array2<f64> {
    let mut z = records.clone();
    for (j, mut c) in z.columns_mut().into_iter().enumerate() {
        c.mapv_inplace(|x| (x - s.mean[j]) / s.std[j]);
    }
    z
}

/// Fits ordinary least squares on every input of `ds` (select the MLR base subset first with
/// [`Dataset::select_features`]). `kind` is recorded in the artifact (MLR or MLR+).
pub fn fit_mlr(ds: &Dataset, feature_set: &str, kind: ModelKind) -> Result<ModelArtifact> {
    if ds.n_rows() <= ds.n_features() {
        return Err(Error::Invalid(format!(
            "linear regression on {} inputs needs more than {} rows; the data has {}",
            ds.n_features(),
            ds.n_features(),
            ds.n_rows()
        )));
    }
    ds.check_finite("training data")?;
    let scaling = input_scaling(&ds.records);
    let z = standardize(&ds.records, &scaling);
    // An input that is constant in the training rows (e.g. local-memory traffic when the fold holds out
    // every spilling kernel) carries no information and makes the normal equations singular: the solver
    // then gives it an arbitrary, huge weight that explodes on test rows where it is not constant. Fit on
    // the varying inputs only and give the constant ones weight 0 (the intercept absorbs their value).
    let varying: Vec<usize> =
        (0..z.ncols()).filter(|&j| z.column(j).iter().any(|v| v.abs() > 1e-12)).collect();
    let data = linfa::Dataset::new(z.select(Axis(1), &varying), ds.targets.clone());
    let fitted =
        linfa_linear::LinearRegression::new().fit(&data).map_err(|e| Error::Linear(e.to_string()))?;
    let mut weights = vec![0.0; z.ncols()];
    for (&j, w) in varying.iter().zip(fitted.params().iter()) {
        weights[j] = *w;
    }
    if weights.iter().any(|w| !w.is_finite()) || !fitted.intercept().is_finite() {
        return Err(Error::Linear("the solution is not finite".into()));
    }
    Ok(ModelArtifact {
        format_version: FORMAT_VERSION,
        kind,
        inputs: ds.feature_names.clone(),
        target: ds.target_name.clone(),
        feature_set: feature_set.to_string(),
        input_scaling: scaling,
        target_scaling: Scaling { mean: vec![0.0], std: vec![1.0] },
        layers: vec![Dense {
            weights: vec![weights],
            bias: vec![fitted.intercept()],
            activation: Activation::Identity,
        }],
        base_columns: gpumodel_models::features::base_columns(&ds.feature_names)?,
        training: serde_json::Value::Null,
        physical: None,
        arithmetic: None,
        residual: None,
        subset: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array1;

    #[test]
    fn a_constant_input_gets_weight_zero_not_an_explosion() {
        // Regression: grouped folds can leave an input all-zero in training (found on suite tables, where
        // only the spill kernels have local loads); the fit must ignore it rather than blow up on test rows.
        let records = Array2::from_shape_fn((30, 2), |(i, j)| if j == 0 { i as f64 } else { 0.0 });
        let targets = Array1::from_shape_fn(30, |i| 10.0 + i as f64);
        let ds = Dataset {
            records,
            targets,
            feature_names: vec!["a".into(), "b".into()],
            target_name: "power_w".into(),
            groups: (0..30).map(|i| i.to_string()).collect(),
        };
        let m = fit_mlr(&ds, "t", ModelKind::MlrPlus).unwrap();
        assert_eq!(m.layers[0].weights[0][1], 0.0);
        // A test row with b ≠ 0 is predicted from a alone: 10 + 5 = 15.
        assert!((m.predict_one(&[5.0, 1000.0]) - 15.0).abs() < 1e-9);
    }

    #[test]
    fn recovers_an_exact_plane() {
        // y = 3 + 2·a − 0.5·b on a non-degenerate grid: OLS must recover it exactly.
        let rows: Vec<[f64; 2]> = (0..20).map(|i| [i as f64, ((i * 7) % 5) as f64]).collect();
        let records = Array2::from_shape_fn((20, 2), |(i, j)| rows[i][j]);
        let targets = Array1::from_shape_fn(20, |i| 3.0 + 2.0 * rows[i][0] - 0.5 * rows[i][1]);
        let ds = Dataset {
            records,
            targets: targets.clone(),
            feature_names: vec!["a".into(), "b".into()],
            target_name: "power_w".into(),
            groups: (0..20).map(|i| i.to_string()).collect(),
        };
        let m = fit_mlr(&ds, "t", ModelKind::MlrPlus).unwrap();
        let p = m.predict(ds.records.view());
        for (x, y) in p.iter().zip(targets.iter()) {
            assert!((x - y).abs() < 1e-9, "{x} vs {y}");
        }
        assert!((m.predict_one(&[100.0, 0.0]) - 203.0).abs() < 1e-9);
    }

    #[test]
    fn too_few_rows_is_an_error() {
        let ds = Dataset {
            records: Array2::zeros((2, 2)),
            targets: Array1::zeros(2),
            feature_names: vec!["a".into(), "b".into()],
            target_name: "power_w".into(),
            groups: vec!["x".into(), "y".into()],
        };
        assert!(fit_mlr(&ds, "t", ModelKind::Mlr).unwrap_err().to_string().contains("more than 2 rows"));
    }
}
