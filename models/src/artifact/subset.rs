//! A linear power model on any subset of a model's inputs, fitted when a kernel profile lacks some of them.
//!
//! An export holds what its user asked the profiler for: an ncu export with FP counts, shared wavefronts and
//! DRAM bytes but no instruction or global-load counts cannot feed a model of ten inputs. Rather than stop,
//! `predict` fits a least-squares line on the inputs the profile does give, from the training rows of the
//! model it was asked to use, and states which inputs it lacked and the line's held-out error.
//!
//! The rows themselves are not kept: the artifact holds, per fold of the training data's grouped k-fold,
//! the sums of `z zᵀ` over the fold's rows with `z = (1, x₁/s₁, …, xₙ/sₙ, y)` (inputs divided by their
//! training standard deviation `sᵢ`, target last). Any subset's normal equations are a sub-block of their
//! sum, and its cross-validated squared error is exact: fitted on the other folds' sums, scored on the
//! fold's (Σ(y − b·x)² = yᵀy − 2b·Xᵀy + bᵀXᵀXb). So the held-out RMSE stated beside the answer is the one
//! the same refit would have shown on kernels it did not see.

use serde::{Deserialize, Serialize};

/// Per-fold least-squares statistics of a model's training rows (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubsetFits {
    /// The inputs, in the order of rows 1..=n of each matrix.
    pub inputs: Vec<String>,
    /// The standard deviation each input was divided by (1 for a constant input).
    pub scale: Vec<f64>,
    /// How the folds were made (e.g. `group-kfold by kernel, 5 folds`).
    pub folds_from: String,
    /// Per fold, the (n + 2) × (n + 2) matrix Σ z zᵀ over its rows, row-major.
    pub folds: Vec<Vec<f64>>,
}

/// A linear model on a subset of the inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubsetFit {
    /// The inputs it reads, in the artifact's order.
    pub inputs: Vec<String>,
    /// W at all inputs zero.
    pub intercept: f64,
    /// W per unit of each input (unscaled).
    pub weights: Vec<f64>,
    /// Root-mean-square error over the held-out folds, W.
    pub cv_rmse_w: f64,
    /// Mean target of the training rows, W (to read the RMSE against).
    pub mean_w: f64,
    pub rows: usize,
    pub folds: usize,
}

impl SubsetFit {
    /// Power for the values of [`SubsetFit::inputs`], in that order.
    pub fn predict(&self, values: &[f64]) -> f64 {
        self.intercept + self.weights.iter().zip(values).map(|(w, v)| w * v).sum::<f64>()
    }
}

/// Ridge penalty on the standardized inputs, relative to the number of rows: enough to keep nearly
/// collinear inputs solvable, far below what would move a well-posed fit.
const RIDGE: f64 = 1e-6;

impl SubsetFits {
    /// The statistics of `rows` (row-major, `inputs.len()` values each) and `targets`, folded by `fold_of`
    /// (fold index per row, `0..n_folds`). `None` with fewer than two folds or a non-finite value.
    pub fn build(
        inputs: &[String],
        rows: &[Vec<f64>],
        targets: &[f64],
        fold_of: &[usize],
        folds_from: &str,
    ) -> Option<SubsetFits> {
        let n = inputs.len();
        let n_folds = fold_of.iter().copied().max()? + 1;
        if n_folds < 2 || rows.len() != targets.len() || rows.len() != fold_of.len() {
            return None;
        }
        if rows.iter().flatten().chain(targets).any(|v| !v.is_finite()) || rows.iter().any(|r| r.len() != n) {
            return None;
        }
        let scale: Vec<f64> = (0..n)
            .map(|j| {
                let m = rows.iter().map(|r| r[j]).sum::<f64>() / rows.len() as f64;
                let var = rows.iter().map(|r| (r[j] - m).powi(2)).sum::<f64>() / rows.len() as f64;
                if var.sqrt() > 0.0 { var.sqrt() } else { 1.0 }
            })
            .collect();
        let d = n + 2;
        let mut folds = vec![vec![0.0; d * d]; n_folds];
        let mut z = vec![0.0; d];
        for ((r, &y), &f) in rows.iter().zip(targets).zip(fold_of) {
            z[0] = 1.0;
            for j in 0..n {
                z[j + 1] = r[j] / scale[j];
            }
            z[d - 1] = y;
            let m = &mut folds[f];
            for a in 0..d {
                for b in 0..d {
                    m[a * d + b] += z[a] * z[b];
                }
            }
        }
        if folds.iter().any(|m| m[0] == 0.0) {
            return None;
        }
        Some(SubsetFits { inputs: inputs.to_vec(), scale, folds_from: folds_from.to_string(), folds })
    }

    fn dim(&self) -> usize {
        self.inputs.len() + 2
    }

    /// Whether the statistics are consistent (sizes, finite values): an artifact's check.
    pub fn is_valid(&self) -> bool {
        let d = self.dim();
        self.scale.len() == self.inputs.len()
            && self.folds.len() >= 2
            && self.folds.iter().all(|m| m.len() == d * d && m.iter().all(|v| v.is_finite()) && m[0] > 0.0)
            && self.scale.iter().all(|s| s.is_finite() && *s > 0.0)
    }

    /// The line on the inputs for which `available` is true (by name), with its held-out RMSE; `None`
    /// when no fit is possible (a singular system even with the ridge).
    pub fn fit(&self, available: impl Fn(&str) -> bool) -> Option<SubsetFit> {
        let d = self.dim();
        let y = d - 1;
        // Indices into z: the intercept, then the available inputs.
        let idx: Vec<usize> = std::iter::once(0)
            .chain((0..self.inputs.len()).filter(|&j| available(&self.inputs[j])).map(|j| j + 1))
            .collect();
        let sum = |skip: Option<usize>| -> Vec<f64> {
            let mut s = vec![0.0; d * d];
            for (f, m) in self.folds.iter().enumerate() {
                if Some(f) != skip {
                    s.iter_mut().zip(m).for_each(|(a, b)| *a += b);
                }
            }
            s
        };
        let solve = |m: &[f64]| -> Option<Vec<f64>> {
            let k = idx.len();
            let rows = m[0];
            let mut a = vec![0.0; k * k];
            let mut b = vec![0.0; k];
            for (p, &i) in idx.iter().enumerate() {
                for (q, &j) in idx.iter().enumerate() {
                    a[p * k + q] = m[i * d + j];
                }
                if p > 0 {
                    a[p * k + p] += RIDGE * rows;
                }
                b[p] = m[i * d + y];
            }
            cholesky_solve(&mut a, &mut b, k)?;
            Some(b)
        };
        let sse = |m: &[f64], beta: &[f64]| -> f64 {
            let mut s = m[y * d + y];
            for (p, &i) in idx.iter().enumerate() {
                s -= 2.0 * beta[p] * m[i * d + y];
                for (q, &j) in idx.iter().enumerate() {
                    s += beta[p] * beta[q] * m[i * d + j];
                }
            }
            s.max(0.0)
        };
        let mut total_sse = 0.0;
        for f in 0..self.folds.len() {
            let beta = solve(&sum(Some(f)))?;
            total_sse += sse(&self.folds[f], &beta);
        }
        let all = sum(None);
        let beta = solve(&all)?;
        let rows = all[0];
        let weights: Vec<f64> =
            idx[1..].iter().zip(&beta[1..]).map(|(&i, b)| b / self.scale[i - 1]).collect();
        Some(SubsetFit {
            inputs: idx[1..].iter().map(|&i| self.inputs[i - 1].clone()).collect(),
            intercept: beta[0],
            weights,
            cv_rmse_w: (total_sse / rows).sqrt(),
            mean_w: all[y] / rows,
            rows: rows.round() as usize,
            folds: self.folds.len(),
        })
    }
}

/// Solves `a x = b` in place (`b` becomes `x`) for a symmetric positive definite `k × k` matrix `a`.
fn cholesky_solve(a: &mut [f64], b: &mut [f64], k: usize) -> Option<()> {
    for j in 0..k {
        let mut s = a[j * k + j];
        for p in 0..j {
            s -= a[j * k + p] * a[j * k + p];
        }
        if !(s > 0.0 && s.is_finite()) {
            return None;
        }
        let l = s.sqrt();
        a[j * k + j] = l;
        for i in j + 1..k {
            let mut s = a[i * k + j];
            for p in 0..j {
                s -= a[i * k + p] * a[j * k + p];
            }
            a[i * k + j] = s / l;
        }
    }
    for i in 0..k {
        let mut s = b[i];
        for p in 0..i {
            s -= a[i * k + p] * b[p];
        }
        b[i] = s / a[i * k + i];
    }
    for i in (0..k).rev() {
        let mut s = b[i];
        for p in i + 1..k {
            s -= a[p * k + i] * b[p];
        }
        b[i] = s / a[i * k + i];
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of y = 10 + 2·a + 3·b + 0.5·c with a small deterministic disturbance.
    fn data(n: usize) -> (Vec<String>, Vec<Vec<f64>>, Vec<f64>, Vec<usize>) {
        let names = ["a", "b", "c"].map(String::from).to_vec();
        let mut rows = Vec::new();
        let mut y = Vec::new();
        for i in 0..n {
            let (a, b, c) = ((i % 7) as f64 * 1.5, ((i * 3) % 11) as f64, ((i * 5) % 13) as f64 * 100.0);
            let noise = if i % 2 == 0 { 0.25 } else { -0.25 };
            rows.push(vec![a, b, c]);
            y.push(10.0 + 2.0 * a + 3.0 * b + 0.5 * c + noise);
        }
        let folds = (0..n).map(|i| i % 5).collect();
        (names, rows, y, folds)
    }

    #[test]
    fn all_inputs_recover_the_law_and_its_noise() {
        let (names, rows, y, folds) = data(60);
        let s = SubsetFits::build(&names, &rows, &y, &folds, "test").unwrap();
        assert!(s.is_valid());
        let f = s.fit(|_| true).unwrap();
        assert!((f.intercept - 10.0).abs() < 0.2, "{f:?}");
        for (w, t) in f.weights.iter().zip([2.0, 3.0, 0.5]) {
            assert!((w - t).abs() < 0.02, "{f:?}");
        }
        // The disturbance is ±0.25 W: the held-out RMSE is about that.
        assert!(f.cv_rmse_w > 0.2 && f.cv_rmse_w < 0.3, "{f:?}");
        assert_eq!((f.rows, f.folds), (60, 5));
    }

    #[test]
    fn a_subset_matches_a_direct_least_squares_fit_on_the_rows() {
        let (names, rows, y, folds) = data(60);
        let s = SubsetFits::build(&names, &rows, &y, &folds, "test").unwrap();
        let f = s.fit(|n| n != "b").unwrap();
        assert_eq!(f.inputs, ["a", "c"]);
        // Normal equations of y on (1, a, c), solved here by Cramer's rule on the raw rows.
        let x: Vec<[f64; 3]> = rows.iter().map(|r| [1.0, r[0], r[2]]).collect();
        let mut m = [[0.0; 3]; 3];
        let mut v = [0.0; 3];
        for (r, t) in x.iter().zip(&y) {
            for i in 0..3 {
                v[i] += r[i] * t;
                for j in 0..3 {
                    m[i][j] += r[i] * r[j];
                }
            }
        }
        let det = |m: &[[f64; 3]; 3]| {
            m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
                - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
                + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        };
        let d = det(&m);
        let coef: Vec<f64> = (0..3)
            .map(|c| {
                let mut mc = m;
                for r in 0..3 {
                    mc[r][c] = v[r];
                }
                det(&mc) / d
            })
            .collect();
        assert!((f.intercept - coef[0]).abs() < 1e-3 * coef[0].abs().max(1.0), "{f:?} {coef:?}");
        assert!((f.weights[0] - coef[1]).abs() < 1e-4 * coef[1].abs().max(1.0), "{f:?} {coef:?}");
        assert!((f.weights[1] - coef[2]).abs() < 1e-4 * coef[2].abs().max(1.0), "{f:?} {coef:?}");
        // Without b (3 W per unit, spread 0–10) the line misses by several watts on held-out rows.
        assert!(f.cv_rmse_w > 3.0, "{f:?}");
    }

    #[test]
    fn the_held_out_error_is_the_one_a_refit_per_fold_gives() {
        let (names, rows, y, folds) = data(40);
        let s = SubsetFits::build(&names, &rows, &y, &folds, "test").unwrap();
        let f = s.fit(|n| n == "a").unwrap();
        // Refit per fold on the raw rows (a line in one variable, closed form) and score the fold.
        let mut sse = 0.0;
        for k in 0..5 {
            let tr: Vec<usize> = (0..40).filter(|i| folds[*i] != k).collect();
            let n = tr.len() as f64;
            let (mx, my) =
                (tr.iter().map(|&i| rows[i][0]).sum::<f64>() / n, tr.iter().map(|&i| y[i]).sum::<f64>() / n);
            let sxy: f64 = tr.iter().map(|&i| (rows[i][0] - mx) * (y[i] - my)).sum();
            let sxx: f64 = tr.iter().map(|&i| (rows[i][0] - mx).powi(2)).sum();
            let (b, a) = (sxy / sxx, my - sxy / sxx * mx);
            sse +=
                (0..40).filter(|i| folds[*i] == k).map(|i| (y[i] - a - b * rows[i][0]).powi(2)).sum::<f64>();
        }
        let rmse = (sse / 40.0).sqrt();
        assert!((f.cv_rmse_w - rmse).abs() < 1e-3 * rmse, "{} vs {rmse}", f.cv_rmse_w);
    }

    #[test]
    fn no_inputs_is_the_mean_and_one_fold_is_refused() {
        let (names, rows, y, folds) = data(30);
        let s = SubsetFits::build(&names, &rows, &y, &folds, "test").unwrap();
        let f = s.fit(|_| false).unwrap();
        let mean = y.iter().sum::<f64>() / 30.0;
        assert!((f.intercept - mean).abs() < 1e-9 && f.weights.is_empty());
        assert!(SubsetFits::build(&names, &rows, &y, &vec![0; 30], "test").is_none());
    }
}
