//! Small statistics shared by the crates that report figures (medians over seeds, regrets, …): the
//! workspace's one MAPE, one least-squares solver and one straight-line fit with R².

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

/// The mean of `v`; NaN for an empty `v`.
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 }
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

/// A least-squares line `y = slope·x + intercept` with its coefficient of determination ([`fit_line`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LineFit {
    /// Slope.
    pub slope: f64,
    /// Intercept.
    pub intercept: f64,
    /// R² = 1 − SS_res / SS_tot; 1 when all y are equal (the flat line fits them exactly), as
    /// scikit-learn's `r2_score` does for a perfect fit of a constant.
    pub r2: f64,
    /// Number of points.
    pub n: usize,
}

/// Why [`fit_line`] cannot fit a line. Callers turn each case into their own message (which table, what
/// to change), so the cases are kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineFitError {
    /// `x` and `y` differ in length.
    #[error("{x} x values but {y} y values: give one y per x")]
    Misaligned { x: usize, y: usize },
    /// Fewer than two distinct x: the slope is undetermined.
    #[error("a line needs at least two different x values")]
    TooFewDistinctX,
    /// A value is NaN or infinite.
    #[error("a value is NaN or infinite")]
    NotFinite,
}

/// Fits `y = slope·x + intercept` by least squares, with R². Needs equally many x and y, all finite, and
/// two or more distinct x.
///
/// Closed form on centred data (the same line as [`least_squares`] on the columns (1, x), without forming
/// the uncentred normal equations). The means are taken about the first value so that an exactly constant
/// y has an exact mean (zero slope, R² = 1), which a plain sum can miss by rounding (three times 0.1 sums
/// to 0.30000000000000004).
pub fn fit_line(x: &[f64], y: &[f64]) -> Result<LineFit, LineFitError> {
    if x.len() != y.len() {
        return Err(LineFitError::Misaligned { x: x.len(), y: y.len() });
    }
    if x.iter().chain(y).any(|v| !v.is_finite()) {
        return Err(LineFitError::NotFinite);
    }
    let (Some(&x0), Some(&y0)) = (x.first(), y.first()) else {
        return Err(LineFitError::TooFewDistinctX);
    };
    let n = x.len();
    let nf = n as f64;
    let mx = x0 + x.iter().map(|v| v - x0).sum::<f64>() / nf;
    let my = y0 + y.iter().map(|v| v - y0).sum::<f64>() / nf;
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    if x.iter().all(|&v| v == x0) || sxx <= 0.0 {
        return Err(LineFitError::TooFewDistinctX);
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_res: f64 = x.iter().zip(y).map(|(a, b)| (b - (slope * a + intercept)).powi(2)).sum();
    let ss_tot: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    let r2 = if ss_tot > 0.0 { 1.0 - ss_res / ss_tot } else { 1.0 };
    // Finite inputs can still overflow (|x| near f64::MAX): refuse rather than return a NaN line.
    if !(slope.is_finite() && intercept.is_finite() && r2.is_finite()) {
        return Err(LineFitError::NotFinite);
    }
    Ok(LineFit { slope, intercept, r2, n })
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

    #[test]
    fn fit_line_recovers_an_exact_line_with_r2_one() {
        let x = [1.2, 1.6, 2.0, 2.6];
        let y: Vec<f64> = x.iter().map(|f| 111.0 * f + 6.1).collect();
        let l = fit_line(&x, &y).unwrap();
        assert!((l.slope - 111.0).abs() < 1e-9 && (l.intercept - 6.1).abs() < 1e-9, "{l:?}");
        assert!((l.r2 - 1.0).abs() < 1e-12 && l.n == 4, "{l:?}");
        // Hand-computed: x = 0,1,2, y = 0,2,1 → slope 0.5, intercept 0.5, SS_res = 1.5, SS_tot = 2 → R² 0.25.
        let l = fit_line(&[0.0, 1.0, 2.0], &[0.0, 2.0, 1.0]).unwrap();
        assert!((l.slope - 0.5).abs() < 1e-12 && (l.intercept - 0.5).abs() < 1e-12, "{l:?}");
        assert!((l.r2 - 0.25).abs() < 1e-12, "{l:?}");
    }

    /// x far from 0 with a small spread (clocks in kHz over a narrow range): the line is still recovered.
    #[test]
    fn fit_line_recovers_a_line_far_from_the_origin() {
        let x = [1_000_000.0, 1_000_001.0, 1_000_002.0, 1_000_003.0];
        let y: Vec<f64> = x.iter().map(|f| 0.25 * f - 3.0).collect();
        let l = fit_line(&x, &y).unwrap();
        assert!((l.slope - 0.25).abs() < 1e-9 && (l.intercept + 3.0).abs() < 1e-3, "{l:?}");
    }

    /// A constant y is fitted exactly by a flat line: slope 0, intercept the value, R² 1 — also for a
    /// value whose plain mean rounds (0.1 three times sums to 0.30000000000000004).
    #[test]
    fn fit_line_of_a_constant_y_is_flat_with_r2_one() {
        let l = fit_line(&[1.0, 2.0, 3.0], &[0.1, 0.1, 0.1]).unwrap();
        assert_eq!((l.slope, l.intercept, l.r2, l.n), (0.0, 0.1, 1.0, 3));
    }

    #[test]
    fn fit_line_needs_two_distinct_x_and_aligned_finite_values() {
        assert_eq!(fit_line(&[], &[]), Err(LineFitError::TooFewDistinctX));
        assert_eq!(fit_line(&[1.0], &[2.0]), Err(LineFitError::TooFewDistinctX));
        assert_eq!(fit_line(&[0.1, 0.1, 0.1], &[1.0, 2.0, 3.0]), Err(LineFitError::TooFewDistinctX));
        assert_eq!(fit_line(&[1.0, 2.0], &[2.0]), Err(LineFitError::Misaligned { x: 2, y: 1 }));
        assert_eq!(fit_line(&[1.0, f64::NAN], &[2.0, 3.0]), Err(LineFitError::NotFinite));
        assert_eq!(fit_line(&[1.0, 2.0], &[f64::NAN, 3.0]), Err(LineFitError::NotFinite));
        assert_eq!(fit_line(&[1.0, 2.0], &[f64::INFINITY, 3.0]), Err(LineFitError::NotFinite));
        // Finite but overflowing: the sums leave the f64 range.
        assert_eq!(fit_line(&[-1e308, 1e308], &[1e308, -1e308]), Err(LineFitError::NotFinite));
    }
}
