//! A combined predictor: our nested procedure's time and a peer model's time (Wang & Chu's general form,
//! [`crate::baseline`]) joined by a second stage chosen inside the same leave-one-kernel-out folds.
//!
//! The peer's constants are published, fitted by its authors on microbenchmarks, not on these kernels,
//! and its general form has no name-based case; its errors are partly uncorrelated with ours (BENCHMARKS.md
//! issue 14, session 7: it wins on six of the GTX 1080 Ti's 20 kernels). Two combinations compete:
//!
//! * **blend** — `log t = w·log t_ours + (1 − w)·log t_peer` (a weighted geometric mean), `w` on the grid
//!   [`WEIGHTS`], the one with the lowest MAPE over the training kernels' rows;
//! * **max** — `t = max(t_ours, t_peer)` (both models count the time of the work they see; each misses work
//!   the other sees), nothing fitted.
//!
//! **No kernel sees itself.** For the outer fold that holds out kernel `o`, the "ours" time of a training
//! kernel `k` is the fold's *inner* prediction ([`super::nested::FoldFit::inner_predicted`]: the fold's
//! chosen candidate fitted without `o` and `k`, at the pair fits' [`crate::calibration::Precision::Ranking`] tolerance), so
//! the second stage is chosen on out-of-fold times of
//! the training kernels, never on `o`'s rows. Each combination is scored by an inner leave-one-kernel-out
//! over the training kernels (the blend's `w` chosen without the scored kernel), the better one is taken,
//! and — as for the calibrations — it is kept only when it beats ours alone on those kernels by more than
//! one standard error of the per-kernel differences (`nested::keep_if_better`); otherwise the
//! fold predicts with ours alone. Caveat: which calibration candidate the fold chose was decided on all
//! its training kernels, so a training kernel's inner time is out of fold for its factors, not for that
//! choice (the held-out kernel is out of both).

use super::nested::{FoldFit, argmin, keep_if_better, kernel_mape_pct, pooled_mape_pct};
use gpumodel_models::stats::mape;

/// The blend weights on ours (0: the peer alone, 1: ours alone).
pub const WEIGHTS: [f64; 21] = {
    let mut w = [0.0; 21];
    let mut i = 0;
    while i < 21 {
        w[i] = i as f64 / 20.0;
        i += 1;
    }
    w
};

/// A second stage over (ours, peer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Combination {
    /// Weighted geometric mean, the weight on ours.
    Blend(f64),
    /// The larger of the two.
    Max,
}

impl Combination {
    /// The combined time. The blend is defined for positive finite times; where one of the two is not
    /// one (a model that predicts no time, or a broken one), the blend gives the other (ours where
    /// neither is), never NaN.
    pub fn time(self, ours: f64, peer: f64) -> f64 {
        let usable = |t: f64| t.is_finite() && t > 0.0;
        match self {
            Combination::Blend(w) => match (usable(ours), usable(peer)) {
                (true, true) => (w * ours.ln() + (1.0 - w) * peer.ln()).exp(),
                (false, true) => peer,
                _ => ours,
            },
            Combination::Max => ours.max(peer),
        }
    }

    /// The name reports print.
    pub fn label(self) -> String {
        match self {
            Combination::Blend(w) => format!("blend w={w:.2}"),
            Combination::Max => "max".into(),
        }
    }
}

/// One outer fold's second stage.
#[derive(Debug, Clone, PartialEq)]
pub struct CombinedFold {
    /// The better combination by the inner leave-one-kernel-out, fitted on all training kernels.
    pub chosen: Combination,
    /// Whether it beat ours alone on the training kernels by more than one standard error.
    pub kept: bool,
    /// Inner leave-one-kernel-out MAPE (percent, pooled over the training kernels' rows): blend, max.
    pub inner_mape_pct: [f64; 2],
    /// Ours alone on the same rows (the fold's inner predictions), percent.
    pub ours_inner_mape_pct: f64,
}

/// The combined model over every fold.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    pub folds: Vec<CombinedFold>,
    /// Per row, the combined out-of-fold time (ours alone where the fold dropped the combination).
    pub predicted: Vec<f64>,
}

/// The weight with the lowest MAPE over `rows` of (ours, peer, measured).
fn best_weight(rows: &[(f64, f64, f64)]) -> f64 {
    let scores: Vec<f64> = WEIGHTS
        .iter()
        .map(|&w| mape(rows.iter().map(|&(o, p, y)| (Combination::Blend(w).time(o, p), y))))
        .collect();
    WEIGHTS[argmin(&scores)]
}

/// Runs the second stage: `ours[i]` is row `i`'s out-of-fold time of our procedure, `peer[i]` the peer's,
/// `measured[i]` the measurement, `kernel[i]` its kernel, `folds[k]` the nested procedure's fold that held
/// out kernel `k` (its inner predictions).
pub fn combine(
    ours: &[f64],
    peer: &[f64],
    measured: &[f64],
    kernel: &[usize],
    folds: &[FoldFit],
) -> Combined {
    let n_kernels = folds.len();
    let mut predicted = ours.to_vec();
    let mut out = Vec::with_capacity(n_kernels);
    for (o, fold) in folds.iter().enumerate() {
        let inner: Vec<usize> = (0..n_kernels).filter(|&k| k != o).collect();
        // Each training kernel's rows: (ours inner, peer, measured).
        let rows_of: Vec<Vec<(f64, f64, f64)>> = inner
            .iter()
            .map(|&k| {
                (0..kernel.len())
                    .filter(|&i| kernel[i] == k)
                    .map(|i| {
                        (
                            fold.inner_predicted[i].expect("a training row has an inner time"),
                            peer[i],
                            measured[i],
                        )
                    })
                    .collect()
            })
            .collect();
        let per_kernel = |t: &dyn Fn(usize, f64, f64) -> f64| -> Vec<Vec<(f64, f64)>> {
            rows_of
                .iter()
                .enumerate()
                .map(|(j, v)| v.iter().map(|&(a, p, y)| (t(j, a, p), y)).collect())
                .collect()
        };
        let weights: Vec<f64> = (0..inner.len())
            .map(|j| {
                let others: Vec<(f64, f64, f64)> = rows_of
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != j)
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                best_weight(&others)
            })
            .collect();
        let candidates = [
            per_kernel(&|j, a, p| Combination::Blend(weights[j]).time(a, p)),
            per_kernel(&|_, a, p| Combination::Max.time(a, p)),
        ];
        let alone = per_kernel(&|_, a, _| a);
        let inner_mape_pct = [pooled_mape_pct(&candidates[0]), pooled_mape_pct(&candidates[1])];
        let best = argmin(&inner_mape_pct);
        let kept =
            keep_if_better(&kernel_mape_pct(&candidates[best]), &kernel_mape_pct(&alone), ()).is_some();
        let chosen =
            if best == 0 { Combination::Blend(best_weight(&rows_of.concat())) } else { Combination::Max };
        if kept {
            for i in (0..kernel.len()).filter(|&i| kernel[i] == o) {
                predicted[i] = chosen.time(ours[i], peer[i]);
            }
        }
        out.push(CombinedFold { chosen, kept, inner_mape_pct, ours_inner_mape_pct: pooled_mape_pct(&alone) });
    }
    Combined { folds: out, predicted }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ours, the peer's and the measured time per row, each row's kernel, and the folds.
    type Set = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<usize>, Vec<FoldFit>);

    /// `n` kernels × 4 rows; ours is off by a kernel-specific factor `ours_err[k]`, the peer by `peer_err[k]`.
    fn set(ours_err: &[f64], peer_err: &[f64]) -> Set {
        let n = ours_err.len();
        let (mut ours, mut peer, mut y, mut kernel) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for k in 0..n {
            for c in 0..4 {
                let t = 1.0 + 0.1 * (k + c) as f64;
                y.push(t);
                ours.push(t * ours_err[k]);
                peer.push(t * peer_err[k]);
                kernel.push(k);
            }
        }
        // The inner predictions: ours (as if the fold's calibration were the model itself).
        let folds = (0..n)
            .map(|o| FoldFit {
                exponent: 4.0,
                form: "full",
                inner_mape_pct: Vec::new(),
                uncalibrated_inner_mape_pct: 0.0,
                calibration: None,
                inner_predicted: (0..y.len()).map(|i| (kernel[i] != o).then_some(ours[i])).collect(),
            })
            .collect();
        (ours, peer, y, kernel, folds)
    }

    /// A non-positive time cannot be blended in log space: the blend gives the other time, never NaN.
    #[test]
    fn a_blend_with_a_non_positive_time_is_not_nan() {
        for w in [0.0, 0.5, 1.0] {
            assert_eq!(Combination::Blend(w).time(2.0, 0.0), 2.0, "{w}");
            assert_eq!(Combination::Blend(w).time(2.0, -1.0), 2.0, "{w}");
            assert_eq!(Combination::Blend(w).time(0.0, 3.0), 3.0, "{w}");
            assert_eq!(Combination::Blend(w).time(0.0, 0.0), 0.0, "{w}");
            assert!(!Combination::Blend(w).time(f64::NAN, 3.0).is_nan(), "{w}");
        }
        assert!((Combination::Blend(0.5).time(1.0, 4.0) - 2.0).abs() < 1e-12);
    }

    /// Ours too fast by 20% and the peer too slow by 20% on every kernel: the geometric mean at w = 0.5 is
    /// exact, every fold keeps the blend and the combined time is the measurement.
    #[test]
    fn errors_that_cancel_are_blended() {
        let (ours, peer, y, kernel, folds) = set(&[0.8; 6], &[1.25; 6]);
        let c = combine(&ours, &peer, &y, &kernel, &folds);
        for f in &c.folds {
            assert_eq!(f.chosen, Combination::Blend(0.5));
            assert!(f.kept);
        }
        for (p, m) in c.predicted.iter().zip(&y) {
            assert!((p / m - 1.0).abs() < 1e-12);
        }
    }

    /// A peer that is wrong everywhere cannot beat ours: every fold drops the combination and predicts
    /// with ours alone.
    #[test]
    fn a_peer_that_only_adds_error_is_dropped() {
        let (ours, peer, y, kernel, folds) =
            set(&[1.02, 0.98, 1.01, 0.99, 1.03, 0.97], &[1.6, 0.5, 1.9, 0.6, 1.4, 2.2]);
        let c = combine(&ours, &peer, &y, &kernel, &folds);
        assert!(c.folds.iter().all(|f| !f.kept), "{:?}", c.folds);
        assert_eq!(c.predicted, ours);
    }

    /// A gain carried by one kernel (the peer right only where ours is far off) is not kept by the
    /// one-standard-error rule, in any fold.
    #[test]
    fn a_gain_on_one_kernel_is_not_kept() {
        let (ours, peer, y, kernel, folds) =
            set(&[0.6, 1.0, 1.0, 1.0, 1.0, 1.0], &[1.0, 1.15, 0.85, 1.1, 0.9, 1.2]);
        let c = combine(&ours, &peer, &y, &kernel, &folds);
        assert!(c.folds.iter().all(|f| !f.kept), "{:?}", c.folds);
    }

    /// The held-out kernel's measurements never enter its own fold's second stage.
    #[test]
    fn a_fold_never_sees_its_held_out_kernel() {
        let (ours, peer, y, kernel, folds) = set(&[0.8, 0.85, 0.8, 0.75, 0.8, 0.9], &[1.25; 6]);
        let before = combine(&ours, &peer, &y, &kernel, &folds);
        for o in 0..6 {
            let mut y2 = y.clone();
            for (v, k) in y2.iter_mut().zip(&kernel) {
                if *k == o {
                    *v *= 3.0;
                }
            }
            let after = combine(&ours, &peer, &y2, &kernel, &folds);
            assert_eq!(after.folds[o], before.folds[o], "fold {o}");
            for i in (0..y.len()).filter(|&i| kernel[i] == o) {
                assert_eq!(after.predicted[i], before.predicted[i]);
            }
            assert!((0..6).filter(|&f| f != o).any(|f| after.folds[f] != before.folds[f]));
        }
    }
}
