//! What `validate` reports: per row, per kernel, per objective, and the whole run (serializable; the
//! CLI renders it as a table, CSV or JSON).

use crate::calibration::TimeCalibration;
use serde::Serialize;
use std::collections::BTreeMap;

/// One measured row with its predictions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowResult {
    pub kernel: String,
    pub core_mhz: f64,
    pub mem_mhz: f64,
    pub measured_time_s: f64,
    /// The timing model with the architecture's constants.
    pub model_time_s: f64,
    /// The pipeline that bounds the model's round (`memory`, `compute`, `shared`, `texture`).
    pub bound_kind: &'static str,
    /// The model's time per component (order of `gpumodel_models::timing::COMPONENTS`), seconds: where
    /// its error comes from.
    pub model_components_s: [f64; 7],
    /// Calibrated, out-of-fold.
    pub predicted_time_s: f64,
    pub measured_power_w: f64,
    /// Out-of-fold MLR power.
    pub predicted_power_w: f64,
    /// Each requested baseline's predicted time, seconds, by baseline name.
    pub baseline_time_s: BTreeMap<String, f64>,
    /// The applied (foreign) calibration's time, seconds, when one was given.
    pub applied_time_s: Option<f64>,
}

/// The optimum of one objective for one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub objective: String,
    /// (core, memory) MHz that minimizes the measured objective.
    pub best: (f64, f64),
    /// (core, memory) MHz that minimizes the predicted objective.
    pub picked: (f64, f64),
    /// Extra measured objective at the picked pair, percent.
    pub regret_pct: f64,
    /// Diagnostic: the regret when the pick uses the *measured* time with the predicted power (so only
    /// the power model can be wrong), percent.
    pub regret_measured_time_pct: f64,
    /// Diagnostic: the regret when the pick uses the predicted time with the *measured* power (so only
    /// the timing model can be wrong), percent.
    pub regret_measured_power_pct: f64,
}

/// One kernel's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelResult {
    pub kernel: String,
    pub rows: usize,
    pub bottleneck: &'static str,
    pub model_mape_pct: f64,
    pub mape_pct: f64,
    pub power_mape_pct: f64,
    /// The power-mean exponent chosen (by inner leave-one-kernel-out over the other kernels) for the
    /// fold that predicts this kernel.
    pub fold_exponent: f64,
    /// Whether the fold that predicts this kernel kept its calibration (false: the uncalibrated model
    /// beat every calibrated candidate on that fold's training kernels, so it predicts with the model).
    pub fold_calibrated: bool,
    /// The power model's input set (a [`PowerInputs`] label) chosen the same way for that fold.
    pub fold_power_inputs: &'static str,
    /// Each requested baseline's time MAPE on this kernel, percent, by baseline name.
    pub baseline_mape_pct: BTreeMap<String, f64>,
    /// The applied calibration's MAPE on this kernel, percent, when one was given.
    pub applied_mape_pct: Option<f64>,
    pub choices: Vec<Choice>,
}

/// Per-objective summary over kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectiveSummary {
    pub objective: String,
    pub median_regret_pct: f64,
    pub mean_regret_pct: f64,
    pub max_regret_pct: f64,
    /// Fraction of kernels whose picked pair is the measured best.
    pub hit_rate: f64,
    /// Diagnostic medians (see [`Choice`]): measured time with predicted power, predicted time with
    /// measured power.
    pub median_regret_measured_time_pct: f64,
    pub median_regret_measured_power_pct: f64,
}

/// A calibration fitted on other data, applied as is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppliedCalibration {
    /// Where it came from (the file, its architecture and dataset).
    pub source: String,
    pub calibration: TimeCalibration,
    /// Time MAPE over all rows, percent.
    pub mape_pct: f64,
}

/// One baseline's figures over the validated kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineSummary {
    pub name: String,
    /// Time MAPE over all rows, percent.
    pub mape_pct: f64,
    pub median_kernel_mape_pct: f64,
    pub worst_kernel: String,
    pub worst_kernel_mape_pct: f64,
}

/// One candidate power-mean exponent and its plain leave-one-kernel-out time MAPE over all kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExponentScore {
    pub p: f64,
    pub loko_mape_pct: f64,
}

/// The whole validation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub data: String,
    pub arch: String,
    pub rows: usize,
    pub kernels: usize,
    /// MAPE over all rows of the uncalibrated timing model, percent.
    pub model_mape_pct: f64,
    /// MAPE over all rows, calibrated out-of-fold with nested selection, percent: each kernel is
    /// predicted by a calibration whose factors *and* exponent were chosen without it (the headline).
    pub mape_pct: f64,
    /// Outer folds that kept their calibration (the others predict with the uncalibrated model).
    pub folds_calibrated: usize,
    /// Plain leave-one-kernel-out MAPE of each candidate exponent (every fold with the same `p`).
    pub exponents: Vec<ExponentScore>,
    /// The smallest of `exponents`' MAPEs: the exponent is chosen on the figure it reports, so it is
    /// optimistic (for comparison with `mape_pct`).
    pub selected_on_reported_mape_pct: f64,
    pub worst_kernel: String,
    pub worst_kernel_mape_pct: f64,
    /// MAPE of the out-of-fold MLR power, percent.
    pub power_mape_pct: f64,
    pub objectives: Vec<ObjectiveSummary>,
    /// The requested baselines, in the order asked.
    pub baselines: Vec<BaselineSummary>,
    /// A calibration fitted elsewhere, applied as is (the cross-GPU check), when one was given.
    pub applied: Option<AppliedCalibration>,
    pub per_kernel: Vec<KernelResult>,
    pub per_row: Vec<RowResult>,
    pub method: Vec<String>,
    /// The calibration fitted on *all* kernels (what `--save-calibration` writes); `mape_pct` is the
    /// out-of-fold figure of the same form.
    pub calibration: TimeCalibration,
    /// MAPE of `calibration` on the rows it was fitted on, percent (optimistic; for comparison only).
    pub calibration_in_sample_mape_pct: f64,
}
