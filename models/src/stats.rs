//! Small statistics shared by the crates that report figures (medians over seeds, regrets, …): the
//! workspace's one MAPE and one least-squares solver.

/// A time-weighted mean over a window: each value counts in proportion to how much of its interval
/// overlaps the window, so counter intervals that straddle a window's edges count for their part inside
/// it. Non-finite values (a counter the interval lacks) are left out. The one overlap mean of the trace
/// merger and the suite.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OverlapMean {
    sum: f64,
    weight_s: f64,
}

impl OverlapMean {
    /// Adds `value` held over `(start_s, end_s)`, weighted by its overlap with the window `(w0_s, w1_s)`.
    pub fn add(&mut self, value: f64, (start_s, end_s): (f64, f64), (w0_s, w1_s): (f64, f64)) {
        let overlap_s = end_s.min(w1_s) - start_s.max(w0_s);
        if overlap_s > 0.0 && value.is_finite() {
            self.sum += value * overlap_s;
            self.weight_s += overlap_s;
        }
    }

    /// The mean, or `None` when nothing overlapped the window.
    pub fn mean(&self) -> Option<f64> {
        (self.weight_s > 0.0).then(|| self.sum / self.weight_s)
    }
}

/// The median of `v` (mean of the two middle values for an even count); NaN for an empty `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Standard error of the mean of `v` (sample standard deviation / √n); NaN for fewer than two values.
/// The noise estimate of the one-standard-error rules (train's model selection, validate's calibration
/// keep rule).
pub fn standard_error(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return f64::NAN;
    }
    let mean = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt()
}

/// Mean absolute percentage error of (predicted, measured) pairs, percent; NaN when there are none.
/// Pairs with a measured value of 0 give an infinite error: callers reject such rows first.
pub fn mape(pairs: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for (p, m) in pairs {
        s += ((p - m) / m).abs();
        n += 1;
    }
    if n == 0 { f64::NAN } else { 100.0 * s / n as f64 }
}

/// Solves the least-squares problem min ‖X β − y‖² + λ‖β‖² (no penalty on column 0, the intercept) by
/// the normal equations with partial pivoting; `None` when the system is singular or `x` is empty.
pub fn least_squares(x: &[Vec<f64>], y: &[f64], lambda: f64) -> Option<Vec<f64>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_error_is_the_sample_deviation_over_root_n() {
        // [1, 2, 3, 4]: sample variance 5/3, so the standard error is sqrt(5/3 / 4).
        let se = standard_error(&[1.0, 2.0, 3.0, 4.0]);
        assert!((se - (5.0f64 / 12.0).sqrt()).abs() < 1e-12, "{se}");
        assert!(standard_error(&[3.0]).is_nan());
    }

    #[test]
    fn median_of_even_odd_and_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn mape_by_hand() {
        // |110 − 100| / 100 = 10%, |45 − 50| / 50 = 10%, |3 − 3| = 0 → 20 / 3 %.
        let m = mape([(110.0, 100.0), (45.0, 50.0), (3.0, 3.0)]);
        assert!((m - 20.0 / 3.0).abs() < 1e-12, "{m}");
        assert!(mape(std::iter::empty()).is_nan());
    }

    #[test]
    fn least_squares_by_hand() {
        // y = 1 + 2x on three points.
        let x = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 2.0]];
        let b = least_squares(&x, &[1.0, 3.0, 5.0], 0.0).unwrap();
        assert!((b[0] - 1.0).abs() < 1e-12 && (b[1] - 2.0).abs() < 1e-12);
        // A repeated column is singular.
        assert!(least_squares(&[vec![1.0, 1.0], vec![2.0, 2.0]], &[1.0, 2.0], 0.0).is_none());
    }
}
