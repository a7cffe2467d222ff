//! The time calibration: a fitted correction of the timing model's time, as a value that prediction
//! applies (`Config::calibration`, `gpumodel predict --calibration FILE`) and `validate` fits and
//! cross-validates. It lives apart from validation so that prediction never imports from it.

use gpumodel_models::timing::Timing;
use serde::{Deserialize, Serialize};

pub mod file;
mod nelder_mead;

use nelder_mead::{Tolerance, nelder_mead};

/// The candidate power-mean exponents: 1 adds the pipelines (no overlap), larger values tend to the
/// longest pipeline (full overlap).
pub const EXPONENTS: [f64; 7] = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0];

/// Calibration: `T = ((a_memory·M)^p + (a_compute·C + a_shared·S)^p + (a_l2·L)^p)^(1/p) + sync`, where
/// `M` is the timing model's global load + store + texture time, `C` its compute time, `S` its
/// shared-memory time incl. bank conflicts, `L` the time its DRAM traffic needs through L2 at a bandwidth
/// that scales with the core clock ([`Timing::l2_s`]: at low core clocks L2, not DRAM, caps a
/// memory-bound kernel), `sync` the model's barrier and pipeline-fill time ([`additive_s`]), and `p` ≥ 1
/// a power-mean exponent (chosen by cross-validation in `validate`). Compute and shared add inside, as
/// in the timing model (the SM's schedulers issue both); the memory side, the SM side and L2 overlap.
///
/// Each factor says how far from the model's peak that pipeline runs; the power mean is a soft maximum,
/// so the longest scaled pipeline dominates while nearly equal ones add (partial overlap). The factors
/// minimize the mean absolute relative error (the MAPE itself) — a few kernels the model misses badly
/// must not drag the factors of all the others. A pipeline with no time in the training rows keeps 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeCalibration {
    /// `a_memory`, `a_compute`, `a_shared`, `a_l2`.
    pub a: [f64; 4],
    /// The power-mean exponent.
    pub p: f64,
}

/// One calibration row: the model's memory, compute, shared and L2 times, its additive (sync + fill) time,
/// and the measured time (seconds).
pub type CalRow = ([f64; 4], f64, f64);

/// The smallest correction: the SM issues slower than the model's peak by one factor, `T = max(model,
/// a_compute·C + S + sync)` where `model` is the timing model's own time and `C`, `S`, `sync` its compute,
/// shared and additive times (see [`TimeCalibration`]). With `a_compute = 1` it is the model itself (the
/// model's time already covers its compute and shared time), so unlike the four-factor form it can only
/// move kernels whose SM side, slowed down, outlasts the model's bound: compute-bound kernels, which the
/// model predicts too fast on both NV-DVFS GPUs. `a_compute` is at least 1
/// (a faster-than-peak SM is not physics).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ComputeFloor {
    pub a_compute: f64,
}

impl ComputeFloor {
    /// The corrected time of a row from its parts, additive time and the model's time.
    pub fn time(&self, parts: [f64; 4], sync: f64, model: f64) -> f64 {
        model.max(self.a_compute * parts[1] + parts[2] + sync)
    }

    /// The floor that keeps the memory side ([`FloorShape::KeepsMemory`]): `T = max(model, ((a_compute·C +
    /// S)^q + M^q)^(1/q) + sync)` with `q` = [`FLOOR_MEMORY_EXPONENT`] and `M` the larger of the memory and
    /// L2 parts.
    pub fn time_keeping_memory(&self, parts: [f64; 4], sync: f64, model: f64) -> f64 {
        model.max(floor_keeping_memory(self.a_compute * parts[1] + parts[2], parts[0].max(parts[3])) + sync)
    }

    /// The corrected time with the given floor shape.
    pub fn time_shaped(&self, shape: FloorShape, parts: [f64; 4], sync: f64, model: f64) -> f64 {
        match shape {
            FloorShape::SmOnly => self.time(parts, sync, model),
            FloorShape::KeepsMemory => self.time_keeping_memory(parts, sync, model),
        }
    }

    /// Fits `a_compute` (≥ 1) on rows by the mean absolute relative error; `model[i]` is row `i`'s model
    /// time. A golden-section search on `ln a` in [0, ln 4] (the objective is piecewise linear in `a`).
    pub fn fit(rows: &[CalRow], model: &[f64]) -> ComputeFloor {
        Self::fit_shaped(FloorShape::SmOnly, rows, model)
    }

    /// [`ComputeFloor::fit`] for a floor of the given shape.
    pub fn fit_shaped(shape: FloorShape, rows: &[CalRow], model: &[f64]) -> ComputeFloor {
        // Every time divided by the measured one: (model, C, S, M, sync).
        let scaled: Vec<(f64, [f64; 4], f64)> = rows
            .iter()
            .zip(model)
            .map(|(&(parts, sync, y), &m)| (m / y, parts.map(|v| v / y), sync / y))
            .collect();
        let objective = |a: f64| {
            let floor = ComputeFloor { a_compute: a };
            scaled
                .iter()
                .map(|&(m, parts, sync)| (floor.time_shaped(shape, parts, sync, m) - 1.0).abs())
                .sum::<f64>()
        };
        // A coarse scan first (the objective need not be unimodal), then golden section around the best.
        let grid: Vec<f64> = (0..=64).map(|i| (4f64.ln() * f64::from(i) / 64.0).exp()).collect();
        let at_grid: Vec<f64> = grid.iter().map(|&a| objective(a)).collect();
        let i = (0..grid.len()).fold(0, |b, i| if at_grid[i] < at_grid[b] { i } else { b });
        let (mut lo, mut hi) = (grid[i.saturating_sub(1)].ln(), grid[(i + 1).min(grid.len() - 1)].ln());
        let g = (5f64.sqrt() - 1.0) / 2.0;
        // Each step keeps one inner point and its value: one new evaluation per step.
        let (mut x1, mut x2) = (hi - g * (hi - lo), lo + g * (hi - lo));
        let (mut f1, mut f2) = (objective(x1.exp()), objective(x2.exp()));
        for _ in 0..60 {
            if f1 <= f2 {
                (hi, x2, f2) = (x2, x1, f1);
                x1 = hi - g * (hi - lo);
                f1 = objective(x1.exp());
            } else {
                (lo, x1, f1) = (x1, x2, f2);
                x2 = lo + g * (hi - lo);
                f2 = objective(x2.exp());
            }
        }
        let a = ((lo + hi) / 2.0).exp();
        // Never worse than the scan's best (or the model itself, a = 1).
        let candidates = [(a, objective(a)), (grid[i], at_grid[i]), (1.0, at_grid[0])];
        let a = candidates.into_iter().fold((1.0, at_grid[0]), |b, x| if x.1 < b.1 { x } else { b }).0;
        ComputeFloor { a_compute: a }
    }
}

/// Which compute floor: the SM side alone (the additive model's floor), or the SM side joined
/// with the memory side by a soft maximum, so the floor still follows the memory clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorShape {
    SmOnly,
    KeepsMemory,
}

/// The exponent of the soft maximum joining the slowed SM side and the memory side in
/// [`FloorShape::KeepsMemory`]. Picked on the NV-DVFS rows among 2, 4, 6 and 8 (a
/// development choice, not a measured constant): 8 (the model's own
/// `OVERLAP_EXPONENT`) leaves the GTX 1080 Ti's mean E·D² regret at 6.8%, 4 makes the GTX 980's
/// calibrated error worse, 2 loses the floor's gain on the 1080 Ti's 30 kernels.
pub const FLOOR_MEMORY_EXPONENT: f64 = 6.0;

/// `(sm^q + mem^q)^(1/q)` with `q` = [`FLOOR_MEMORY_EXPONENT`], computed relative to the larger side.
fn floor_keeping_memory(sm: f64, mem: f64) -> f64 {
    let m = sm.max(mem);
    if m <= 0.0 {
        return 0.0;
    }
    let q = FLOOR_MEMORY_EXPONENT;
    m * root(power(sm / m, q) + power(mem / m, q), q)
}

/// The memory, compute, shared and L2 times of a timing-model result (see [`TimeCalibration`]). Where
/// the model let bank-conflict replays overlap issue ([`Timing::replays_hidden_s`]), the shared part is
/// what they still add, so that at factors 1 the SM side is the model's.
pub fn pipeline_parts(t: &Timing) -> [f64; 4] {
    let c = &t.components_s;
    [c[0] + c[1] + c[4], c[5], (c[2] + c[3] - t.replays_hidden_s).max(0.0), t.l2_s]
}

/// The time a calibration adds unscaled: the timing model's barrier time and its pipeline fill (one DRAM
/// latency per round).
pub fn additive_s(t: &Timing) -> f64 {
    t.sync_s + t.fill_s
}

impl TimeCalibration {
    /// The calibrated time from the pipeline parts and the sync time.
    pub fn time(&self, parts: [f64; 4], sync: f64) -> f64 {
        // The SM side (compute and shared) adds, as in the timing model: the same schedulers issue both.
        let scaled =
            [self.a[0] * parts[0], self.a[1] * parts[1] + self.a[2] * parts[2], self.a[3] * parts[3]];
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
        Timing { time_s: self.time(pipeline_parts(t), additive_s(t)), ..t.clone() }
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
                    let s =
                        power(a[0] * x[0], p) + power(a[1] * x[1] + a[2] * x[2], p) + power(a[3] * x[3], p);
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

/// `x^p`; the candidate exponents (all of [`EXPONENTS`]) by multiplications, so the fits' inner
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // Compute and shared add before the power mean: 1 · 1.5 + 1 · 0.5 = 2 against the memory's 2.
        let t = c.time([1.0, 1.5, 0.5, 0.0], 0.0);
        assert!((t - 2.0 * 2f64.powf(1.0 / 6.0)).abs() < 1e-14, "{t}");
        // a_l2 = 0 switches the L2 term off.
        let no_l2 = TimeCalibration { a: [2.0, 1.0, 1.0, 0.0], p: 6.0 };
        assert_eq!(no_l2.time([0.3, 0.5, 0.1, 9.0], 0.1), no_l2.time([0.3, 0.5, 0.1, 0.0], 0.1));
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
    fn compute_floor_is_the_model_at_factor_one_and_recovers_a_factor() {
        let one = ComputeFloor { a_compute: 1.0 };
        // The model's time already covers compute + shared + sync: factor 1 returns it unchanged.
        assert_eq!(one.time([0.5, 0.4, 0.1, 0.2], 0.05, 0.6), 0.6);
        // Slower compute outlasts the model's bound only where compute dominates.
        let c = ComputeFloor { a_compute: 1.5 };
        assert!((c.time([0.1, 0.4, 0.1, 0.0], 0.05, 0.6) - 0.75).abs() < 1e-15);
        assert_eq!(c.time([2.0, 0.4, 0.1, 0.0], 0.05, 2.1), 2.1);
        // Rows generated with a known factor: the fit finds it; rows the model already matches keep 1.
        let rows: Vec<CalRow> = (0..12)
            .map(|i| {
                let parts = [0.2 + 0.1 * (i % 4) as f64, 0.1 + 0.15 * i as f64, 0.05, 0.0];
                (parts, 0.01, 0.0)
            })
            .collect();
        let model: Vec<f64> = rows.iter().map(|r| r.0[0].max(r.0[1] + r.0[2]) + r.1).collect();
        let truth = ComputeFloor { a_compute: 1.3 };
        let measured: Vec<CalRow> =
            rows.iter().zip(&model).map(|(r, &m)| (r.0, r.1, truth.time(r.0, r.1, m))).collect();
        let fit = ComputeFloor::fit(&measured, &model);
        assert!((fit.a_compute - 1.3).abs() < 1e-6, "{fit:?}");
        let exact: Vec<CalRow> = rows.iter().zip(&model).map(|(r, &m)| (r.0, r.1, m)).collect();
        assert_eq!(ComputeFloor::fit(&exact, &model).a_compute, 1.0);
    }

    #[test]
    fn the_floor_keeping_memory_follows_the_memory_side_where_the_sm_only_floor_is_flat() {
        // A kernel the slowed SM side dominates: the SM-only floor ignores the memory part, so a faster
        // memory clock (a smaller memory part) changes nothing; the floor keeping memory gets faster.
        let c = ComputeFloor { a_compute: 1.2 };
        let slow_mem = [0.9, 1.0, 0.1, 0.0];
        let fast_mem = [0.7, 1.0, 0.1, 0.0];
        let (model_slow, model_fast) = (1.0, 0.95);
        assert_eq!(c.time(slow_mem, 0.0, model_slow), c.time(fast_mem, 0.0, model_fast));
        let (a, b) = (
            c.time_keeping_memory(slow_mem, 0.0, model_slow),
            c.time_keeping_memory(fast_mem, 0.0, model_fast),
        );
        assert!(a > b + 1e-3, "{a} vs {b}");
        // Never below the model nor the SM-only floor; without a memory part it is the SM-only floor.
        assert!(a >= c.time(slow_mem, 0.0, model_slow));
        let no_mem = [0.0, 1.0, 0.1, 0.0];
        assert!((c.time_keeping_memory(no_mem, 0.05, 0.5) - c.time(no_mem, 0.05, 0.5)).abs() < 1e-12);
        // The fit recovers a known factor under this shape too.
        let rows: Vec<CalRow> = (0..12)
            .map(|i| ([0.3 + 0.1 * (i % 4) as f64, 0.1 + 0.15 * i as f64, 0.05, 0.0], 0.01, 0.0))
            .collect();
        let model: Vec<f64> = rows.iter().map(|r| r.0[0].max(r.0[1] + r.0[2]) + r.1).collect();
        let truth = ComputeFloor { a_compute: 1.3 };
        let measured: Vec<CalRow> = rows
            .iter()
            .zip(&model)
            .map(|(r, &m)| (r.0, r.1, truth.time_keeping_memory(r.0, r.1, m)))
            .collect();
        let fit = ComputeFloor::fit_shaped(FloorShape::KeepsMemory, &measured, &model);
        assert!((fit.a_compute - 1.3).abs() < 1e-6, "{fit:?}");
    }

    #[test]
    fn fast_powers_and_roots_match_the_library_ones() {
        for &x in &[1e-300, 3e-20, 0.001, 0.5, 1.0, 1.7, 8.0, 12345.678, 7e40, 1e250] {
            let c = cbrt(x);
            assert!((c / x.cbrt() - 1.0).abs() < 2e-15, "cbrt({x}) = {c}");
            for p in EXPONENTS {
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
}
