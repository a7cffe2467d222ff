//! The power model `validate` uses for the E·D^n optima: a ridge-regularized multiple linear regression
//! of measured power on the clocks and counter rates at the predicted time, with a choice of inputs.
//!
//! The inputs are candidates because the physics leaves a choice: dynamic power is the activity (counter
//! rates) times `C·V²`, and the voltage `V` rises with the core clock by steps the data does not name
//! (on the GTX 980 the last step, 1300 → 1500 MHz, adds ~50% power at nearly the same time). A plain
//! additive model can only shift power by clock, not scale the activity's cost with it. Which input set
//! generalizes is decided by cross-validation over kernels (see `validate`), never by the regret.

use gpumodel_models::stats::least_squares;
use serde::Serialize;

/// One row the power model sees: its clocks, the kernel's rate numerators and the measured power.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerRow {
    pub core_mhz: f64,
    pub mem_mhz: f64,
    /// Each utilization at the default clocks times the time there (totals over the unit's peak rate);
    /// divided by a time, a rate relative to peak.
    pub util_t0: [f64; 8],
    pub measured_w: f64,
}

/// The candidate input sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PowerInputs {
    /// Intercept, core and memory clock (GHz), core clock³ (a V²·f proxy) and the eight rates.
    Clocks,
    /// `Clocks` plus each rate times core clock² (activity × V², with V ∝ f).
    RatesTimesV2,
    /// Intercept, one indicator per core and per memory clock level seen in training (a free
    /// static/idle power per level), the eight rates and the rates times each core-level indicator (a
    /// free energy per operation per voltage step).
    ClockLevels,
}

impl PowerInputs {
    /// Every candidate, in the order ties are broken (the simplest first).
    pub const ALL: [PowerInputs; 3] =
        [PowerInputs::Clocks, PowerInputs::RatesTimesV2, PowerInputs::ClockLevels];

    pub fn label(self) -> &'static str {
        match self {
            PowerInputs::Clocks => "clocks",
            PowerInputs::RatesTimesV2 => "rates-times-v2",
            PowerInputs::ClockLevels => "clock-levels",
        }
    }
}

/// Clock levels seen in the training rows (MHz, sorted, distinct).
#[derive(Debug, Clone, PartialEq)]
struct Levels {
    core: Vec<f64>,
    mem: Vec<f64>,
}

impl Levels {
    fn of(rows: &[&PowerRow]) -> Levels {
        let distinct = |f: &dyn Fn(&PowerRow) -> f64| {
            let mut v: Vec<f64> = rows.iter().map(|r| f(r)).collect();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        };
        Levels { core: distinct(&|r| r.core_mhz), mem: distinct(&|r| r.mem_mhz) }
    }
}

/// The raw (unstandardized) inputs of a row at time `t`; column 0 is the intercept.
fn inputs(kind: PowerInputs, levels: &Levels, r: &PowerRow, t: f64) -> Vec<f64> {
    let fc = r.core_mhz / 1000.0;
    let fm = r.mem_mhz / 1000.0;
    let rates = r.util_t0.map(|u| u / t.max(f64::MIN_POSITIVE));
    match kind {
        PowerInputs::Clocks => {
            let mut f = vec![1.0, fc, fm, fc * fc * fc];
            f.extend(rates);
            f
        }
        PowerInputs::RatesTimesV2 => {
            let mut f = vec![1.0, fc, fm, fc * fc * fc];
            f.extend(rates);
            f.extend(rates.map(|x| x * fc * fc));
            f
        }
        PowerInputs::ClockLevels => {
            // The first level of each clock is the baseline (its indicator would duplicate the intercept).
            let core: Vec<f64> =
                levels.core.iter().skip(1).map(|&l| f64::from(u8::from(r.core_mhz == l))).collect();
            let mut f = vec![1.0];
            f.extend(&core);
            f.extend(levels.mem.iter().skip(1).map(|&l| f64::from(u8::from(r.mem_mhz == l))));
            f.extend(rates);
            for c in &core {
                f.extend(rates.map(|x| x * c));
            }
            f
        }
    }
}

/// A fitted power model.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerFit {
    kind: PowerInputs,
    levels: Levels,
    mean: Vec<f64>,
    sd: Vec<f64>,
    beta: Vec<f64>,
}

impl PowerFit {
    /// Fits on rows with their (predicted) times; `None` if the system is singular. The inputs are
    /// standardized on the training rows (except the intercept) and a small ridge (1e-3 per row) keeps
    /// the system well posed when an input is nearly constant.
    pub fn fit(kind: PowerInputs, rows: &[(&PowerRow, f64)]) -> Option<PowerFit> {
        let levels = Levels::of(&rows.iter().map(|(r, _)| *r).collect::<Vec<_>>());
        let x: Vec<Vec<f64>> = rows.iter().map(|(r, t)| inputs(kind, &levels, r, *t)).collect();
        let q = x.first()?.len();
        let n = x.len() as f64;
        let mut mean = vec![0.0; q];
        let mut sd = vec![1.0; q];
        for j in 1..q {
            mean[j] = x.iter().map(|r| r[j]).sum::<f64>() / n;
            let v = x.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n;
            sd[j] = if v > 0.0 { v.sqrt() } else { 1.0 };
        }
        let mut fit = PowerFit { kind, levels, mean, sd, beta: Vec::new() };
        let xz: Vec<Vec<f64>> = x.iter().map(|r| fit.standardize(r)).collect();
        let y: Vec<f64> = rows.iter().map(|(r, _)| r.measured_w).collect();
        fit.beta = least_squares(&xz, &y, 1e-3 * n)?;
        Some(fit)
    }

    fn standardize(&self, r: &[f64]) -> Vec<f64> {
        (0..r.len()).map(|j| if j == 0 { 1.0 } else { (r[j] - self.mean[j]) / self.sd[j] }).collect()
    }

    /// Predicted power (W) of a row at time `t`.
    pub fn predict(&self, r: &PowerRow, t: f64) -> f64 {
        let z = self.standardize(&inputs(self.kind, &self.levels, r, t));
        z.iter().zip(&self.beta).map(|(a, b)| a * b).sum()
    }
}

/// Leave-one-kernel-out power MAPE (percent) of one input set on rows `(row, time, kernel)`: each
/// kernel's rows predicted by a fit on the others, identical to [`PowerFit::fit`] on those rows
/// (standardized ridge = ridge on the raw inputs with each penalty scaled by the input's variance) but
/// computed from per-kernel sums, so the whole LOKO costs about one fit. `None` if a fit is singular.
///
/// The clock levels are those of all the given rows (every NV-DVFS kernel runs the same clock pairs).
pub fn loko_mape_pct(kind: PowerInputs, rows: &[(&PowerRow, f64, usize)]) -> Option<f64> {
    let levels = Levels::of(&rows.iter().map(|(r, _, _)| *r).collect::<Vec<_>>());
    let n_kernels = rows.iter().map(|r| r.2 + 1).max()?;
    let x: Vec<Vec<f64>> = rows.iter().map(|(r, t, _)| inputs(kind, &levels, r, *t)).collect();
    let q = x.first()?.len();
    // Per kernel: Σ x xᵀ, Σ x y, and the row count.
    let mut gram = vec![vec![0.0; q * q]; n_kernels];
    let mut xy = vec![vec![0.0; q]; n_kernels];
    let mut count = vec![0usize; n_kernels];
    for (xi, (r, _, k)) in x.iter().zip(rows) {
        let g = &mut gram[*k];
        for i in 0..q {
            for j in i..q {
                g[i * q + j] += xi[i] * xi[j];
            }
            xy[*k][i] += xi[i] * r.measured_w;
        }
        count[*k] += 1;
    }
    let sum =
        |v: &[Vec<f64>]| -> Vec<f64> { (0..v[0].len()).map(|i| v.iter().map(|g| g[i]).sum()).collect() };
    let (gram_all, xy_all, n_all) = (sum(&gram), sum(&xy), count.iter().sum::<usize>());
    let (mut err, mut n_err) = (0.0, 0usize);
    for k in (0..n_kernels).filter(|&k| count[k] > 0) {
        let n = (n_all - count[k]) as f64;
        if n == 0.0 {
            return None;
        }
        // Column 0 is the intercept, so row 0 of the Gram matrix holds the sums of the inputs.
        let g = |i: usize, j: usize| {
            let (i, j) = (i.min(j), i.max(j));
            gram_all[i * q + j] - gram[k][i * q + j]
        };
        let mut a: Vec<Vec<f64>> = (0..q).map(|i| (0..q).map(|j| g(i, j)).collect()).collect();
        let lambda = 1e-3 * n;
        for (j, row) in a.iter_mut().enumerate().skip(1) {
            let mean = g(0, j) / n;
            let var = g(j, j) / n - mean * mean;
            // As `PowerFit::fit`: a constant input is standardized with sd 1.
            let var = if var > 1e-12 * (g(j, j) / n).max(f64::MIN_POSITIVE) { var } else { 1.0 };
            row[j] += lambda * var;
        }
        let b: Vec<f64> = (0..q).map(|i| xy_all[i] - xy[k][i]).collect();
        let beta = solve(a, b)?;
        for (xi, (r, _, _)) in x.iter().zip(rows).filter(|(_, (_, _, kk))| *kk == k) {
            let p: f64 = xi.iter().zip(&beta).map(|(a, b)| a * b).sum();
            err += ((p - r.measured_w) / r.measured_w).abs();
            n_err += 1;
        }
    }
    Some(100.0 * err / n_err.max(1) as f64)
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting; `None` if singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let q = b.len();
    for c in 0..q {
        let piv = (c..q).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[piv][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, piv);
        b.swap(c, piv);
        let (top, below) = a.split_at_mut(c + 1);
        let pivot = &top[c];
        let (b_top, b_below) = b.split_at_mut(c + 1);
        for (row, br) in below.iter_mut().zip(b_below) {
            let f = row[c] / pivot[c];
            if f != 0.0 {
                for (v, pv) in row[c..].iter_mut().zip(&pivot[c..]) {
                    *v -= f * pv;
                }
                *br -= f * b_top[c];
            }
        }
    }
    let mut x = vec![0.0; q];
    for c in (0..q).rev() {
        let s: f64 = (c + 1..q).map(|j| a[c][j] * x[j]).sum();
        x[c] = (b[c] - s) / a[c][c];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of 4 kernels at 3 × 2 clock pairs, power from a known V²-scaled activity model plus a
    /// kernel-specific offset.
    fn rows() -> Vec<(PowerRow, f64, usize)> {
        let mut v = Vec::new();
        for k in 0..4 {
            for (ci, &core) in [700.0, 1100.0, 1500.0].iter().enumerate() {
                for &mem in &[2100.0, 3900.0] {
                    let mut util_t0 = [0.0; 8];
                    util_t0[0] = 0.001 * (1 + k) as f64;
                    util_t0[7] = 0.002 * (4 - k) as f64 * mem / 3900.0;
                    util_t0[5] = 0.0005 * ((k * 7 + ci) % 5) as f64;
                    let t = 0.01 * 1000.0 / core;
                    let fc = core / 1000.0;
                    let measured_w = 50.0
                        + 10.0 * fc
                        + 40.0 * fc * fc * util_t0[0] / t
                        + 20.0 * util_t0[7] / t
                        + 3.0 * k as f64;
                    v.push((PowerRow { core_mhz: core, mem_mhz: mem, util_t0, measured_w }, t, k));
                }
            }
        }
        v
    }

    /// The sums-based LOKO must be the same model as fitting each fold with [`PowerFit::fit`].
    #[test]
    fn loko_from_sums_equals_fold_by_fold_fits() {
        let data = rows();
        for kind in PowerInputs::ALL {
            let with_kernel: Vec<(&PowerRow, f64, usize)> =
                data.iter().map(|(r, t, k)| (r, *t, *k)).collect();
            let fast = loko_mape_pct(kind, &with_kernel).unwrap();
            let (mut err, mut n) = (0.0, 0);
            for fold in 0..4 {
                let train: Vec<(&PowerRow, f64)> =
                    data.iter().filter(|d| d.2 != fold).map(|(r, t, _)| (r, *t)).collect();
                let fit = PowerFit::fit(kind, &train).unwrap();
                for (r, t, _) in data.iter().filter(|d| d.2 == fold) {
                    err += ((fit.predict(r, *t) - r.measured_w) / r.measured_w).abs();
                    n += 1;
                }
            }
            let slow = 100.0 * err / n as f64;
            assert!((fast - slow).abs() < 1e-8 * slow.max(1.0), "{kind:?}: {fast} vs {slow}");
        }
    }

    #[test]
    fn solve_by_hand() {
        let x = solve(vec![vec![0.0, 2.0], vec![1.0, 1.0]], vec![4.0, 3.0]).unwrap();
        assert!((x[0] - 1.0).abs() < 1e-15 && (x[1] - 2.0).abs() < 1e-15, "{x:?}");
        assert!(solve(vec![vec![1.0, 2.0], vec![2.0, 4.0]], vec![1.0, 2.0]).is_none());
    }
}
