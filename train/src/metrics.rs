//! Accuracy metrics: MAPE over samples, RMSE in watts, and the paper's per-kernel average-power error
//! (|mean predicted − mean measured| / mean measured, Song et al. §5.7), with the worst kernel.

use crate::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

fn check_lengths(pred: &[f64], actual: &[f64]) -> Result<()> {
    if pred.len() != actual.len() {
        return Err(Error::Invalid(format!("{} predictions for {} targets", pred.len(), actual.len())));
    }
    if pred.is_empty() {
        return Err(Error::Invalid("no rows to score: the evaluation set is empty".into()));
    }
    Ok(())
}

/// Mean absolute percentage error, in percent. A zero target makes MAPE undefined: that is an error
/// naming the row, not a silent infinity.
pub fn mape(pred: &[f64], actual: &[f64]) -> Result<f64> {
    check_lengths(pred, actual)?;
    if let Some(i) = actual.iter().position(|a| *a == 0.0) {
        return Err(Error::Invalid(format!(
            "row {}: the measured target is 0, so MAPE is undefined: remove rows with zero power",
            i + 1
        )));
    }
    // The workspace's one MAPE; this wrapper adds the checks a user's data needs.
    Ok(gpumodel_models::stats::mape(pred.iter().copied().zip(actual.iter().copied())))
}

/// Root mean squared error, in the target's unit (W).
pub fn rmse(pred: &[f64], actual: &[f64]) -> Result<f64> {
    check_lengths(pred, actual)?;
    let s: f64 = pred.iter().zip(actual).map(|(p, a)| (p - a) * (p - a)).sum();
    Ok((s / pred.len() as f64).sqrt())
}

/// One kernel's average-power error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelError {
    pub kernel: String,
    pub rows: usize,
    pub measured_w: f64,
    pub predicted_w: f64,
    /// |mean predicted − mean measured| / mean measured, in percent.
    pub error_pct: f64,
}

/// Per-kernel average-power errors, sorted by kernel name.
pub fn per_kernel(pred: &[f64], actual: &[f64], groups: &[String]) -> Result<Vec<KernelError>> {
    check_lengths(pred, actual)?;
    if groups.len() != pred.len() {
        return Err(Error::Invalid(format!("{} group labels for {} rows", groups.len(), pred.len())));
    }
    let mut acc: BTreeMap<&str, (usize, f64, f64)> = BTreeMap::new();
    for ((p, a), g) in pred.iter().zip(actual).zip(groups) {
        let e = acc.entry(g.as_str()).or_default();
        e.0 += 1;
        e.1 += a;
        e.2 += p;
    }
    acc.into_iter()
        .map(|(k, (n, a, p))| {
            let (m, q) = (a / n as f64, p / n as f64);
            if m == 0.0 {
                return Err(Error::Invalid(format!(
                    "kernel '{k}' has a mean measured power of 0: its relative error is undefined"
                )));
            }
            Ok(KernelError {
                kernel: k.to_string(),
                rows: n,
                measured_w: m,
                predicted_w: q,
                error_pct: 100.0 * (q - m).abs() / m,
            })
        })
        .collect()
}

/// The metrics of one model on one evaluation set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    pub rows: usize,
    pub kernels: usize,
    /// MAPE over samples, %.
    pub mape_pct: f64,
    /// RMSE, W.
    pub rmse_w: f64,
    /// Mean over kernels of the per-kernel average-power error, %.
    pub kernel_error_pct: f64,
    pub worst_kernel: String,
    pub worst_kernel_error_pct: f64,
}

impl Metrics {
    /// Scores predictions against targets, per row and per kernel (`groups`).
    pub fn score(pred: &[f64], actual: &[f64], groups: &[String]) -> Result<Metrics> {
        let pk = per_kernel(pred, actual, groups)?;
        let worst = pk
            .iter()
            .max_by(|a, b| a.error_pct.total_cmp(&b.error_pct))
            .ok_or_else(|| Error::Invalid("no kernels to score".into()))?;
        Ok(Metrics {
            rows: pred.len(),
            kernels: pk.len(),
            mape_pct: mape(pred, actual)?,
            rmse_w: rmse(pred, actual)?,
            kernel_error_pct: pk.iter().map(|k| k.error_pct).sum::<f64>() / pk.len() as f64,
            worst_kernel: worst.kernel.clone(),
            worst_kernel_error_pct: worst.error_pct,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_values() {
        // errors: +10% and −20% → MAPE 15%; both errors are 10 W → RMSE 10.
        let p = [110.0, 40.0];
        let a = [100.0, 50.0];
        assert!((mape(&p, &a).unwrap() - 15.0).abs() < 1e-12);
        assert!((rmse(&p, &a).unwrap() - 10.0).abs() < 1e-12);
    }

    #[test]
    fn per_kernel_uses_mean_power() {
        // kernel k: measured mean 100, predicted mean 105 → 5%, although rows err by ±15%.
        let p = [115.0, 95.0, 30.0];
        let a = [100.0, 100.0, 20.0];
        let g: Vec<String> = ["k", "k", "z"].iter().map(|s| s.to_string()).collect();
        let m = Metrics::score(&p, &a, &g).unwrap();
        assert!((m.kernel_error_pct - (5.0 + 50.0) / 2.0).abs() < 1e-12);
        assert_eq!(m.worst_kernel, "z");
        assert_eq!(m.kernels, 2);
    }

    #[test]
    fn zero_target_is_an_error_not_infinity() {
        let msg = mape(&[1.0, 2.0], &[1.0, 0.0]).unwrap_err().to_string();
        assert!(msg.contains("row 2") && msg.contains("MAPE is undefined"), "{msg}");
        assert!(rmse(&[], &[]).is_err());
    }
}
