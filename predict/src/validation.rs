//! Predicted versus measured kernel time and E·D^n optima on NV-DVFS data (Wang & Chu, ICPADS 2018).
//!
//! For every kernel, one profile is taken from its row nearest the architecture's default clocks (counter
//! totals do not depend on the clocks; the rest of its rows are only used as measurements) and the timing
//! model predicts every clock pair. Two figures are reported:
//!
//! * **model** — the timing model as it is, with the architecture profile's constants (nothing fitted);
//! * **calibrated** — `T = a_kind · bound + b · overlapped + sync` with four global coefficients (how far
//!   from the model's peak a memory-, compute- or shared-bound round runs; how much of the
//!   assumed overlap is real), fitted by least squares on
//!   relative error with **leave-one-kernel-out** cross-validation: a kernel's prediction comes from
//!   coefficients fitted on the other kernels only (out-of-fold).
//!
//! For the E·D^n optima, power at each clock pair comes from a multiple linear regression fitted by this
//! module (the `gpumodel-train` API is not used here) on counter rates = totals / predicted time, the
//! clocks and `core_mhz³` (a V²·f proxy), also leave-one-kernel-out. Per kernel, the clock pair that
//! minimizes the *predicted* E·D^n is compared with the one that minimizes the *measured* E·D^n; the
//! regret is the extra measured E·D^n at the picked pair.

use crate::error::{Error, Result};
use crate::nvdvfs::{kernels, profile_from_row};
use crate::power::{UTILIZATIONS, base_values};
use gpumodel_models::Table;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::stats::median;
use gpumodel_models::timing::{Clocks, TimingInputs, occupancy, predict_time};
use serde::Serialize;

/// One measured row with its predictions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowResult {
    pub kernel: String,
    pub core_mhz: f64,
    pub mem_mhz: f64,
    pub measured_time_s: f64,
    /// The timing model with the architecture's constants.
    pub model_time_s: f64,
    /// Calibrated, out-of-fold.
    pub predicted_time_s: f64,
    pub measured_power_w: f64,
    /// Out-of-fold MLR power.
    pub predicted_power_w: f64,
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
    /// MAPE over all rows, calibrated out-of-fold, percent.
    pub mape_pct: f64,
    pub worst_kernel: String,
    pub worst_kernel_mape_pct: f64,
    /// MAPE of the out-of-fold MLR power, percent.
    pub power_mape_pct: f64,
    pub objectives: Vec<ObjectiveSummary>,
    pub per_kernel: Vec<KernelResult>,
    pub per_row: Vec<RowResult>,
    pub method: Vec<String>,
}

/// Solves the least-squares problem min ‖X β − y‖² + λ‖β‖² (no penalty on column 0) by the normal
/// equations with partial pivoting.
fn least_squares(x: &[Vec<f64>], y: &[f64], lambda: f64) -> Option<Vec<f64>> {
    let p = x.first()?.len();
    let mut a = vec![vec![0.0; p + 1]; p];
    for (row, &t) in x.iter().zip(y) {
        for i in 0..p {
            for j in 0..p {
                a[i][j] += row[i] * row[j];
            }
            a[i][p] += row[i] * t;
        }
    }
    for (i, r) in a.iter_mut().enumerate().skip(1) {
        r[i] += lambda;
    }
    for c in 0..p {
        let piv = (c..p).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[piv][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, piv);
        let pivot_row = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot_row[c];
                for (v, pv) in row.iter_mut().zip(&pivot_row).skip(c) {
                    *v -= f * pv;
                }
            }
        }
    }
    Some((0..p).map(|i| a[i][p] / a[i][i]).collect())
}

/// Index of a bound kind among the calibration's efficiency factors: memory and texture share one.
fn kind_index(kind: &str) -> usize {
    match kind {
        "compute" => 1,
        "shared" => 2,
        _ => 0,
    }
}

/// Calibration: `T = a_kind · bound + b · overlapped + sync` — one efficiency factor per kind of bound
/// (memory/texture, compute, shared: how far from the model's peak such rounds run) and one
/// factor for the work the model assumes overlapped with the bound, minimizing the absolute relative
/// error. A kind absent from the training rows keeps factor 1; a negative overlap factor is refitted as 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimeCalibration {
    pub a: [f64; 3],
    pub b: f64,
}

/// One calibration row: bound kind, bound, overlapped, sync, measured time (seconds).
pub type CalRow<'a> = (&'a str, f64, f64, f64, f64);

impl TimeCalibration {
    /// The identity: the timing model as it is.
    pub const NONE: TimeCalibration = TimeCalibration { a: [1.0; 3], b: 0.0 };

    /// The calibrated time.
    pub fn time(&self, kind: &str, bound: f64, overlapped: f64, sync: f64) -> f64 {
        self.a[kind_index(kind)] * bound + self.b * overlapped + sync
    }

    /// Fits on calibration rows.
    pub fn fit(rows: &[CalRow<'_>]) -> TimeCalibration {
        let present: Vec<usize> = (0..3).filter(|&k| rows.iter().any(|r| kind_index(r.0) == k)).collect();
        let solve = |with_b: bool| -> Option<Vec<f64>> {
            let x: Vec<Vec<f64>> = rows
                .iter()
                .map(|&(k, b, o, _, y)| {
                    let mut v: Vec<f64> =
                        present.iter().map(|&p| if kind_index(k) == p { b / y } else { 0.0 }).collect();
                    if with_b {
                        v.push(o / y);
                    }
                    v
                })
                .collect();
            let y: Vec<f64> = rows.iter().map(|&(_, _, _, s, y)| 1.0 - s / y).collect();
            // Least absolute relative error (the MAPE itself) by iteratively reweighted least squares:
            // a few kernels the model misses badly must not drag the factors of all the others.
            let mut w: Vec<f64> = vec![1.0; y.len()];
            let mut coef = least_squares(&x, &y, 0.0)?;
            for _ in 0..30 {
                let xw: Vec<Vec<f64>> =
                    x.iter().zip(&w).map(|(r, w)| r.iter().map(|v| v * w.sqrt()).collect()).collect();
                let yw: Vec<f64> = y.iter().zip(&w).map(|(t, w)| t * w.sqrt()).collect();
                coef = least_squares(&xw, &yw, 0.0)?;
                for ((r, t), wi) in x.iter().zip(&y).zip(w.iter_mut()) {
                    let res: f64 = t - r.iter().zip(&coef).map(|(a, b)| a * b).sum::<f64>();
                    *wi = 1.0 / res.abs().max(1e-3);
                }
            }
            Some(coef)
        };
        let mut cal = TimeCalibration::NONE;
        let coef = match solve(true) {
            Some(c) if c[present.len()] >= 0.0 => c,
            _ => match solve(false) {
                Some(mut c) => {
                    c.push(0.0);
                    c
                }
                None => return cal,
            },
        };
        for (i, &p) in present.iter().enumerate() {
            if coef[i] > 0.0 {
                cal.a[p] = coef[i];
            }
        }
        cal.b = coef[present.len()];
        cal
    }
}

fn mape(pairs: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for (p, m) in pairs {
        s += ((p - m) / m).abs();
        n += 1;
    }
    if n == 0 { f64::NAN } else { 100.0 * s / n as f64 }
}

struct Prepared {
    kernel: usize,
    clocks: Clocks,
    kind: &'static str,
    bound: f64,
    overlapped: f64,
    sync: f64,
    model: f64,
    measured_t: f64,
    measured_p: f64,
    /// Rate-feature numerators: each utilization at the default clocks times the time there (totals
    /// over the unit's peak rate).
    util_t0: [f64; 8],
}

/// Validates the timing model (and an MLR power model for the optima) on an NV-DVFS table.
pub fn validate(t: &Table, arch: &ArchProfile, objectives: &[Objective]) -> Result<Report> {
    for c in ["time_s", "power_w", "core_mhz", "mem_mhz"] {
        if t.column_index(c).is_none() {
            return Err(Error::Mismatch(format!(
                "{}: no '{c}' column: validation needs NV-DVFS data with measured time and power",
                t.source
            )));
        }
    }
    let groups = kernels(t);
    if groups.len() < 3 {
        return Err(Error::Invalid(format!(
            "{}: {} kernel(s): leave-one-kernel-out validation needs at least 3",
            t.source,
            groups.len()
        )));
    }
    let col = |name: &str, r: usize| t.data[[r, t.column_index(name).expect("checked")]];
    let default = Clocks::default_for(arch);
    let mut prep: Vec<Prepared> = Vec::with_capacity(t.n_rows());
    let mut bottlenecks = Vec::new();
    for (ki, (_, rows)) in groups.iter().enumerate() {
        // The profile: the row nearest the default clocks (relative distance).
        let reference = *rows
            .iter()
            .min_by(|&&a, &&b| {
                let d = |r: usize| {
                    ((col("core_mhz", r) - default.core_mhz) / default.core_mhz).powi(2)
                        + ((col("mem_mhz", r) - default.mem_mhz) / default.mem_mhz).powi(2)
                };
                d(a).total_cmp(&d(b))
            })
            .expect("a group has rows");
        let k = profile_from_row(t, reference)?;
        let x = TimingInputs::from_profile(&k)?;
        let cfg = crate::kernel::Config::default();
        let tp = crate::kernel::predict_time_only(&k, arch, &cfg)?;
        bottlenecks.push(tp.bottleneck);
        let occ = occupancy(&k.launch, arch, Some(tp.occupancy.active_warps_per_sm))?;
        let t0 = predict_time(&x, arch, &occ, default);
        let base = base_values(&k, &x, arch, t0.time_s, t0.time_s, default);
        let mut util_t0 = [0.0; 8];
        for (u, name) in util_t0.iter_mut().zip(UTILIZATIONS) {
            *u = base.get(name).unwrap_or(0.0) * t0.time_s;
        }
        for &r in rows {
            let clocks = Clocks { core_mhz: col("core_mhz", r), mem_mhz: col("mem_mhz", r) };
            let tm = predict_time(&x, arch, &occ, clocks);
            let measured_t = col("time_s", r);
            if measured_t.is_nan() || measured_t <= 0.0 {
                return Err(Error::Invalid(format!(
                    "{} line {}: measured time must be > 0",
                    t.source,
                    r + 2
                )));
            }
            prep.push(Prepared {
                kernel: ki,
                clocks,
                kind: tm.bound_kind,
                bound: tm.bound_s,
                overlapped: tm.overlapped_s,
                sync: tm.sync_s,
                model: tm.time_s,
                measured_t,
                measured_p: col("power_w", r),
                util_t0,
            });
        }
    }
    // Leave-one-kernel-out: time coefficients, then power MLR on rates at the out-of-fold time.
    let n = prep.len();
    let mut pred_t = vec![0.0; n];
    let mut pred_p = vec![0.0; n];
    let features = |p: &Prepared, t: f64| -> Vec<f64> {
        let fc = p.clocks.core_mhz / 1000.0;
        let fm = p.clocks.mem_mhz / 1000.0;
        let mut f = vec![1.0, fc, fm, fc * fc * fc];
        // Rates relative to peak at this configuration: (utilization at the default clocks · t0) / t.
        f.extend(p.util_t0.iter().map(|u| u / t.max(f64::MIN_POSITIVE)));
        f
    };
    for fold in 0..groups.len() {
        let train: Vec<&Prepared> = prep.iter().filter(|p| p.kernel != fold).collect();
        let cal = TimeCalibration::fit(
            &train.iter().map(|p| (p.kind, p.bound, p.overlapped, p.sync, p.measured_t)).collect::<Vec<_>>(),
        );
        let time = |p: &Prepared| cal.time(p.kind, p.bound, p.overlapped, p.sync);
        let x: Vec<Vec<f64>> = train.iter().map(|p| features(p, time(p))).collect();
        let y: Vec<f64> = train.iter().map(|p| p.measured_p).collect();
        // Standardize (except the intercept) so a small ridge keeps the 12-column system well posed.
        let q = x[0].len();
        let mut mean = vec![0.0; q];
        let mut sd = vec![1.0; q];
        for j in 1..q {
            mean[j] = x.iter().map(|r| r[j]).sum::<f64>() / x.len() as f64;
            let v = x.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / x.len() as f64;
            sd[j] = if v > 0.0 { v.sqrt() } else { 1.0 };
        }
        let z = |r: &[f64]| -> Vec<f64> {
            (0..q).map(|j| if j == 0 { 1.0 } else { (r[j] - mean[j]) / sd[j] }).collect()
        };
        let xz: Vec<Vec<f64>> = x.iter().map(|r| z(r)).collect();
        let beta = least_squares(&xz, &y, 1e-3 * x.len() as f64)
            .ok_or_else(|| Error::Invalid("the power regression is singular on this data".into()))?;
        for (i, p) in prep.iter().enumerate().filter(|(_, p)| p.kernel == fold) {
            pred_t[i] = time(p);
            let f = z(&features(p, pred_t[i]));
            pred_p[i] = f.iter().zip(&beta).map(|(a, b)| a * b).sum();
        }
    }
    let per_row: Vec<RowResult> = prep
        .iter()
        .enumerate()
        .map(|(i, p)| RowResult {
            kernel: groups[p.kernel].0.clone(),
            core_mhz: p.clocks.core_mhz,
            mem_mhz: p.clocks.mem_mhz,
            measured_time_s: p.measured_t,
            model_time_s: p.model,
            predicted_time_s: pred_t[i],
            measured_power_w: p.measured_p,
            predicted_power_w: pred_p[i],
        })
        .collect();
    let mut per_kernel = Vec::new();
    let mut regrets: Vec<Vec<f64>> = vec![Vec::new(); objectives.len()];
    let mut hits = vec![0usize; objectives.len()];
    for (ki, (name, _)) in groups.iter().enumerate() {
        let rows: Vec<&RowResult> =
            per_row.iter().zip(&prep).filter(|(_, p)| p.kernel == ki).map(|(r, _)| r).collect();
        let measured: Vec<(f64, f64)> =
            rows.iter().map(|r| (r.measured_power_w * r.measured_time_s, r.measured_time_s)).collect();
        let predicted: Vec<(f64, f64)> = rows
            .iter()
            .map(|r| (r.predicted_power_w.max(0.0) * r.predicted_time_s, r.predicted_time_s))
            .collect();
        let mut choices = Vec::new();
        for (oi, o) in objectives.iter().enumerate() {
            let (Some(b), Some(p)) = (o.argmin(&measured), o.argmin(&predicted)) else { continue };
            let best = o.value(measured[b].0, measured[b].1);
            let at_pick = o.value(measured[p].0, measured[p].1);
            let regret = 100.0 * (at_pick / best - 1.0);
            regrets[oi].push(regret);
            hits[oi] += usize::from(b == p);
            choices.push(Choice {
                objective: o.label(),
                best: (rows[b].core_mhz, rows[b].mem_mhz),
                picked: (rows[p].core_mhz, rows[p].mem_mhz),
                regret_pct: regret,
            });
        }
        per_kernel.push(KernelResult {
            kernel: name.clone(),
            rows: rows.len(),
            bottleneck: bottlenecks[ki],
            model_mape_pct: mape(rows.iter().map(|r| (r.model_time_s, r.measured_time_s))),
            mape_pct: mape(rows.iter().map(|r| (r.predicted_time_s, r.measured_time_s))),
            power_mape_pct: mape(rows.iter().map(|r| (r.predicted_power_w, r.measured_power_w))),
            choices,
        });
    }
    let worst =
        per_kernel.iter().max_by(|a, b| a.mape_pct.total_cmp(&b.mape_pct)).expect("at least 3 kernels");
    let objectives_summary = objectives
        .iter()
        .enumerate()
        .map(|(oi, o)| ObjectiveSummary {
            objective: o.label(),
            median_regret_pct: median(regrets[oi].clone()),
            mean_regret_pct: regrets[oi].iter().sum::<f64>() / regrets[oi].len().max(1) as f64,
            max_regret_pct: regrets[oi].iter().copied().fold(0.0, f64::max),
            hit_rate: hits[oi] as f64 / groups.len() as f64,
        })
        .collect();
    Ok(Report {
        data: t.source.clone(),
        arch: arch.name.clone(),
        rows: n,
        kernels: groups.len(),
        model_mape_pct: mape(per_row.iter().map(|r| (r.model_time_s, r.measured_time_s))),
        mape_pct: mape(per_row.iter().map(|r| (r.predicted_time_s, r.measured_time_s))),
        worst_kernel: worst.kernel.clone(),
        worst_kernel_mape_pct: worst.mape_pct,
        power_mape_pct: mape(per_row.iter().map(|r| (r.predicted_power_w, r.measured_power_w))),
        objectives: objectives_summary,
        per_kernel,
        per_row,
        method: vec![
            "one kernel profile per kernel, from its row nearest the architecture's default clocks; every clock pair predicted from it".into(),
            "model: the timing model with the architecture profile's constants, nothing fitted".into(),
            "calibrated: T = a_kind·bound + b·overlapped + sync (a per memory/compute/shared bound), fitted leave-one-kernel-out (grouped CV over kernels, out-of-fold predictions)".into(),
            "power for E·D^n: MLR (this module's least squares, not gpumodel-train) on clocks, core_mhz³ and counter rates at the predicted time, leave-one-kernel-out".into(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_by_hand() {
        // y = 1 + 2x on three points.
        let x = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 2.0]];
        let b = least_squares(&x, &[1.0, 3.0, 5.0], 0.0).unwrap();
        assert!((b[0] - 1.0).abs() < 1e-12 && (b[1] - 2.0).abs() < 1e-12);
    }

    #[test]
    fn time_fit_recovers_known_coefficients() {
        // y = 1.2·bound (memory) or 1.5·bound (compute) + 0.3·overlapped + sync, exactly.
        let rows: Vec<CalRow<'_>> = [
            ("memory", 1.0, 0.5, 0.0),
            ("compute", 2.0, 0.1, 0.1),
            ("memory", 0.5, 1.0, 0.0),
            ("compute", 3.0, 2.0, 0.2),
            ("memory", 2.0, 0.2, 0.0),
            ("memory", 1.5, 0.7, 0.0),
        ]
        .iter()
        .map(|&(k, b, o, s)| (k, b, o, s, if k == "memory" { 1.2 } else { 1.5 } * b + 0.3 * o + s))
        .collect();
        let c = TimeCalibration::fit(&rows);
        assert!(
            (c.a[0] - 1.2).abs() < 1e-6 && (c.a[1] - 1.5).abs() < 1e-6 && (c.b - 0.3).abs() < 1e-6,
            "{c:?}"
        );
        assert_eq!(c.a[2], 1.0, "no shared-bound rows: factor stays 1");
    }
}
