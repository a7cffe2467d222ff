//! Choosing the calibration's power-mean exponent — or no calibration at all — without touching the
//! kernel it is scored on.
//!
//! The exponent `p` of [`TimeCalibration`] is a choice, and a choice made by the same leave-one-kernel-out
//! (LOKO) error that is then reported makes that error optimistic. So the reported figure comes from a
//! **nested** procedure: for each outer fold (one held-out kernel), every candidate exponent is scored by
//! an inner LOKO over the *training* kernels only, the best is taken, the factors are fitted on all the
//! training kernels with it, and only then is the held-out kernel predicted. What the held-out kernel's
//! rows say never enters its own prediction, neither through the factors nor through `p`.
//!
//! **Two forms.** Besides the four-factor power mean with each exponent, one candidate is the compute
//! floor ([`ComputeFloor`]: one factor, and the model's own time as a floor, so at factor 1 it *is* the
//! model). The power mean replaces the model's per-wave bounds and latency bound by a soft maximum of
//! launch totals, so even at factors 1 it differs from the model; on the GTX 1080 Ti that difference
//! alone cost about a point inside every fold, and no fold kept a calibration. The lowest inner LOKO MAPE over all candidates is the fold's choice.
//!
//! **A structural candidate.** Where the caller gives each row's times under the model's structural
//! alternative ([`SharedOverlap::ReplaysOverlapIssue`]: bank-conflict replays overlap issue, with
//! the pipeline fill at the default core clock, `TimingConfig::structural`), two more
//! candidates join: that model as it is (nothing fitted: its inner error is its error on the inner
//! kernels) and a compute floor over it that keeps the memory side ([`ComputeFloor::time_keeping_memory`]:
//! a floor of the SM side alone flattened some kernels' time over the memory clock and moved their E·D^n
//! optimum). Which structure a GPU follows is so chosen from its training
//! kernels, like the calibration forms, and kept only by the same rule below (on the
//! NV-DVFS rows the GTX 1080 Ti's shared-heavy kernels follow the overlap, the GTX 980's do not).
//!
//! **A calibration that cannot hurt**: the uncalibrated timing model is one more candidate. Its error on
//! the training kernels needs no fit (it is out-of-fold by construction), so it is compared with the
//! best calibrated candidate's inner LOKO errors on the same rows, kernel by kernel. The calibration is
//! kept only when its mean per-kernel improvement exceeds one standard error of those paired
//! differences (the one-standard-error rule of Breiman et al., *Classification and Regression Trees*,
//! 1984, §3.4.3: prefer the simpler model unless the complex one is better by more than the noise of
//! the estimate). A mean win carried by one or two training kernels (an outlier the factors bend
//! towards) is not enough; otherwise the fold predicts its held-out kernel with the model as it is.
//!
//! The inner fit that leaves out kernels `o` and `k` is the same whether `o` is the outer kernel and `k`
//! the inner one or the other way round, so each pair is fitted once (`C(n, 2)` fits per candidate instead
//! of `n·(n − 1)`), and the fits run on all available cores. Of the fits without one kernel, only each
//! fold's chosen candidate is made. Every fit starts from the same point (all
//! factors 1), so none depends on data outside its own training rows. The inner fits only rank the
//! candidates, so they stop at a coarser tolerance ([`Precision::Ranking`]); the outer fits, whose
//! predictions are reported, are full fits.

use crate::calibration::{CalRow, ComputeFloor, FloorShape, Precision, TimeCalibration};
use gpumodel_models::stats::mape;
use gpumodel_models::timing::SharedOverlap;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use crate::calibration::EXPONENTS;

/// A row under the model's structural alternative (replays overlap issue, the pipeline fill at the
/// default core clock): its pipeline parts, the time it adds unscaled (barriers and fill) and the
/// model's time (the measured time is the row's own).
pub type AltRow = ([f64; 4], f64, f64);

/// A fold's fitted correction: the four-factor power mean, the compute floor (one factor), or the
/// structural alternative alone or with the compute floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fitted {
    Full(TimeCalibration),
    ComputeFloor(ComputeFloor),
    /// The structural alternative (bank-conflict replays overlapping issue, the fill at the default core
    /// clock), nothing fitted.
    ReplaysOverlap,
    /// The compute floor over that model, keeping its memory side ([`FloorShape::KeepsMemory`]).
    ReplaysOverlapFloor(ComputeFloor),
}

impl Fitted {
    /// The corrected time of a row from its parts, additive time, the model's own time and, for the
    /// structural forms, its parts and time under the alternative (without them: the model's time).
    pub fn time(&self, parts: [f64; 4], sync: f64, model: f64, alt: Option<AltRow>) -> f64 {
        match self {
            Fitted::Full(c) => c.time(parts, sync),
            Fitted::ComputeFloor(c) => c.time(parts, sync, model),
            Fitted::ReplaysOverlap => alt.map_or(model, |(_, _, m)| m),
            // The floor joins the memory side: a floor of the SM side alone binds at every clock pair
            // of a kernel the model puts near compute-bound, and the E·D^n pick then goes to the
            // lowest memory clock.
            Fitted::ReplaysOverlapFloor(c) => alt.map_or(model, |(p, s, m)| c.time_keeping_memory(p, s, m)),
        }
    }

    /// The form's name, as reports print it.
    pub fn form(&self) -> &'static str {
        match self {
            Fitted::Full(_) => "full",
            Fitted::ComputeFloor(_) => "compute-floor",
            Fitted::ReplaysOverlap => "replays-overlap",
            Fitted::ReplaysOverlapFloor(_) => "replays-overlap+compute-floor",
        }
    }

    /// The timing model's structure this form corrects.
    pub fn shared_overlap(&self) -> SharedOverlap {
        match self {
            Fitted::Full(_) | Fitted::ComputeFloor(_) => SharedOverlap::Additive,
            Fitted::ReplaysOverlap | Fitted::ReplaysOverlapFloor(_) => SharedOverlap::ReplaysOverlapIssue,
        }
    }
}

/// The calibration candidates of a fold, in the order of [`FoldFit::inner_mape_pct`]: the four-factor
/// form with each of [`EXPONENTS`], then the compute floor; with a structural alternative, then
/// [`STRUCTURAL`] more (the alternative model as is, the compute floor over it).
pub const CANDIDATES: usize = EXPONENTS.len() + 1;

/// The structural candidates added when the rows carry the alternative model's times.
pub const STRUCTURAL: usize = 2;

/// How many candidates a fold compares.
fn candidates(alt: Option<&[AltRow]>) -> usize {
    CANDIDATES + if alt.is_some() { STRUCTURAL } else { 0 }
}

/// The result of one outer fold.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldFit {
    /// The exponent of the best four-factor candidate by the inner LOKO (used only when that form is
    /// the fold's choice).
    pub exponent: f64,
    /// The form the inner LOKO chose (the best calibrated candidate, used or not): `full`,
    /// `compute-floor`, `replays-overlap` or `replays-overlap+compute-floor`.
    pub form: &'static str,
    /// The inner LOKO MAPE (percent, over the training kernels' rows) of each candidate: the four-factor
    /// form with each of [`EXPONENTS`], then the compute floor, then the structural candidates.
    pub inner_mape_pct: Vec<f64>,
    /// The uncalibrated model's MAPE on the same rows, percent.
    pub uncalibrated_inner_mape_pct: f64,
    /// The factors fitted on all training kernels with `exponent`; `None` when the uncalibrated model
    /// was not beaten inside the fold by more than one standard error (the fold then predicts with the
    /// model as is).
    pub calibration: Option<Fitted>,
    /// Per row (in the order of the rows given), the fold's procedure's prediction of that row when the
    /// row's kernel was left out too: the chosen candidate fitted without both kernels, or the model's
    /// time when the fold drops its calibration; `None` for the held-out kernel's own rows. What a
    /// second stage (the combined model, [`super::combine`]) is chosen on without seeing the held-out
    /// kernel. These times come from the pair fits that rank the candidates, stopped at the coarser
    /// [`Precision::Ranking`] tolerance, not from fits at [`Precision::Full`] like the held-out kernel's
    /// own prediction.
    pub inner_predicted: Vec<Option<f64>>,
}

impl FoldFit {
    /// The fold's time for a row: calibrated, or the model's own time when the calibration was dropped.
    pub fn time(&self, parts: [f64; 4], sync: f64, model: f64, alt: Option<AltRow>) -> f64 {
        self.calibration.map_or(model, |c| c.time(parts, sync, model, alt))
    }
}

/// The whole nested procedure on calibration rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Nested {
    /// Per outer fold (kernel index), what was chosen and fitted without that kernel.
    pub folds: Vec<FoldFit>,
    /// Per row, the prediction of its own outer fold (out-of-fold, `p` chosen inside the fold).
    pub predicted: Vec<f64>,
}

/// `cal`'s (predicted, measured) time of each row (with its model time), for [`mape`].
fn predicted_measured(
    cal: &Fitted,
    rows: impl Iterator<Item = (CalRow, f64, Option<AltRow>)>,
) -> Vec<(f64, f64)> {
    rows.map(|((parts, sync, y), m, a)| (cal.time(parts, sync, m, a), y)).collect()
}

/// Row `i`'s alternative, if any.
fn alt_of(alt: Option<&[AltRow]>, i: usize) -> Option<AltRow> {
    alt.map(|a| a[i])
}

/// The rows (with their model times) whose kernel is not in `excluded`.
fn training_with_model(
    rows: &[CalRow],
    model: &[f64],
    kernel: &[usize],
    excluded: &[usize],
) -> (Vec<CalRow>, Vec<f64>) {
    rows.iter()
        .zip(model)
        .zip(kernel)
        .filter(|(_, k)| !excluded.contains(k))
        .map(|((r, m), _)| (*r, *m))
        .unzip()
}

/// Fits candidate `c` (see [`CANDIDATES`]) on the rows of kernels not in `excluded`.
fn fit_candidate(
    c: usize,
    rows: &[CalRow],
    model: &[f64],
    alt: Option<&[AltRow]>,
    kernel: &[usize],
    excluded: &[usize],
    precision: Precision,
) -> Fitted {
    if c < EXPONENTS.len() {
        Fitted::Full(TimeCalibration::fit_to(&training(rows, kernel, excluded), EXPONENTS[c], precision))
    } else if c == EXPONENTS.len() {
        let (r, m) = training_with_model(rows, model, kernel, excluded);
        Fitted::ComputeFloor(ComputeFloor::fit(&r, &m))
    } else if c == CANDIDATES {
        Fitted::ReplaysOverlap
    } else {
        // The compute floor over the alternative model: its parts and times in place of the model's.
        let alt = alt.expect("structural candidates only with alternative rows");
        let alt_rows = alternative_rows(rows, alt);
        let alt_model: Vec<f64> = alt.iter().map(|a| a.2).collect();
        let (r, m) = training_with_model(&alt_rows, &alt_model, kernel, excluded);
        Fitted::ReplaysOverlapFloor(ComputeFloor::fit_shaped(FloorShape::KeepsMemory, &r, &m))
    }
}

/// The candidate a fold takes and whether it keeps it: per candidate, each inner kernel's (predicted,
/// measured) rows and the pooled inner MAPE; `model_inner` the uncalibrated model's MAPE of the same
/// kernels. The lowest inner MAPE wins, and is kept only when it beats the model by more than one
/// standard error.
fn choose(per_kernel: &[KernelRows], inner_mape_pct: &[f64], model_inner: &[f64]) -> (usize, bool) {
    let passes = |c: usize| keep_if_better(&kernel_mape_pct(&per_kernel[c]), model_inner, ()).is_some();
    let best = argmin(inner_mape_pct);
    (best, passes(best))
}

/// The rows whose kernel is not in `excluded`.
fn training(rows: &[CalRow], kernel: &[usize], excluded: &[usize]) -> Vec<CalRow> {
    rows.iter().zip(kernel).filter(|(_, k)| !excluded.contains(k)).map(|(r, _)| *r).collect()
}

/// The uncalibrated model's MAPE (percent) over the rows of kernels not in `excluded`.
fn uncalibrated_mape_pct(rows: &[CalRow], model: &[f64], kernel: &[usize], excluded: &[usize]) -> f64 {
    mape(
        rows.iter()
            .zip(model)
            .zip(kernel)
            .filter(|(_, k)| !excluded.contains(k))
            .map(|((r, m), _)| (*m, r.2)),
    )
}

/// The MAPE (percent) of the per-row times `time` (the uncalibrated model's, or a calibration's) over
/// each kernel's rows, in kernel order.
fn per_kernel_mape_pct(rows: &[CalRow], time: &[f64], kernel: &[usize], n_kernels: usize) -> Vec<f64> {
    (0..n_kernels)
        .map(|k| {
            mape(rows.iter().zip(time).zip(kernel).filter(|(_, kk)| **kk == k).map(|((r, t), _)| (*t, r.2)))
        })
        .collect()
}

/// Keeps the calibration only when it beat the uncalibrated model inside the fold by more than one
/// standard error: `calibrated[i]` and `uncalibrated[i]` are the same training kernel's MAPE (the
/// calibrated one from the inner fold that left that kernel out).
pub(crate) fn keep_if_better<T>(calibrated: &[f64], uncalibrated: &[f64], cal: T) -> Option<T> {
    let d: Vec<f64> = calibrated.iter().zip(uncalibrated).map(|(c, u)| c - u).collect();
    if d.len() < 2 {
        return None;
    }
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    (mean + gpumodel_models::stats::standard_error(&d) < 0.0).then_some(cal)
}

/// The model structure for a calibration fitted on every kernel: the replay-overlap model where its
/// per-kernel MAPEs beat the additive model's by more than one standard error (the keep rule; neither
/// model is fitted, so no cross-validation is needed), else the additive model.
pub fn structure_over_all(
    rows: &[CalRow],
    model: &[f64],
    alt: &[AltRow],
    kernel: &[usize],
    n_kernels: usize,
) -> SharedOverlap {
    let alt_model: Vec<f64> = alt.iter().map(|a| a.2).collect();
    let additive = per_kernel_mape_pct(rows, model, kernel, n_kernels);
    let overlap = per_kernel_mape_pct(rows, &alt_model, kernel, n_kernels);
    keep_if_better(&overlap, &additive, SharedOverlap::ReplaysOverlapIssue).unwrap_or_default()
}

/// Plain leave-one-kernel-out predictions of the four-factor form with each of [`EXPONENTS`] (every
/// fold with the same `p`) on `rows`: per exponent, each row's time from factors fitted without its
/// kernel.
pub fn loko_exponent_predictions(rows: &[CalRow], kernel: &[usize], n_kernels: usize) -> Vec<Vec<f64>> {
    let fits = par_map(EXPONENTS.len() * n_kernels, |j| {
        let (c, k) = (j / n_kernels, j % n_kernels);
        TimeCalibration::fit_to(&training(rows, kernel, &[k]), EXPONENTS[c], Precision::Full)
    });
    (0..EXPONENTS.len())
        .map(|c| {
            rows.iter()
                .zip(kernel)
                .map(|(&(parts, sync, _), &k)| fits[c * n_kernels + k].time(parts, sync))
                .collect()
        })
        .collect()
}

/// The MAPE (percent, pooled over all rows) of each exponent's predictions `loko[e]` (as
/// [`loko_exponent_predictions`] gives them) against `rows`' measured times: the fixed-p table a
/// calibration fitted on every kernel takes its exponent from, on the rows of the structure it is
/// fitted to.
pub fn exponent_mape_pct(loko: &[Vec<f64>], rows: &[CalRow]) -> Vec<f64> {
    loko.iter().map(|pred| mape(pred.iter().zip(rows).map(|(t, r)| (*t, r.2)))).collect()
}

/// The folds' keep rule for a calibration fitted on every kernel: `loko[i]` is row `i`'s time from its
/// form fitted without row `i`'s kernel, `model[i]` the time of the structure it calibrates. The factors
/// are kept only when their per-kernel leave-one-kernel-out MAPEs beat the structure's own by more than
/// one standard error of the paired differences; otherwise the structure alone is the better file.
pub fn factors_beat_structure(
    loko: &[f64],
    rows: &[CalRow],
    model: &[f64],
    kernel: &[usize],
    n_kernels: usize,
) -> bool {
    let calibrated = per_kernel_mape_pct(rows, loko, kernel, n_kernels);
    let structure = per_kernel_mape_pct(rows, model, kernel, n_kernels);
    keep_if_better(&calibrated, &structure, ()).is_some()
}

/// The structural alternative's rows: each row's parts and unscaled time under the alternative, with its
/// own measured time.
pub fn alternative_rows(rows: &[CalRow], alt: &[AltRow]) -> Vec<CalRow> {
    rows.iter().zip(alt).map(|(r, a)| (a.0, a.1, r.2)).collect()
}

/// Per inner kernel, the (predicted, measured) time of each of its rows.
type KernelRows = Vec<Vec<(f64, f64)>>;

/// MAPE (percent) pooled over all rows of all kernels.
pub(crate) fn pooled_mape_pct(v: &[Vec<(f64, f64)>]) -> f64 {
    mape(v.iter().flatten().copied())
}

/// Each kernel's own MAPE (percent).
pub(crate) fn kernel_mape_pct(v: &[Vec<(f64, f64)>]) -> Vec<f64> {
    v.iter().map(|rows| mape(rows.iter().copied())).collect()
}

/// The fold's inner prediction of every row (see [`FoldFit::inner_predicted`]): `chosen` holds, per
/// inner kernel (order of `inner`), the kept candidate's (predicted, measured) rows in row order; `None`
/// when the fold drops its calibration (the model's time).
fn inner_predictions(
    chosen: Option<&KernelRows>,
    inner: &[usize],
    kernel: &[usize],
    model: &[f64],
) -> Vec<Option<f64>> {
    let mut out = vec![None; kernel.len()];
    for (j, &k) in inner.iter().enumerate() {
        let rows = (0..kernel.len()).filter(|&i| kernel[i] == k);
        for (n, i) in rows.enumerate() {
            out[i] = Some(chosen.map_or(model[i], |c| c[j][n].0));
        }
    }
    out
}

/// Index of the smallest value (the first one on a tie, so the smaller exponent wins).
pub(crate) fn argmin(v: &[f64]) -> usize {
    (0..v.len()).fold(0, |b, i| if v[i] < v[b] { i } else { b })
}

/// The position of the unordered pair {a, b} (a ≠ b) among the pairs (0, 1), (0, 2), …, (0, n−1),
/// (1, 2), …, (n−2, n−1).
fn pair_index(n: usize, a: usize, b: usize) -> usize {
    let (i, j) = if a < b { (a, b) } else { (b, a) };
    i * n - i * (i + 1) / 2 + (j - i - 1)
}

/// `f(0..n)` on all available cores, results in order; deterministic whatever the scheduling.
fn par_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(n.max(1));
    if threads <= 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut out: Vec<(usize, T)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break mine;
                        }
                        mine.push((i, f(i)));
                    }
                })
            })
            .collect();
        // A panicking fit is a bug, not bad input: let it surface.
        workers.into_iter().flat_map(|w| w.join().expect("a calibration fit panicked")).collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, t)| t).collect()
}

/// One outer fold of the nested procedure, computed on its own (the full procedure shares fits between
/// folds; this is the reference it must agree with, and what the tests perturb).
///
/// `kernel[i]` is row `i`'s kernel index in `0..n_kernels`, `model[i]` its uncalibrated model time; `fold`
/// is the held-out kernel.
pub fn fold_fit(
    rows: &[CalRow],
    model: &[f64],
    alt: Option<&[AltRow]>,
    kernel: &[usize],
    n_kernels: usize,
    fold: usize,
) -> FoldFit {
    let inner: Vec<usize> = (0..n_kernels).filter(|&k| k != fold).collect();
    // Per candidate, each inner kernel's (predicted, measured) rows when its inner fold left it out.
    let per_kernel: Vec<KernelRows> = (0..candidates(alt))
        .map(|c| {
            inner
                .iter()
                .map(|&k| {
                    let cal = fit_candidate(c, rows, model, alt, kernel, &[fold, k], Precision::Ranking);
                    let own = (0..rows.len()).filter(|&i| kernel[i] == k);
                    predicted_measured(&cal, own.map(|i| (rows[i], model[i], alt_of(alt, i))))
                })
                .collect()
        })
        .collect();
    let inner_mape_pct: Vec<f64> = per_kernel.iter().map(|v| pooled_mape_pct(v)).collect();
    let uncalibrated_inner_mape_pct = uncalibrated_mape_pct(rows, model, kernel, &[fold]);
    let model_kernels = per_kernel_mape_pct(rows, model, kernel, n_kernels);
    let model_inner: Vec<f64> = inner.iter().map(|&k| model_kernels[k]).collect();
    let (best, keep) = choose(&per_kernel, &inner_mape_pct, &model_inner);
    let calibration = fit_candidate(best, rows, model, alt, kernel, &[fold], Precision::Full);
    FoldFit {
        exponent: EXPONENTS[argmin(&inner_mape_pct[..EXPONENTS.len()])],
        form: calibration.form(),
        calibration: keep.then_some(calibration),
        inner_predicted: inner_predictions(keep.then_some(&per_kernel[best]), &inner, kernel, model),
        inner_mape_pct,
        uncalibrated_inner_mape_pct,
    }
}

/// Runs the nested procedure over every kernel (see the module docs); `model[i]` is row `i`'s uncalibrated
/// model time. Needs at least 3 kernels, so that every inner fit has training rows.
pub fn nested(rows: &[CalRow], model: &[f64], kernel: &[usize], n_kernels: usize) -> Nested {
    nested_with_progress(rows, model, None, kernel, n_kernels, &())
}

/// The calibration fits [`nested`] makes for `n_kernels` kernels: one per candidate and left-out pair
/// (`structural`: with the structural candidates), then the chosen candidate of each left-out kernel.
pub fn fit_count(n_kernels: usize, structural: bool) -> u64 {
    let nc = CANDIDATES + if structural { STRUCTURAL } else { 0 };
    (n_kernels + nc * (n_kernels * n_kernels.saturating_sub(1) / 2)) as u64
}

/// [`nested`] with the rows' times under the structural alternative (`alt[i]` for row `i`; `None`: no
/// structural candidate), reporting each finished calibration fit to `progress` (of [`fit_count`]).
pub fn nested_with_progress(
    rows: &[CalRow],
    model: &[f64],
    alt: Option<&[AltRow]>,
    kernel: &[usize],
    n_kernels: usize,
    progress: &dyn super::Progress,
) -> Nested {
    let np = EXPONENTS.len();
    let nc = candidates(alt);
    // Pair-out fits, i < j: index p·pairs + pair. They rank the candidates.
    let pairs: Vec<(usize, usize)> =
        (0..n_kernels).flat_map(|i| (i + 1..n_kernels).map(move |j| (i, j))).collect();
    let paired = par_map(nc * pairs.len(), |j| {
        let (c, (a, b)) = (j / pairs.len(), pairs[j % pairs.len()]);
        let fit = fit_candidate(c, rows, model, alt, kernel, &[a, b], Precision::Ranking);
        progress.inc(1);
        fit
    });
    let rows_of: Vec<Vec<(CalRow, f64, Option<AltRow>)>> = (0..n_kernels)
        .map(|k| {
            (0..rows.len()).filter(|&i| kernel[i] == k).map(|i| (rows[i], model[i], alt_of(alt, i))).collect()
        })
        .collect();
    let model_kernels = per_kernel_mape_pct(rows, model, kernel, n_kernels);
    // Each fold's choice, from the pair fits alone.
    let choices: Vec<FoldChoice> = (0..n_kernels)
        .map(|fold| {
            let inner: Vec<usize> = (0..n_kernels).filter(|&k| k != fold).collect();
            let per_kernel: Vec<KernelRows> = (0..nc)
                .map(|pi| {
                    inner
                        .iter()
                        .map(|&k| {
                            let cal = &paired[pi * pairs.len() + pair_index(n_kernels, fold, k)];
                            predicted_measured(cal, rows_of[k].iter().copied())
                        })
                        .collect()
                })
                .collect();
            let inner_mape_pct: Vec<f64> = per_kernel.iter().map(|v| pooled_mape_pct(v)).collect();
            let model_inner: Vec<f64> = inner.iter().map(|&k| model_kernels[k]).collect();
            let (best, keep) = choose(&per_kernel, &inner_mape_pct, &model_inner);
            let inner_predicted = inner_predictions(keep.then_some(&per_kernel[best]), &inner, kernel, model);
            FoldChoice { best, keep, inner_mape_pct, inner_predicted }
        })
        .collect();
    // Then the chosen candidate of each fold, fitted on all its training kernels: the fit its held-out
    // kernel is predicted with.
    let chosen = par_map(n_kernels, |fold| {
        let fit = fit_candidate(choices[fold].best, rows, model, alt, kernel, &[fold], Precision::Full);
        progress.inc(1);
        fit
    });
    let folds: Vec<FoldFit> = choices
        .into_iter()
        .zip(chosen)
        .enumerate()
        .map(|(fold, (c, calibration))| FoldFit {
            exponent: EXPONENTS[argmin(&c.inner_mape_pct[..np])],
            form: calibration.form(),
            calibration: c.keep.then_some(calibration),
            inner_predicted: c.inner_predicted,
            inner_mape_pct: c.inner_mape_pct,
            uncalibrated_inner_mape_pct: uncalibrated_mape_pct(rows, model, kernel, &[fold]),
        })
        .collect();
    let predicted: Vec<f64> = (0..rows.len())
        .map(|i| folds[kernel[i]].time(rows[i].0, rows[i].1, model[i], alt_of(alt, i)))
        .collect();
    Nested { folds, predicted }
}

/// What a fold chose from its pair fits: the best candidate, whether it beat the model, the candidates'
/// inner errors and the inner kernels' predictions.
struct FoldChoice {
    best: usize,
    keep: bool,
    inner_mape_pct: Vec<f64>,
    inner_predicted: Vec<Option<f64>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five kernels whose times follow known factors (with a kernel-specific level error, as real
    /// kernels have), mixing the memory and compute pipelines.
    fn synthetic() -> (Vec<CalRow>, Vec<f64>, Vec<usize>) {
        let truth = TimeCalibration { a: [1.2, 1.6, 1.0, 1.5], p: 4.0 };
        let mut rows = Vec::new();
        let mut kernel = Vec::new();
        for k in 0..5 {
            let level = [1.0, 1.1, 0.9, 1.05, 0.97][k];
            for c in 0..4 {
                let parts = [
                    0.2 + 0.3 * k as f64,
                    0.1 + 0.25 * c as f64 + 0.1 * (k % 2) as f64,
                    0.0,
                    0.1 * (k + c) as f64,
                ];
                rows.push((parts, 0.01, level * truth.time(parts, 0.01)));
                kernel.push(k);
            }
        }
        // The uncalibrated model: the parts' maximum plus sync (factors 1, full overlap).
        let model = rows.iter().map(|r| r.0.iter().copied().fold(0.0, f64::max) + r.1).collect();
        (rows, model, kernel)
    }

    #[test]
    fn pair_sharing_agrees_with_the_fold_computed_on_its_own() {
        let (rows, model, kernel) = synthetic();
        let all = nested(&rows, &model, &kernel, 5);
        for fold in 0..5 {
            assert_eq!(all.folds[fold], fold_fit(&rows, &model, None, &kernel, 5, fold), "fold {fold}");
            // Times generated by a calibration form: calibrating beats the model in every fold.
            assert!(all.folds[fold].calibration.is_some(), "fold {fold}");
        }
        // The outer predictions are each fold's calibration on its own kernel's rows.
        for (((r, m), k), t) in rows.iter().zip(&model).zip(&kernel).zip(&all.predicted) {
            assert_eq!(*t, all.folds[*k].time(r.0, r.1, *m, None));
        }
    }

    /// The guard of the nested procedure: a fold's choice of exponent, its factors and so its
    /// predictions are bit-identical whatever the held-out kernel's measured times are.
    #[test]
    fn a_fold_never_sees_its_held_out_kernel() {
        let (rows, model, kernel) = synthetic();
        let before = nested(&rows, &model, &kernel, 5);
        for fold in 0..5 {
            let mut perturbed = rows.clone();
            for (r, k) in perturbed.iter_mut().zip(&kernel) {
                if *k == fold {
                    r.2 *= 3.7;
                }
            }
            let after = nested(&perturbed, &model, &kernel, 5);
            assert_eq!(after.folds[fold], before.folds[fold], "fold {fold}");
            for (i, k) in kernel.iter().enumerate() {
                if *k == fold {
                    assert_eq!(after.predicted[i], before.predicted[i], "row {i}");
                }
            }
            // The perturbation is not invisible: other folds train on it.
            assert!((0..5).filter(|&f| f != fold).any(|f| after.folds[f] != before.folds[f]));
        }
    }

    /// When the model already matches the measurements, no fitted correction can beat it inside the
    /// folds: every fold drops its calibration and predicts with the model as is.
    #[test]
    fn a_calibration_that_loses_inside_the_fold_is_dropped() {
        let (rows, _, kernel) = synthetic();
        // A model exact to the measured times, with parts that make no calibration exact.
        let exact: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let noisy: Vec<CalRow> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.0.map(|v| v * (1.0 + 0.3 * (i % 3) as f64)), r.1, r.2))
            .collect();
        let all = nested(&noisy, &exact, &kernel, 5);
        for (fold, f) in all.folds.iter().enumerate() {
            assert_eq!(f.calibration, None, "fold {fold}: {f:?}");
            // The compute floor at factor 1 is the model itself: it can tie the model, never beat it.
            assert!(
                f.uncalibrated_inner_mape_pct
                    <= f.inner_mape_pct.iter().copied().fold(f64::INFINITY, f64::min) + 1e-12
            );
        }
        assert_eq!(all.predicted, exact);
    }

    /// The one-standard-error rule: a mean inner-fold gain carried by one training kernel while the
    /// others get worse is not kept; a gain shared by every kernel is.
    #[test]
    fn a_gain_carried_by_one_kernel_is_not_kept() {
        let cal = TimeCalibration { a: [1.0; 4], p: 4.0 };
        let model = [20.0; 5];
        // Mean difference −1.2 points (the old rule, mean < 0, kept it), standard error 2.2.
        assert_eq!(keep_if_better(&[10.0, 21.0, 21.0, 21.0, 21.0], &model, cal), None);
        assert_eq!(keep_if_better(&[19.0, 18.8, 19.2, 19.0, 19.0], &model, cal), Some(cal));
        // A tie or a single kernel is never enough.
        assert_eq!(keep_if_better(&model, &model, cal), None);
        assert_eq!(keep_if_better(&[1.0], &[20.0], cal), None);
    }

    /// A model whose only fault is a compute side that runs slower than it says: the one-factor compute
    /// floor is the fold's choice (the four-factor form cannot express "the model, slower when compute
    /// bound"), it is kept, and it recovers the factor.
    #[test]
    fn a_compute_only_fault_is_fixed_by_the_compute_floor() {
        let mut rows = Vec::new();
        let (mut model, mut kernel) = (Vec::new(), Vec::new());
        for k in 0..6 {
            for c in 0..4 {
                // Memory-bound kernels (even k) and compute-bound ones (odd k), with a latency-like
                // part of the model's time that the four factors cannot see.
                let mem = if k % 2 == 0 { 1.0 + 0.2 * c as f64 } else { 0.2 };
                let comp = if k % 2 == 1 { 0.8 + 0.1 * (k + c) as f64 } else { 0.3 };
                let m = mem.max(comp) + 0.05 * k as f64;
                let truth = m.max(1.25 * comp + 0.01);
                rows.push(([mem, comp, 0.0, 0.0], 0.01, truth * (1.0 + 0.01 * ((k + c) % 3) as f64)));
                model.push(m);
                kernel.push(k);
            }
        }
        let all = nested(&rows, &model, &kernel, 6);
        for (fold, f) in all.folds.iter().enumerate() {
            let Some(Fitted::ComputeFloor(c)) = f.calibration else { panic!("fold {fold}: {f:?}") };
            assert!((c.a_compute - 1.25).abs() < 0.05, "fold {fold}: {c:?}");
            assert_eq!(f.form, "compute-floor");
        }
    }

    /// Six kernels whose measured times follow the replay-overlap model (`structure` true) or the
    /// additive one, with the calibration forms unable to express the difference (the model's time has
    /// a part the four factors do not see) and a kernel-specific level error.
    fn structural_set(overlapping: bool) -> (Vec<CalRow>, Vec<f64>, Vec<AltRow>, Vec<usize>) {
        let (mut rows, mut model, mut alt, mut kernel) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for k in 0..6 {
            for c in 0..4 {
                let mem = 0.3 + 0.05 * c as f64;
                let issue = 0.4 + 0.1 * ((k + c) % 3) as f64;
                // Replay-heavy kernels (replays up to 1.2× the issue) and kernels without replays.
                let replays = if k % 3 == 2 { 0.0 } else { (0.6 + 0.1 * k as f64) * issue };
                let extra = 0.02 * k as f64; // a latency-like part the factors do not see
                let add_sm = issue + replays;
                let ov_sm = (issue * issue + replays * replays).sqrt();
                let m_add = mem.max(add_sm) + extra;
                // The alternative's own fill (sync), which the additive rows do not have: the floor over
                // the alternative and the saved rows must take it from the alternative, not the row.
                let fill = 0.05;
                let m_ov = mem.max(ov_sm) + extra + fill;
                let level = [1.0, 1.02, 0.99, 1.01, 0.98, 1.0][k];
                let y = level * if overlapping { m_ov } else { m_add };
                rows.push(([mem, issue, replays, 0.0], 0.0, y));
                model.push(m_add);
                alt.push(([mem, issue, ov_sm - issue, 0.0], fill, m_ov));
                kernel.push(k);
            }
        }
        (rows, model, alt, kernel)
    }

    /// The structural candidate is chosen inside the folds from the training kernels alone: where the
    /// measured times follow overlapping replays, every fold keeps a replay-overlap form; where they
    /// follow additive replays, none does. Without alternative rows the candidates are the old ones.
    #[test]
    fn folds_choose_the_replay_overlap_structure_only_where_the_data_follow_it() {
        let (rows, model, alt, kernel) = structural_set(true);
        let all = nested_with_progress(&rows, &model, Some(&alt), &kernel, 6, &());
        for (fold, f) in all.folds.iter().enumerate() {
            let c = f.calibration.unwrap_or_else(|| panic!("fold {fold}: {f:?}"));
            assert_eq!(c.shared_overlap(), SharedOverlap::ReplaysOverlapIssue, "fold {fold}: {f:?}");
            assert_eq!(f.inner_mape_pct.len(), CANDIDATES + STRUCTURAL);
            assert_eq!(*f, fold_fit(&rows, &model, Some(&alt), &kernel, 6, fold), "fold {fold}");
        }
        assert_eq!(structure_over_all(&rows, &model, &alt, &kernel, 6), SharedOverlap::ReplaysOverlapIssue);
        let (rows, model, alt, kernel) = structural_set(false);
        let all = nested_with_progress(&rows, &model, Some(&alt), &kernel, 6, &());
        for (fold, f) in all.folds.iter().enumerate() {
            let chosen = f.calibration.map(|c| c.shared_overlap());
            assert_ne!(chosen, Some(SharedOverlap::ReplaysOverlapIssue), "fold {fold}: {f:?}");
        }
        assert_eq!(structure_over_all(&rows, &model, &alt, &kernel, 6), SharedOverlap::Additive);
        assert_eq!(nested(&rows, &model, &kernel, 6).folds[0].inner_mape_pct.len(), CANDIDATES);
    }

    /// The alternative's rows take its parts and sync (its own fill), and the row's measured time.
    #[test]
    fn alternative_rows_take_the_alternatives_parts_and_fill() {
        let rows = vec![([1.0, 2.0, 3.0, 4.0], 0.5, 9.0)];
        let alt = vec![([1.5, 2.5, 0.25, 4.0], 0.75, 8.0)];
        assert_eq!(alternative_rows(&rows, &alt), vec![([1.5, 2.5, 0.25, 4.0], 0.75, 9.0)]);
    }

    /// The compute floor over the alternative is fitted on the alternative's rows (its fill, not the
    /// additive row's sync): refitted here from those rows, it is the same floor.
    #[test]
    fn the_floor_over_the_alternative_is_fitted_with_the_alternatives_fill() {
        let (rows, model, alt, kernel) = structural_set(true);
        let fitted = fit_candidate(CANDIDATES + 1, &rows, &model, Some(&alt), &kernel, &[0], Precision::Full);
        let alt_rows: Vec<CalRow> =
            (0..rows.len()).filter(|&i| kernel[i] != 0).map(|i| (alt[i].0, alt[i].1, rows[i].2)).collect();
        let alt_model: Vec<f64> = (0..rows.len()).filter(|&i| kernel[i] != 0).map(|i| alt[i].2).collect();
        let want = ComputeFloor::fit_shaped(FloorShape::KeepsMemory, &alt_rows, &alt_model);
        assert_eq!(fitted, Fitted::ReplaysOverlapFloor(want));
        // The additive rows' sync (0) would give another floor: the test can tell them apart.
        let wrong_rows: Vec<CalRow> = alt_rows.iter().map(|&(p, _, y)| (p, 0.0, y)).collect();
        assert_ne!(
            fitted,
            Fitted::ReplaysOverlapFloor(ComputeFloor::fit_shaped(
                FloorShape::KeepsMemory,
                &wrong_rows,
                &alt_model
            ))
        );
    }

    /// The fixed-p table a saved calibration takes its exponent from is the plain leave-one-kernel-out of
    /// the rows given: each exponent's factors fitted without a kernel predict that kernel's rows.
    #[test]
    fn the_fixed_p_table_is_the_plain_loko_of_the_rows_given() {
        let table = |rows: &[CalRow], kernel: &[usize], n| {
            exponent_mape_pct(&loko_exponent_predictions(rows, kernel, n), rows)
        };
        let plain = |rows: &[CalRow], kernel: &[usize], n: usize| -> Vec<f64> {
            EXPONENTS
                .iter()
                .map(|&p| {
                    let fits: Vec<TimeCalibration> = (0..n)
                        .map(|k| {
                            let train: Vec<CalRow> =
                                rows.iter().zip(kernel).filter(|(_, j)| **j != k).map(|(r, _)| *r).collect();
                            TimeCalibration::fit(&train, p)
                        })
                        .collect();
                    mape(
                        rows.iter().zip(kernel).map(|(&(parts, sync, y), &k)| (fits[k].time(parts, sync), y)),
                    )
                })
                .collect()
        };
        let (rows, _, kernel) = synthetic();
        assert_eq!(table(&rows, &kernel, 5), plain(&rows, &kernel, 5));
        let (rows, _, alt, kernel) = structural_set(true);
        let alt_rows = alternative_rows(&rows, &alt);
        let on_alt = table(&alt_rows, &kernel, 6);
        assert_eq!(on_alt, plain(&alt_rows, &kernel, 6));
        assert_ne!(on_alt, table(&rows, &kernel, 6));
    }

    /// The saved file's keep rule: factors that generate the measured times beat the model out of fold
    /// and are kept; against a model that is already exact they cannot, and are dropped.
    #[test]
    fn a_saved_calibration_keeps_its_factors_only_where_they_win_out_of_fold() {
        let (rows, model, kernel) = synthetic();
        let loko =
            &loko_exponent_predictions(&rows, &kernel, 5)[EXPONENTS.iter().position(|&p| p == 4.0).unwrap()];
        assert!(factors_beat_structure(loko, &rows, &model, &kernel, 5));
        let exact: Vec<f64> = rows.iter().map(|r| r.2).collect();
        assert!(!factors_beat_structure(loko, &rows, &exact, &kernel, 5));
    }

    #[test]
    fn pair_indices_cover_every_pair_once() {
        let n = 7;
        let pairs: Vec<(usize, usize)> = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).collect();
        for (idx, &(i, j)) in pairs.iter().enumerate() {
            assert_eq!(pair_index(n, i, j), idx, "{i},{j}");
            assert_eq!(pair_index(n, j, i), idx, "{j},{i}");
        }
    }

    #[test]
    fn par_map_keeps_the_order() {
        assert_eq!(par_map(100, |i| i * i), (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(par_map(0, |i| i).is_empty());
    }
}
