//! The Nelder–Mead simplex minimizer the calibration fits use (derivative-free: the calibration's
//! objective, a mean absolute relative error, is only piecewise smooth).

/// When the simplex stops: its values within `value` (relative) and its vertices within `size` (in
/// log-factor) of the best one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tolerance {
    pub(crate) value: f64,
    pub(crate) size: f64,
}

/// Minimizes `f` from `x0` with the Nelder–Mead simplex (standard coefficients: reflection 1, expansion
/// 2, contraction ½, shrink ½; initial simplex `x0 + step·e_i`); stops at `tol` or after `max_evals`.
/// Returns the best point and its value.
pub(crate) fn nelder_mead(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nelder_mead_finds_a_quadratic_minimum() {
        let f = |x: &[f64]| (x[0] - 1.0).powi(2) + 10.0 * (x[1] + 2.0).powi(2);
        let (x, v) = nelder_mead(&f, &[0.0, 0.0], 0.5, 5000, Tolerance { value: 1e-13, size: 1e-9 });
        assert!((x[0] - 1.0).abs() < 1e-5 && (x[1] + 2.0).abs() < 1e-5 && v < 1e-9, "{x:?} {v}");
    }
}
