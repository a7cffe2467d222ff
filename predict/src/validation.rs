//! Predicted versus measured kernel time and E·D^n optima on NV-DVFS data (Wang & Chu, ICPADS 2018).
//!
//! For every kernel, one profile is taken from its row nearest the architecture's default clocks (counter
//! totals do not depend on the clocks; the rest of its rows are only used as measurements) and the timing
//! model predicts every clock pair. Two figures are reported:
//!
//! * **model** — the timing model as it is, with the architecture profile's constants (nothing fitted);
//! * **calibrated** — `T = ((a_m·M)^p + (a_c·C)^p + (a_s·S)^p + (a_l·L)^p)^(1/p) + sync` over the model's
//!   memory, compute and shared pipeline times and the L2 time of its DRAM traffic at the core clock (see
//!   [`TimeCalibration`]): four global factors (how far from the
//!   model's peak each pipeline runs) and a soft maximum (how much the pipelines overlap), fitted on
//!   relative error with **leave-one-kernel-out** cross-validation: a kernel's prediction comes from
//!   factors fitted on the other kernels only (out-of-fold). The exponent `p` is chosen inside each
//!   fold by an inner leave-one-kernel-out over that fold's training kernels ([`nested`]), so neither
//!   the factors nor `p` ever see the kernel being predicted. The plain LOKO error of every fixed `p` is
//!   reported too; its minimum is chosen on the figure it reports (optimistic).
//!
//! For the E·D^n optima, power at each clock pair comes from a ridge multiple linear regression fitted by
//! this module (the `gpumodel-train` API is not used here) on counter rates = totals / predicted time and
//! the clocks, also leave-one-kernel-out; its input set is chosen inside each fold like `p`
//! ([`power_fit`]). Per kernel, the clock pair that minimizes the *predicted* E·D^n is compared with the
//! one that minimizes the *measured* E·D^n; the regret is the extra measured E·D^n at the picked pair.
//! Two diagnostic regrets put the measured time, or the measured power, in place of the prediction.

use crate::error::{Error, Result};
use crate::nvdvfs::{kernels, profile_from_row};
use crate::power::{UTILIZATIONS, base_values};
use gpumodel_models::Table;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::stats::median;
use gpumodel_models::timing::{Clocks, Timing, TimingInputs, occupancy, predict_time};
use serde::{Deserialize, Serialize};

pub mod calibration;
pub mod nested;
pub mod power_fit;

use power_fit::{PowerFit, PowerInputs, PowerRow};

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
    /// The power model's input set (a [`PowerInputs`] label) chosen the same way for that fold.
    pub fold_power_inputs: &'static str,
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
    pub per_kernel: Vec<KernelResult>,
    pub per_row: Vec<RowResult>,
    pub method: Vec<String>,
    /// The calibration fitted on *all* kernels (what `--save-calibration` writes); `mape_pct` is the
    /// out-of-fold figure of the same form.
    pub calibration: TimeCalibration,
    /// MAPE of `calibration` on the rows it was fitted on, percent (optimistic; for comparison only).
    pub calibration_in_sample_mape_pct: f64,
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

/// Calibration: `T = ((a_memory·M)^p + (a_compute·C)^p + (a_shared·S)^p + (a_l2·L)^p)^(1/p) + sync`, where
/// `M` is the timing model's global load + store + texture time, `C` its compute time, `S` its
/// shared-memory time incl. bank conflicts, `L` the time its DRAM traffic needs through L2 at a bandwidth
/// that scales with the core clock ([`Timing::l2_s`]: at low core clocks L2, not DRAM, caps a
/// memory-bound kernel), and `p` ≥ 1 a power-mean exponent (chosen by cross-validation in `validate`).
///
/// Each factor says how far from the model's peak that pipeline runs; the power mean is a soft maximum,
/// so the longest scaled pipeline dominates while nearly equal ones add (partial overlap). The factors
/// minimize the mean absolute relative error (the MAPE itself) — a few kernels the model misses badly
/// must not drag the factors of all the others. A pipeline with no time in the training rows keeps 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeCalibration {
    /// `a_memory`, `a_compute`, `a_shared`, `a_l2` (0 in a version-1 calibration file, which had no L2
    /// term: then the form is exactly the three-term one).
    pub a: [f64; 4],
    /// The power-mean exponent.
    pub p: f64,
}

/// One calibration row: the model's memory, compute, shared and L2 times, its sync time, and the measured
/// time (seconds).
pub type CalRow = ([f64; 4], f64, f64);

/// The memory, compute, shared and L2 times of a timing-model result (see [`TimeCalibration`]).
pub fn pipeline_parts(t: &Timing) -> [f64; 4] {
    let c = &t.components_s;
    [c[0] + c[1] + c[4], c[5], c[2] + c[3], t.l2_s]
}

impl TimeCalibration {
    /// The calibrated time from the pipeline parts and the sync time.
    pub fn time(&self, parts: [f64; 4], sync: f64) -> f64 {
        let scaled: [f64; 4] = std::array::from_fn(|j| self.a[j] * parts[j]);
        let m = scaled.iter().copied().fold(0.0, f64::max);
        if m <= 0.0 {
            return sync;
        }
        // Relative to the largest part: no overflow or underflow whatever the exponent.
        let s = root(scaled.iter().map(|v| power(v / m, self.p)).sum::<f64>(), self.p);
        m * s + sync
    }

    /// The timing model's prediction with this calibration applied to its time (the breakdown is the
    /// model's own).
    pub fn apply(&self, t: &Timing) -> Timing {
        Timing { time_s: self.time(pipeline_parts(t), t.sync_s), ..t.clone() }
    }

    /// Fits the four factors on calibration rows with the exponent `p`.
    pub fn fit(rows: &[CalRow], p: f64) -> TimeCalibration {
        Self::fit_to(rows, p, Precision::Full)
    }

    /// [`TimeCalibration::fit`] to a given precision.
    pub fn fit_to(rows: &[CalRow], p: f64, precision: Precision) -> TimeCalibration {
        let present: Vec<usize> = (0..4).filter(|&j| rows.iter().any(|r| r.0[j] > 0.0)).collect();
        let cal = |theta: &[f64]| {
            let mut a = [1.0; 4];
            for (&j, t) in present.iter().zip(theta) {
                a[j] = t.exp();
            }
            TimeCalibration { a, p }
        };
        // The calibrated time is proportional to the parts and sync together, so each row is divided by
        // its measured time once: the objective is then mean |T − 1|.
        let scaled: Vec<([f64; 4], f64)> =
            rows.iter().map(|&(parts, sync, y)| (parts.map(|v| v / y), sync / y)).collect();
        // Scaled by the measured time, the parts are of order 1, so the power sum cannot overflow and
        // skips `time`'s normalization by the largest part (this loop is most of `validate`'s run time).
        let objective = |theta: &[f64]| {
            let a = cal(theta).a;
            scaled
                .iter()
                .map(|&(x, sync)| {
                    let s = power(a[0] * x[0], p)
                        + power(a[1] * x[1], p)
                        + power(a[2] * x[2], p)
                        + power(a[3] * x[3], p);
                    (root(s, p) + sync - 1.0).abs()
                })
                .sum::<f64>()
                / rows.len().max(1) as f64
        };
        // The factors are positive: search their logarithms. The objective is piecewise smooth, so a
        // derivative-free simplex. A full fit restarts it from its own result (with a smaller simplex)
        // until a restart stops improving; a ranking fit stops at the first convergence, at a coarser
        // tolerance.
        let (tol, restarts) = match precision {
            Precision::Full => (Tolerance { value: 1e-10, size: 1e-7 }, 5),
            Precision::Ranking => (Tolerance { value: 1e-8, size: 1e-5 }, 1),
        };
        let mut theta = vec![0.0; present.len()];
        if !theta.is_empty() {
            let mut best = f64::INFINITY;
            for step in [0.25, 0.05, 0.05, 0.05, 0.05].into_iter().take(restarts) {
                let (t, f) = nelder_mead(&objective, &theta, step, 4000, tol);
                let improved = f < best - 1e-9 * (1.0 + best.abs().min(1e300));
                theta = t;
                best = best.min(f);
                if !improved {
                    break;
                }
            }
        }
        cal(&theta)
    }
}

/// `x^p`; the candidate exponents (all of [`nested::EXPONENTS`]) by multiplications, so the fits' inner
/// loop makes no library call for them.
#[inline(always)]
fn power(x: f64, p: f64) -> f64 {
    match p {
        1.0 => x,
        2.0 => x * x,
        3.0 => x * x * x,
        4.0 => {
            let x2 = x * x;
            x2 * x2
        }
        6.0 => {
            let x3 = x * x * x;
            x3 * x3
        }
        8.0 => {
            let x4 = (x * x) * (x * x);
            x4 * x4
        }
        12.0 => {
            let x3 = x * x * x;
            let x6 = x3 * x3;
            x6 * x6
        }
        _ => x.powf(p),
    }
}

/// `x^(1/p)`, by square and cube roots for the candidate exponents, `powf` otherwise.
#[inline(always)]
fn root(x: f64, p: f64) -> f64 {
    match p {
        1.0 => x,
        2.0 => x.sqrt(),
        3.0 => cbrt(x),
        4.0 => x.sqrt().sqrt(),
        6.0 => cbrt(x.sqrt()),
        8.0 => x.sqrt().sqrt().sqrt(),
        12.0 => cbrt(x.sqrt().sqrt()),
        _ => x.powf(1.0 / p),
    }
}

/// The cube root to within a few units in the last place, about 2.5× faster than `f64::cbrt` here
/// (which was most of the fits' time at p = 3, 6, 12): an initial guess from the exponent bits (Kahan's
/// constant), then three Halley steps (cubic convergence: 5% → 1e-4 → 1e-12 → rounding).
#[inline(always)]
fn cbrt(x: f64) -> f64 {
    if !(x > 1e-300 && x < 1e300) {
        return x.cbrt();
    }
    let mut y = f64::from_bits(x.to_bits() / 3 + 0x2A9F_7893_782D_A1CE);
    for _ in 0..3 {
        let y3 = y * y * y;
        y *= (y3 + 2.0 * x) / (2.0 * y3 + x);
    }
    y
}

/// How precisely [`TimeCalibration::fit_to`] fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Precision {
    /// Factors to about 1e-7 relative, confirmed by restarts: for predictions and the saved file.
    Full,
    /// Factors to about 1e-5 relative, no restart: enough to rank candidate exponents by an inner
    /// cross-validation error, at a fraction of the cost.
    Ranking,
}

/// When the simplex stops: its values within `value` (relative) and its vertices within `size` (in
/// log-factor) of the best one.
#[derive(Debug, Clone, Copy)]
struct Tolerance {
    value: f64,
    size: f64,
}

/// Minimizes `f` from `x0` with the Nelder–Mead simplex (standard coefficients: reflection 1, expansion
/// 2, contraction ½, shrink ½; initial simplex `x0 + step·e_i`); stops at `tol` or after `max_evals`.
/// Returns the best point and its value.
fn nelder_mead(
    f: &dyn Fn(&[f64]) -> f64,
    x0: &[f64],
    step: f64,
    max_evals: usize,
    tol: Tolerance,
) -> (Vec<f64>, f64) {
    let n = x0.len();
    let mut simplex: Vec<(Vec<f64>, f64)> = (0..=n)
        .map(|i| {
            let mut x = x0.to_vec();
            if i > 0 {
                x[i - 1] += step;
            }
            let v = f(&x);
            (x, v)
        })
        .collect();
    let mut evals = n + 1;
    while evals < max_evals {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (lo, hi) = (simplex[0].1, simplex[n].1);
        let size = simplex[1..]
            .iter()
            .map(|(x, _)| x.iter().zip(&simplex[0].0).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max))
            .fold(0.0, f64::max);
        if hi - lo <= tol.value * (1.0 + lo.abs()) && size <= tol.size {
            break;
        }
        let centroid: Vec<f64> =
            (0..n).map(|j| simplex[..n].iter().map(|(x, _)| x[j]).sum::<f64>() / n as f64).collect();
        let along = |t: f64| -> Vec<f64> {
            centroid.iter().zip(&simplex[n].0).map(|(c, w)| c + t * (c - w)).collect()
        };
        let xr = along(1.0);
        let fr = f(&xr);
        evals += 1;
        if fr < simplex[0].1 {
            let xe = along(2.0);
            let fe = f(&xe);
            evals += 1;
            simplex[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (xr, fr);
        } else {
            let xc = if fr < simplex[n].1 { along(0.5) } else { along(-0.5) };
            let fc = f(&xc);
            evals += 1;
            if fc < fr.min(simplex[n].1) {
                simplex[n] = (xc, fc);
            } else {
                let best = simplex[0].0.clone();
                for (x, v) in simplex.iter_mut().skip(1) {
                    for (xi, bi) in x.iter_mut().zip(&best) {
                        *xi = bi + 0.5 * (*xi - bi);
                    }
                    *v = f(x);
                    evals += 1;
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (x, v) = simplex.swap_remove(0);
    (x, v)
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
    parts: [f64; 4],
    sync: f64,
    model: f64,
    components: [f64; 7],
    measured_t: f64,
    measured_p: f64,
    /// What the power model sees.
    power: PowerRow,
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
                parts: pipeline_parts(&tm),
                sync: tm.sync_s,
                model: tm.time_s,
                components: tm.components_s,
                measured_t,
                measured_p: col("power_w", r),
                power: PowerRow {
                    core_mhz: clocks.core_mhz,
                    mem_mhz: clocks.mem_mhz,
                    util_t0,
                    measured_w: col("power_w", r),
                },
            });
        }
    }
    // Leave-one-kernel-out: time coefficients, then power MLR on rates at the out-of-fold time.
    let n = prep.len();
    let mut pred_t = vec![0.0; n];
    let mut pred_p = vec![0.0; n];
    let all: Vec<CalRow> = prep.iter().map(|p| (p.parts, p.sync, p.measured_t)).collect();
    let kernel_of: Vec<usize> = prep.iter().map(|p| p.kernel).collect();
    let nest = nested::nested(&all, &kernel_of, groups.len());
    let mut fold_power = vec![PowerInputs::Clocks; groups.len()];
    for (fold, fold_power) in fold_power.iter_mut().enumerate() {
        let train: Vec<&Prepared> = prep.iter().filter(|p| p.kernel != fold).collect();
        let cal = nest.folds[fold].calibration;
        let time = |p: &Prepared| cal.time(p.parts, p.sync);
        // The power inputs, chosen like p: by an inner leave-one-kernel-out over this fold's training
        // kernels (power MAPE), never looking at the held-out kernel. The rates use this fold's
        // calibrated times, whose factors saw the inner held-out kernel's times too: that only touches
        // the ranking of the candidates, and the outer kernel's measurements stay out of it.
        let inner: Vec<(&PowerRow, f64, usize)> = train
            .iter()
            .map(|p| (&p.power, time(p), if p.kernel > fold { p.kernel - 1 } else { p.kernel }))
            .collect();
        let scores: Vec<f64> = PowerInputs::ALL
            .iter()
            .map(|&k| power_fit::loko_mape_pct(k, &inner).unwrap_or(f64::INFINITY))
            .collect();
        let kind = PowerInputs::ALL[nested::argmin(&scores)];
        *fold_power = kind;
        let rows: Vec<(&PowerRow, f64)> = train.iter().map(|p| (&p.power, time(p))).collect();
        let fit = PowerFit::fit(kind, &rows)
            .ok_or_else(|| Error::Invalid("the power regression is singular on this data".into()))?;
        for (i, p) in prep.iter().enumerate().filter(|(_, p)| p.kernel == fold) {
            pred_t[i] = time(p);
            pred_p[i] = fit.predict(&p.power, pred_t[i]);
        }
    }
    let calibration = TimeCalibration::fit(&all, nest.selected_exponent);
    let in_sample = mape(all.iter().map(|&(parts, sync, y)| (calibration.time(parts, sync), y)));
    let per_row: Vec<RowResult> = prep
        .iter()
        .enumerate()
        .map(|(i, p)| RowResult {
            kernel: groups[p.kernel].0.clone(),
            core_mhz: p.clocks.core_mhz,
            mem_mhz: p.clocks.mem_mhz,
            measured_time_s: p.measured_t,
            model_time_s: p.model,
            bound_kind: p.kind,
            model_components_s: p.components,
            predicted_time_s: pred_t[i],
            measured_power_w: p.measured_p,
            predicted_power_w: pred_p[i],
        })
        .collect();
    let mut per_kernel = Vec::new();
    let mut regrets: Vec<Vec<f64>> = vec![Vec::new(); objectives.len()];
    let mut regrets_mt: Vec<Vec<f64>> = vec![Vec::new(); objectives.len()];
    let mut regrets_mp: Vec<Vec<f64>> = vec![Vec::new(); objectives.len()];
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
        // Diagnostics: one side measured, the other predicted.
        let measured_time: Vec<(f64, f64)> = rows
            .iter()
            .map(|r| (r.predicted_power_w.max(0.0) * r.measured_time_s, r.measured_time_s))
            .collect();
        let measured_power: Vec<(f64, f64)> =
            rows.iter().map(|r| (r.measured_power_w * r.predicted_time_s, r.predicted_time_s)).collect();
        let mut choices = Vec::new();
        for (oi, o) in objectives.iter().enumerate() {
            let (Some(b), Some(p), Some(p_mt), Some(p_mp)) = (
                o.argmin(&measured),
                o.argmin(&predicted),
                o.argmin(&measured_time),
                o.argmin(&measured_power),
            ) else {
                continue;
            };
            let best = o.value(measured[b].0, measured[b].1);
            let regret_at = |i: usize| 100.0 * (o.value(measured[i].0, measured[i].1) / best - 1.0);
            let regret = regret_at(p);
            regrets[oi].push(regret);
            regrets_mt[oi].push(regret_at(p_mt));
            regrets_mp[oi].push(regret_at(p_mp));
            hits[oi] += usize::from(b == p);
            choices.push(Choice {
                objective: o.label(),
                best: (rows[b].core_mhz, rows[b].mem_mhz),
                picked: (rows[p].core_mhz, rows[p].mem_mhz),
                regret_pct: regret,
                regret_measured_time_pct: regret_at(p_mt),
                regret_measured_power_pct: regret_at(p_mp),
            });
        }
        per_kernel.push(KernelResult {
            kernel: name.clone(),
            rows: rows.len(),
            bottleneck: bottlenecks[ki],
            model_mape_pct: mape(rows.iter().map(|r| (r.model_time_s, r.measured_time_s))),
            mape_pct: mape(rows.iter().map(|r| (r.predicted_time_s, r.measured_time_s))),
            power_mape_pct: mape(rows.iter().map(|r| (r.predicted_power_w, r.measured_power_w))),
            fold_exponent: nest.folds[ki].exponent,
            fold_power_inputs: fold_power[ki].label(),
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
            median_regret_measured_time_pct: median(regrets_mt[oi].clone()),
            median_regret_measured_power_pct: median(regrets_mp[oi].clone()),
        })
        .collect();
    Ok(Report {
        data: t.source.clone(),
        arch: arch.name.clone(),
        rows: n,
        kernels: groups.len(),
        model_mape_pct: mape(per_row.iter().map(|r| (r.model_time_s, r.measured_time_s))),
        mape_pct: mape(per_row.iter().map(|r| (r.predicted_time_s, r.measured_time_s))),
        exponents: nested::EXPONENTS
            .iter()
            .zip(&nest.loko_mape_pct)
            .map(|(&p, &m)| ExponentScore { p, loko_mape_pct: m })
            .collect(),
        selected_on_reported_mape_pct: nest.loko_mape_pct.iter().copied().fold(f64::INFINITY, f64::min),
        worst_kernel: worst.kernel.clone(),
        worst_kernel_mape_pct: worst.mape_pct,
        power_mape_pct: mape(per_row.iter().map(|r| (r.predicted_power_w, r.measured_power_w))),
        objectives: objectives_summary,
        per_kernel,
        per_row,
        method: vec![
            "one kernel profile per kernel, from its row nearest the architecture's default clocks; every clock pair predicted from it".into(),
            "model: the timing model with the architecture profile's constants, nothing fitted".into(),
            "calibrated: T = ((a_memory·M)^p + (a_compute·C)^p + (a_shared·S)^p + (a_l2·L)^p)^(1/p) + sync over the model's memory (global + texture), compute and shared times and L, its DRAM traffic's time through L2 at a bandwidth scaled with the core clock; factors fitted leave-one-kernel-out on mean absolute relative error (grouped CV over kernels, out-of-fold predictions)".into(),
            format!("nested selection: in each outer fold, p is chosen among {} by an inner leave-one-kernel-out over that fold's training kernels only; the headline MAPE is the outer out-of-fold error of that whole procedure", nested::EXPONENTS.map(|p| p.to_string()).join(", ")),
            "power for E·D^n: ridge MLR (this module's least squares, not gpumodel-train) on counter rates at the predicted time and the clocks, leave-one-kernel-out; the input set (clocks: clock polynomials; rates-times-v2: plus rates × core clock²; clock-levels: a free power and a free cost per operation per core-clock level) chosen in each fold by an inner leave-one-kernel-out power MAPE over its training kernels".into(),
            "regret diagnostics: the same picks with the measured time (predicted power as computed) or the measured power (predicted time) in place of the prediction, to tell which side misleads the pick".into(),
            "calibration (the saved one): p chosen by leave-one-kernel-out over all kernels, factors fitted on all kernels; its expected error on unseen kernels is the nested out-of-fold MAPE".into(),
        ],
        calibration,
        calibration_in_sample_mape_pct: in_sample,
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
    fn calibrated_time_by_hand() {
        let c = TimeCalibration { a: [2.0, 1.0, 1.0, 0.5], p: 6.0 };
        // One pipeline: its scaled time plus sync.
        assert!((c.time([1.5, 0.0, 0.0, 0.0], 0.25) - 3.25).abs() < 1e-15);
        // Two equal scaled parts: 2^(1/6) times one of them.
        let t = c.time([1.0, 2.0, 0.0, 0.0], 0.0);
        assert!((t - 2.0 * 2f64.powf(1.0 / 6.0)).abs() < 1e-14, "{t}");
        // The L2 part counts like the others: 0.5 · 4 = 2 against the memory part's 2.
        let t = c.time([1.0, 0.0, 0.0, 4.0], 0.0);
        assert!((t - 2.0 * 2f64.powf(1.0 / 6.0)).abs() < 1e-14, "{t}");
        // a_l2 = 0 (a version-1 file) is exactly the three-term form.
        let v1 = TimeCalibration { a: [2.0, 1.0, 1.0, 0.0], p: 6.0 };
        assert_eq!(v1.time([0.3, 0.5, 0.1, 9.0], 0.1), v1.time([0.3, 0.5, 0.1, 0.0], 0.1));
        // The generic exponent path agrees with the p = 6 fast path.
        let g = TimeCalibration { p: 6.0 + 1e-12, ..c };
        assert!((g.time([0.3, 0.5, 0.1, 0.2], 0.0) - c.time([0.3, 0.5, 0.1, 0.2], 0.0)).abs() < 1e-9);
        assert_eq!(c.time([0.0; 4], 0.5), 0.5);
    }

    #[test]
    fn time_fit_recovers_known_factors() {
        // Times generated by known factors on rows that mix the pipelines.
        let truth = TimeCalibration { a: [1.2, 1.5, 1.0, 2.0], p: 6.0 };
        let rows: Vec<CalRow> = [
            [1.0, 0.1, 0.0, 0.2],
            [0.2, 2.0, 0.0, 0.1],
            [0.5, 0.4, 0.0, 0.9],
            [0.1, 3.0, 0.0, 0.05],
            [2.0, 1.9, 0.0, 0.4],
            [1.5, 0.2, 0.0, 1.6],
            [0.9, 1.0, 0.0, 0.3],
            [0.4, 0.3, 0.0, 1.1],
        ]
        .iter()
        .map(|&parts| (parts, 0.01, truth.time(parts, 0.01)))
        .collect();
        let c = TimeCalibration::fit(&rows, 6.0);
        assert!((c.a[0] - 1.2).abs() < 1e-5 && (c.a[1] - 1.5).abs() < 1e-5, "{c:?}");
        assert!((c.a[3] - 2.0).abs() < 1e-5, "{c:?}");
        assert_eq!(c.a[2], 1.0, "no shared time in the rows: factor stays 1");
    }

    #[test]
    fn fast_powers_and_roots_match_the_library_ones() {
        for &x in &[1e-300, 3e-20, 0.001, 0.5, 1.0, 1.7, 8.0, 12345.678, 7e40, 1e250] {
            let c = cbrt(x);
            assert!((c / x.cbrt() - 1.0).abs() < 2e-15, "cbrt({x}) = {c}");
            for p in nested::EXPONENTS {
                let y = x.clamp(1e-20, 1e20);
                assert!((power(y, p) / y.powf(p) - 1.0).abs() < 1e-14, "{y}^{p}");
                // powf(1/p) itself is off by ln(x)·(rounding of 1/p), up to ~1.3e-14 here.
                assert!((root(x, p) / x.powf(1.0 / p) - 1.0).abs() < 1e-13, "{x}^(1/{p})");
            }
        }
        // Outside the fast range and off the candidate list: the library functions.
        assert_eq!(cbrt(0.0), 0.0);
        assert_eq!(cbrt(-8.0), -2.0);
        assert_eq!(root(5.0, 2.5), 5f64.powf(0.4));
        assert_eq!(power(5.0, 2.5), 5f64.powf(2.5));
    }

    #[test]
    fn nelder_mead_finds_a_quadratic_minimum() {
        let f = |x: &[f64]| (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2);
        let (x, v) = nelder_mead(&f, &[0.0, 0.0], 0.5, 5000, Tolerance { value: 1e-13, size: 1e-9 });
        assert!((x[0] - 1.0).abs() < 1e-5 && (x[1] + 2.0).abs() < 1e-5 && v < 1e-9, "{x:?} {v}");
    }
}
