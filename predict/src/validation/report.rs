//! What `validate` reports: per row, per kernel, per objective, and the whole run (serializable; the
//! CLI renders it as a table, CSV or JSON).

use crate::calibration::TimeCalibration;
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::uncertainty::{Interval, Paired};
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
    /// The calibration form chosen for that fold (`full`: four factors and the exponent above;
    /// `compute-floor`: one compute factor under the model's own time), kept or not.
    pub fold_form: &'static str,
    /// Whether the fold that predicts this kernel kept its calibration (false: no calibrated candidate
    /// beat the uncalibrated model on that fold's training kernels by more than one standard error, so it
    /// predicts with the model).
    pub fold_calibrated: bool,
    /// The power model's input set (a [`PowerInputs`](super::power_fit::PowerInputs) label) chosen the same way for that fold.
    pub fold_power_inputs: &'static str,
    /// Each requested baseline's time MAPE on this kernel, percent, by baseline name.
    pub baseline_mape_pct: BTreeMap<String, f64>,
    pub choices: Vec<Choice>,
}

/// Per-objective summary over kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectiveSummary {
    pub objective: String,
    pub median_regret_pct: f64,
    pub mean_regret_pct: f64,
    /// 95% intervals of the median and the mean regret from a bootstrap over the kernels (`None` below
    /// [`MIN_KERNELS_FOR_INTERVAL`] kernels): whether a goal such as "median ≤ 2%" can be judged on them.
    pub median_regret_ci95_pct: Option<Interval>,
    pub mean_regret_ci95_pct: Option<Interval>,
    pub max_regret_pct: f64,
    /// Fraction of kernels whose picked pair is the measured best.
    pub hit_rate: f64,
    /// Diagnostic medians (see [`Choice`]): measured time with predicted power, predicted time with
    /// measured power.
    pub median_regret_measured_time_pct: f64,
    pub median_regret_measured_power_pct: f64,
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
    /// Our model's time MAPE minus this baseline's, with a 95% interval from a paired bootstrap over the
    /// kernels ([`gpumodel_models::uncertainty`]): how far another set of kernels could move the gap.
    /// `None` below [`MIN_KERNELS_FOR_INTERVAL`] kernels.
    pub model_vs: Option<Paired>,
    /// The same for our calibrated (out-of-fold) time.
    pub calibrated_vs: Option<Paired>,
}

/// The bootstrap behind [`BaselineSummary::model_vs`] and the regret intervals: resamples of the kernels
/// and the seed.
pub const RESAMPLES: usize = 4000;
pub const BOOTSTRAP_SEED: u64 = 7;
/// Below this many kernels no interval is given: a percentile bootstrap over a handful of kernels
/// (27 distinct resamples of 3) says more about the method than about the model.
pub const MIN_KERNELS_FOR_INTERVAL: usize = 10;

/// What a paired interval says: whether the kernels can tell the two apart.
pub fn verdict(p: &Paired) -> &'static str {
    if p.ci95_pct.hi < 0.0 {
        "ours better beyond the kernels' spread"
    } else if p.ci95_pct.lo > 0.0 {
        "ours worse beyond the kernels' spread"
    } else {
        "the interval spans 0: these kernels cannot tell the two apart"
    }
}

/// One bottleneck class: its kernels' figures, ours beside each baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassResult {
    /// The model's bottleneck component (`global load`, `compute`, `shared`, …).
    pub class: &'static str,
    pub kernels: usize,
    /// Time MAPE over the class's rows: the model as is, and calibrated out-of-fold, percent.
    pub model_mape_pct: f64,
    pub mape_pct: f64,
    /// Each baseline's time MAPE over the same rows, percent, by baseline name.
    pub baseline_mape_pct: BTreeMap<String, f64>,
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
    /// Rows and kernels the figures are over.
    pub rows: usize,
    pub kernels: usize,
    /// MAPE over all rows of the uncalibrated timing model, percent.
    pub model_mape_pct: f64,
    /// MAPE over all rows, calibrated out-of-fold with nested selection, percent: each kernel is
    /// predicted by a calibration whose factors *and* exponent were chosen without it (the headline).
    pub mape_pct: f64,
    /// Outer folds that kept their calibration (the others predict with the uncalibrated model).
    pub folds_calibrated: usize,
    /// Of those, the folds whose kept form is the structural alternative (bank-conflict replays
    /// overlapping issue, the fill at the default core clock), as is or with the compute floor.
    pub folds_replays_overlap: usize,
    /// Plain leave-one-kernel-out MAPE of each candidate exponent (every fold with the same `p`), on the
    /// rows of the structure the saved calibration was fitted to (`calibration_shared_overlap`): the
    /// saved calibration's `p` is the best of them.
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
    /// Per bottleneck class of the model (the per-kernel `bottleneck`): ours beside each baseline.
    pub per_class: Vec<ClassResult>,
    pub per_kernel: Vec<KernelResult>,
    pub per_row: Vec<RowResult>,
    pub method: Vec<String>,
    /// The calibration fitted on *all* validated kernels; what `--save-calibration` writes; `None` where the
    /// folds' keep rule dropped its factors (their leave-one-kernel-out errors did not beat the structure
    /// alone by more than one standard error): the file then records the structure alone. `mape_pct` is
    /// the out-of-fold figure of the whole procedure.
    pub calibration: Option<TimeCalibration>,
    /// The timing model's structure `calibration` was fitted to (and `--save-calibration` records).
    pub calibration_shared_overlap: gpumodel_models::timing::SharedOverlap,
    /// MAPE of `calibration` on the rows it was fitted on, percent (optimistic; for comparison only); the
    /// structure's own error when the factors were dropped.
    pub calibration_in_sample_mape_pct: f64,
    /// MAPE of the uncalibrated timing model with that structure, percent (`model_mape_pct` when it is
    /// the additive model).
    pub calibration_model_mape_pct: f64,
}

/// What `gpumodel validate` prints: the [`Report`] (its JSON, fields flattened) and how to lay out its
/// tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidateOutput {
    #[serde(flatten)]
    pub report: Report,
    /// The architecture's display name (preamble of the table).
    #[serde(skip)]
    pub arch_display_name: String,
    /// Show the per-row table too, first (so CSV carries the rows); else CSV carries the per-kernel table.
    #[serde(skip)]
    pub rows_first: bool,
    /// Show the per-bottleneck-class table first (so CSV carries it: ours beside each baseline per
    /// class); not together with `rows_first`, which wins.
    #[serde(skip)]
    pub classes_first: bool,
    /// Print every method note after the figures (else a one-line summary).
    #[serde(skip)]
    pub explain: bool,
}

impl ValidateOutput {
    /// One time-MAPE column per baseline.
    fn baseline_columns(&self) -> Vec<Column> {
        let col = |name: &str| {
            Column::new(format!("{}_mape_pct", name.replace('-', "_")), format!("{name} MAPE %"))
        };
        self.report.baselines.iter().map(|b| col(&b.name)).collect()
    }

    fn kernel_section(&self) -> Section {
        let r = &self.report;
        let mut cols = vec![
            Column::new("kernel", "kernel"),
            Column::new("bottleneck", "bottleneck"),
            Column::new("rows", "rows"),
            Column::new("model_mape_pct", "model MAPE %"),
            Column::new("calibrated_mape_pct", "calibrated MAPE %"),
        ];
        cols.extend(self.baseline_columns());
        cols.push(Column::new("fold_p", "fold p"));
        cols.push(Column::new("power_mape_pct", "power MAPE %"));
        for o in &r.objectives {
            cols.push(Column::new(
                format!(
                    "{}_regret_pct",
                    o.objective.to_lowercase().replace('^', "").replace('·', "_").replace('.', "p")
                ),
                format!("{} regret %", o.objective),
            ));
        }
        let mut s = Section::titled("per kernel (time MAPE over its clock pairs; E·D^n regret)", cols);
        for k in &r.per_kernel {
            let mut row = vec![
                Cell::text(&k.kernel),
                Cell::text(k.bottleneck),
                Cell::int(k.rows as i64),
                Cell::num(k.model_mape_pct, 1),
                Cell::num(k.mape_pct, 1),
            ];
            row.extend(r.baselines.iter().map(|b| Cell::opt(k.baseline_mape_pct.get(&b.name).copied(), 1)));
            row.push(match (k.fold_calibrated, k.fold_form) {
                (false, _) => Cell::text("none"),
                (true, "full") => Cell::num(k.fold_exponent, 0),
                (true, form) => Cell::text(form),
            });
            row.push(Cell::num(k.power_mape_pct, 1));
            for o in &r.objectives {
                row.push(Cell::opt(
                    k.choices.iter().find(|c| c.objective == o.objective).map(|c| c.regret_pct),
                    2,
                ));
            }
            s.push(row);
        }
        s
    }

    fn class_section(&self) -> Section {
        let r = &self.report;
        let mut cols = vec![
            Column::new("class", "bottleneck"),
            Column::new("kernels", "kernels"),
            Column::new("model_mape_pct", "model MAPE %"),
            Column::new("calibrated_mape_pct", "calibrated MAPE %"),
        ];
        cols.extend(self.baseline_columns());
        let mut s = Section::titled("per bottleneck class (time MAPE over its kernels' rows)", cols);
        for c in &r.per_class {
            let mut row = vec![
                Cell::text(c.class),
                Cell::int(c.kernels as i64),
                Cell::num(c.model_mape_pct, 1),
                Cell::num(c.mape_pct, 1),
            ];
            row.extend(r.baselines.iter().map(|b| Cell::opt(c.baseline_mape_pct.get(&b.name).copied(), 1)));
            s.push(row);
        }
        s
    }

    fn row_section(&self) -> Section {
        let r = &self.report;
        let mut cols = vec![
            Column::new("kernel", "kernel"),
            Column::new("core_mhz", "core MHz"),
            Column::new("mem_mhz", "mem MHz"),
            Column::new("bound_kind", "model bound"),
            Column::new("measured_time_s", "measured s"),
            Column::new("model_time_s", "model s"),
            Column::new("predicted_time_s", "calibrated s"),
        ];
        for b in &r.baselines {
            cols.push(Column::new(format!("{}_time_s", b.name.replace('-', "_")), format!("{} s", b.name)));
        }
        cols.push(Column::new("measured_power_w", "measured W"));
        cols.push(Column::new("predicted_power_w", "predicted W"));
        let mut s = Section::titled("per measured row (time in seconds)", cols);
        for p in &r.per_row {
            let mut row = vec![
                Cell::text(&p.kernel),
                Cell::num(p.core_mhz, 0),
                Cell::num(p.mem_mhz, 0),
                Cell::text(p.bound_kind),
                Cell::sci(p.measured_time_s, 4),
                Cell::sci(p.model_time_s, 4),
                Cell::sci(p.predicted_time_s, 4),
            ];
            row.extend(
                r.baselines
                    .iter()
                    .map(|b| p.baseline_time_s.get(&b.name).map_or(Cell::Empty, |&v| Cell::sci(v, 4))),
            );
            row.push(Cell::num(p.measured_power_w, 1));
            row.push(Cell::num(p.predicted_power_w, 1));
            s.push(row);
        }
        s
    }
}

/// The one line `validate` prints about its method without `--explain`.
pub const METHOD_SUMMARY: &str = "method: one profile per kernel predicts every clock pair; calibrated = fitted leave-one-kernel-out (exponent, form and structure chosen inside each fold, kept only where they beat the model by one standard error); power by ridge MLR for the optima (--explain for details)";

impl Export for ValidateOutput {
    const COMMAND: &'static str = "validate";
    /// 2: the `validate` JSON is the report's fields plus `command` and `format_version` (version 1 was
    /// the bare report).
    const FORMAT_VERSION: u32 = 2;

    fn sections(&self) -> Vec<Section> {
        if self.rows_first {
            vec![self.row_section(), self.kernel_section(), self.class_section()]
        } else if self.classes_first {
            vec![self.class_section(), self.kernel_section()]
        } else {
            vec![self.kernel_section(), self.class_section()]
        }
    }

    fn preamble(&self) -> Vec<String> {
        let r = &self.report;
        vec![format!("{} rows, {} kernels on {} ({})", r.rows, r.kernels, self.arch_display_name, r.data)]
    }

    fn notes(&self) -> Vec<String> {
        let r = &self.report;
        let mut out = vec![format!(
            "kernel time MAPE: {:.1}% (timing model as is), {:.1}% calibrated out-of-fold (p chosen inside each fold; {} of {} folds kept their calibration{}, the others predict with the model as is); worst kernel {} at {:.1}%",
            r.model_mape_pct,
            r.mape_pct,
            r.folds_calibrated,
            r.kernels,
            if r.folds_replays_overlap > 0 {
                format!(", {} of them the replays-overlap structure", r.folds_replays_overlap)
            } else {
                String::new()
            },
            r.worst_kernel,
            r.worst_kernel_mape_pct
        )];
        for b in &r.baselines {
            out.push(format!(
                "baseline {}: kernel time MAPE {:.1}% (median kernel {:.1}%, worst kernel {} at {:.1}%), from the same rows",
                b.name, b.mape_pct, b.median_kernel_mape_pct, b.worst_kernel, b.worst_kernel_mape_pct
            ));
            let gap = |p: &Paired| {
                format!(
                    "{:+.1} points (95% interval {:+.1} to {:+.1}; {})",
                    p.difference_pct,
                    p.ci95_pct.lo,
                    p.ci95_pct.hi,
                    verdict(p)
                )
            };
            if let (Some(m), Some(c)) = (&b.model_vs, &b.calibrated_vs) {
                out.push(format!(
                    "ours - {}: model {}, calibrated {} (paired bootstrap over the {} kernels)",
                    b.name,
                    gap(m),
                    gap(c),
                    r.kernels
                ));
            }
        }
        let (writes_it, writes_alone) =
            ("; --save-calibration FILE writes it", " (--save-calibration FILE writes the structure alone)");
        let by_p: Vec<String> =
            r.exponents.iter().map(|e| format!("p {} {:.2}%", e.p, e.loko_mape_pct)).collect();
        out.push(format!(
            "fixed-p leave-one-kernel-out MAPE ({} model): {}; best {:.1}% (p selected on the reported error: optimistic)",
            r.calibration_shared_overlap.label(),
            by_p.join(", "),
            r.selected_on_reported_mape_pct
        ));
        let all = " on all kernels";
        out.push(match r.calibration {
            Some(c) => format!(
                "calibration{all} ({} model, uncalibrated MAPE {:.1}%): a_memory {:.4}, a_compute {:.4}, a_shared {:.4}, a_l2 {:.4}, p {} (in-sample MAPE {:.1}%; kept: its leave-one-kernel-out errors beat the structure alone by more than one standard error{writes_it})",
                r.calibration_shared_overlap.label(),
                r.calibration_model_mape_pct,
                c.a[0], c.a[1], c.a[2], c.a[3], c.p, r.calibration_in_sample_mape_pct
            ),
            None => format!(
                "calibration{all}: the {} model alone (MAPE {:.1}%), its factors dropped: their leave-one-kernel-out errors did not beat it by more than one standard error{writes_alone}",
                r.calibration_shared_overlap.label(),
                r.calibration_model_mape_pct
            ),
        });
        // How often each power input set was chosen across the folds, in first-seen order.
        let mut chosen: Vec<(&str, usize)> = Vec::new();
        for k in &r.per_kernel {
            match chosen.iter_mut().find(|(l, _)| *l == k.fold_power_inputs) {
                Some((_, n)) => *n += 1,
                None => chosen.push((k.fold_power_inputs, 1)),
            }
        }
        let chosen: Vec<String> = chosen
            .iter()
            .map(|(l, n)| format!("{l} in {n} fold{}", if *n == 1 { "" } else { "s" }))
            .collect();
        out.push(format!(
            "power MAPE (out-of-fold MLR, for the optima): {:.1}%; inputs chosen inside each fold: {}",
            r.power_mape_pct,
            chosen.join(", ")
        ));
        for o in &r.objectives {
            let ci = |i: &Option<Interval>| {
                i.map_or(String::new(), |i| format!(" (95% interval {:.2} to {:.2})", i.lo, i.hi))
            };
            out.push(format!(
                "{} optimum: median regret {:.2}%{}, mean {:.2}%{}, max {:.2}%, exact best pair picked for {:.0}% of kernels (diagnostic median regret: measured time + predicted power {:.2}%, predicted time + measured power {:.2}%)",
                o.objective,
                o.median_regret_pct,
                ci(&o.median_regret_ci95_pct),
                o.mean_regret_pct,
                ci(&o.mean_regret_ci95_pct),
                o.max_regret_pct,
                100.0 * o.hit_rate,
                o.median_regret_measured_time_pct,
                o.median_regret_measured_power_pct
            ));
        }
        if self.explain {
            out.extend(r.method.iter().map(|m| format!("method: {m}")));
        } else {
            out.push(METHOD_SUMMARY.into());
        }
        out
    }
}
