//! Splitting one tick's energy into idle, per-process and unattributed parts.
//!
//! Each tick the energy counter gives `ΔE`. The idle (static) part is `min(ΔE, P_idle · Δt)`; the dynamic
//! rest `D = ΔE − idle` goes to the processes that were active, in proportion to each one's predicted
//! dynamic power, so the parts always sum to `ΔE` (conservation, to rounding):
//!
//! * **model** (the default): a process's dynamic power is predicted from its activity by the activity
//!   model `p = w_sm · sm + w_mem · mem` (watts per unit of SM and device-memory utilization), so
//!   memory-bound work gets its share. The energy counter then corrects each process's intensity: over a
//!   window of recent ticks, per-process factors `k_j ≥ 0` are fitted to
//!   `D_t / Δt ≈ Σ_j k_j · p_j(t)`, with a ridge pull of each `k_j` towards 1 (the activity model) whose
//!   weight is `prior_weight` times that process's own `Σ_t p_j(t)²`. When the processes' mix does not vary
//!   the data cannot tell them apart and the factors stay at the prior; when it does, a process that draws
//!   more power per unit of activity than the model says is found from the board's own energy.
//! * **ratio**: the split by SM utilization alone (the method of Kepler's GPU power attribution), kept as
//!   the baseline every figure is compared with.
//!
//! Each process also gets an idle component: the idle energy times the share of the tick it held the GPU
//! (`min(sm, 1)`, normalised when the shares add up to more than 1). It is a split of the GPU's idle
//! energy, not added to it.

use std::collections::{BTreeMap, VecDeque};

/// How the dynamic energy is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Activity model, corrected by the energy counter over a window.
    #[default]
    Model,
    /// SM-utilization ratio (the baseline).
    Ratio,
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Method, String> {
        match s {
            "model" => Ok(Method::Model),
            "ratio" => Ok(Method::Ratio),
            _ => Err(format!("unknown attribution `{s}`: use `model` or `ratio`")),
        }
    }
}

/// Dynamic power per unit of activity, W (1.0 of SM utilization; 1.0 of memory utilization).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActivityPower {
    pub sm_w: f64,
    pub mem_w: f64,
}

impl ActivityPower {
    /// Predicted dynamic power of one process, W.
    pub fn predict(&self, a: &Activity) -> f64 {
        (self.sm_w * a.sm.max(0.0) + self.mem_w * a.mem.max(0.0)).max(0.0)
    }

    /// Fits `dyn_w ≈ sm_w · sm + mem_w · mem` with both weights ≥ 0 (least squares on the two-variable
    /// non-negative orthant, solved exactly by trying the four active sets). `None` without data.
    pub fn fit(rows: &[(Activity, f64)]) -> Option<ActivityPower> {
        let (mut ss, mut sm_, mut mm, mut sy, mut my) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (a, y) in rows {
            ss += a.sm * a.sm;
            sm_ += a.sm * a.mem;
            mm += a.mem * a.mem;
            sy += a.sm * y;
            my += a.mem * y;
        }
        let sse = |w: ActivityPower| {
            rows.iter().map(|(a, y)| (y - w.sm_w * a.sm - w.mem_w * a.mem).powi(2)).sum::<f64>()
        };
        let mut candidates = vec![ActivityPower { sm_w: 0.0, mem_w: 0.0 }];
        if ss > 0.0 {
            candidates.push(ActivityPower { sm_w: (sy / ss).max(0.0), mem_w: 0.0 });
        }
        if mm > 0.0 {
            candidates.push(ActivityPower { sm_w: 0.0, mem_w: (my / mm).max(0.0) });
        }
        let det = ss * mm - sm_ * sm_;
        if det.abs() > 1e-12 * (ss * mm).max(1e-300) {
            let w = ActivityPower { sm_w: (sy * mm - my * sm_) / det, mem_w: (my * ss - sy * sm_) / det };
            if w.sm_w >= 0.0 && w.mem_w >= 0.0 {
                candidates.push(w);
            }
        }
        if rows.is_empty() {
            return None;
        }
        candidates.into_iter().min_by(|a, b| sse(*a).total_cmp(&sse(*b)))
    }
}

/// One process's activity over a tick, as ratios (1.0 = 100 %).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Activity {
    pub sm: f64,
    pub mem: f64,
}

/// One process's part of a tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    pub pid: u32,
    pub dynamic_j: f64,
    pub idle_j: f64,
}

/// A tick's energy, split. `idle_j + unattributed_j + Σ dynamic_j = energy_j`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Split {
    pub energy_j: f64,
    pub idle_j: f64,
    pub unattributed_j: f64,
    pub shares: Vec<Share>,
}

/// Settings of the model split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub method: Method,
    pub activity: ActivityPower,
    /// Ticks in the correction window.
    pub window: usize,
    /// Weight of the activity model against the window's data (see the module docs); large = no correction.
    pub prior_weight: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            method: Method::Model,
            activity: DEFAULT_ACTIVITY,
            window: 60,
            prior_weight: DEFAULT_PRIOR_WEIGHT,
        }
    }
}

/// The activity model: fitted (non-negative least squares, dynamic power = board power − idle) on the Tesla
/// V100 microbenchmarks of `nvdvfs-dcgm-v100-micro` at 1380 MHz, SM and DRAM activity as DCGM measures them
/// (`benches/corun.rs` prints the fit). Only the ratio of the two weights matters to the split; other GPUs
/// carry it over, and the energy-counter correction adjusts each process from there.
pub const DEFAULT_ACTIVITY: ActivityPower = ActivityPower { sm_w: 98.2, mem_w: 3.8 };

/// The ridge weight of the activity model, chosen on co-runs built from the microbenchmarks only
/// (`benches/corun.rs`: the most regularized setting within 0.1 point of the best); the real applications
/// those figures are reported on played no part.
pub const DEFAULT_PRIOR_WEIGHT: f64 = 0.01;

/// One GPU's attribution: the split and the correction window.
#[derive(Debug, Clone)]
pub struct Attributor {
    pub params: Params,
    /// Past ticks: dynamic power (W) and each process's activity-model power (W).
    window: VecDeque<(f64, Vec<(u32, f64)>)>,
}

impl Attributor {
    pub fn new(params: Params) -> Attributor {
        Attributor { params, window: VecDeque::new() }
    }

    /// Splits one tick: `energy_j` measured over `dt_s`, idle power `idle_w` (None: unknown, all energy
    /// is dynamic), the active processes' activity.
    pub fn split(
        &mut self,
        energy_j: f64,
        dt_s: f64,
        idle_w: Option<f64>,
        procs: &[(u32, Activity)],
    ) -> Split {
        let energy_j = if energy_j.is_finite() { energy_j.max(0.0) } else { 0.0 };
        let finite = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
        let procs: Vec<(u32, Activity)> =
            procs.iter().map(|(pid, a)| (*pid, Activity { sm: finite(a.sm), mem: finite(a.mem) })).collect();
        let procs = procs.as_slice();
        let idle_j =
            idle_w.filter(|w| w.is_finite() && *w > 0.0).map_or(0.0, |w| (w * dt_s.max(0.0)).min(energy_j));
        let dynamic = energy_j - idle_j;
        let held: Vec<f64> = procs.iter().map(|(_, a)| a.sm.clamp(0.0, 1.0)).collect();
        let held_sum: f64 = held.iter().sum();
        let idle_norm = held_sum.max(1.0);
        let weights = self.weights(dynamic, dt_s, procs);
        let total: f64 = weights.iter().sum();
        let mut shares = Vec::with_capacity(procs.len());
        let mut attributed = 0.0;
        for (i, (pid, _)) in procs.iter().enumerate() {
            let dynamic_j = if total > 0.0 { dynamic * weights[i] / total } else { 0.0 };
            attributed += dynamic_j;
            shares.push(Share { pid: *pid, dynamic_j, idle_j: idle_j * held[i] / idle_norm });
        }
        // Whatever was not given (no active process, or none with activity) is unattributed; computed as a
        // difference so the parts sum to the counter's increment.
        let unattributed_j = (energy_j - idle_j - attributed).max(0.0);
        Split { energy_j, idle_j, unattributed_j, shares }
    }

    /// Each process's weight in the dynamic split.
    fn weights(&mut self, dynamic_j: f64, dt_s: f64, procs: &[(u32, Activity)]) -> Vec<f64> {
        match self.params.method {
            Method::Ratio => procs.iter().map(|(_, a)| a.sm.max(0.0)).collect(),
            Method::Model => {
                let predicted: Vec<(u32, f64)> =
                    procs.iter().map(|(pid, a)| (*pid, self.params.activity.predict(a))).collect();
                if dt_s > 0.0 && !predicted.is_empty() {
                    self.window.push_back((dynamic_j / dt_s, predicted.clone()));
                    while self.window.len() > self.params.window.max(1) {
                        self.window.pop_front();
                    }
                }
                let k = self.factors();
                predicted.iter().map(|(pid, p)| p * k.get(pid).copied().unwrap_or(1.0)).collect()
            }
        }
    }

    /// The per-process factors `k_j` fitted over the window (projected coordinate descent on the ridge
    /// least-squares problem). Each process's column of the window is gathered once, so a sweep costs
    /// one pass over the window's entries whatever the number of processes.
    fn factors(&self) -> BTreeMap<u32, f64> {
        let mut index: BTreeMap<u32, usize> = BTreeMap::new();
        let mut cols: Vec<Vec<(usize, f64)>> = Vec::new();
        for (t, (_, ps)) in self.window.iter().enumerate() {
            for (pid, p) in ps {
                let j = *index.entry(*pid).or_insert_with(|| {
                    cols.push(Vec::new());
                    cols.len() - 1
                });
                cols[j].push((t, *p));
            }
        }
        let mut k = vec![1.0; cols.len()];
        if self.params.prior_weight.is_finite() && !cols.is_empty() {
            let norm: Vec<f64> = cols.iter().map(|c| c.iter().map(|(_, p)| p * p).sum()).collect();
            // Residuals r_t = y_t − Σ_j k_j p_jt, kept up to date through the sweeps.
            let mut resid: Vec<f64> =
                self.window.iter().map(|(y, ps)| y - ps.iter().map(|(_, p)| p).sum::<f64>()).collect();
            for _ in 0..50 {
                let mut moved = 0.0f64;
                for (j, col) in cols.iter().enumerate() {
                    let n = norm[j];
                    if n <= 0.0 {
                        continue;
                    }
                    // The exact minimum of ½Σ r² + ½λ(k_j − 1)² in k_j, kept ≥ 0.
                    let g: f64 = col.iter().map(|(t, p)| p * resid[*t]).sum();
                    let lam = self.params.prior_weight * n;
                    let new = ((n * k[j] + g + lam) / (n + lam)).max(0.0);
                    let delta = new - k[j];
                    if delta != 0.0 {
                        for (t, p) in col {
                            resid[*t] -= delta * p;
                        }
                        k[j] = new;
                        moved = moved.max(delta.abs());
                    }
                }
                if moved < 1e-9 {
                    break;
                }
            }
        }
        index.into_iter().map(|(pid, j)| (pid, k[j])).collect()
    }

    /// Forgets a process (it exited).
    pub fn forget(&mut self, pid: u32) {
        for (_, ps) in self.window.iter_mut() {
            ps.retain(|(q, _)| *q != pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(sm: f64, mem: f64) -> Activity {
        Activity { sm, mem }
    }

    fn sums_to_energy(s: &Split) -> bool {
        let parts = s.idle_j + s.unattributed_j + s.shares.iter().map(|x| x.dynamic_j).sum::<f64>();
        (parts - s.energy_j).abs() <= 1e-9 * s.energy_j.max(1.0)
    }

    #[test]
    fn parts_sum_to_the_counter_increment() {
        let mut a = Attributor::new(Params::default());
        for (e, idle, procs) in [
            (250.0, Some(50.0), vec![(1, act(0.6, 0.1)), (2, act(0.3, 0.8))]),
            (40.0, Some(50.0), vec![(1, act(0.6, 0.1))]),
            (90.0, None, vec![]),
            (120.0, Some(60.0), vec![(3, act(0.0, 0.0))]),
        ] {
            let s = a.split(e, 1.0, idle, &procs);
            assert!(sums_to_energy(&s), "{s:?}");
        }
    }

    #[test]
    fn energy_below_idle_is_all_idle_and_no_process_gets_dynamic_energy() {
        let mut a = Attributor::new(Params::default());
        let s = a.split(40.0, 1.0, Some(50.0), &[(1, act(0.5, 0.5))]);
        assert_eq!(s.idle_j, 40.0);
        assert_eq!(s.shares[0].dynamic_j, 0.0);
        assert_eq!(s.shares[0].idle_j, 20.0);
    }

    #[test]
    fn memory_bound_work_gets_a_share_the_ratio_split_denies_it() {
        // Same SM utilization, one process also keeps device memory busy.
        let procs = [(1, act(0.4, 0.0)), (2, act(0.4, 0.9))];
        let mut ratio = Attributor::new(Params { method: Method::Ratio, ..Params::default() });
        let r = ratio.split(200.0, 1.0, Some(50.0), &procs);
        assert!((r.shares[0].dynamic_j - r.shares[1].dynamic_j).abs() < 1e-9);
        let equal = ActivityPower { sm_w: 100.0, mem_w: 100.0 };
        let mut model =
            Attributor::new(Params { activity: equal, prior_weight: f64::INFINITY, ..Params::default() });
        let m = model.split(200.0, 1.0, Some(50.0), &procs);
        assert!(m.shares[1].dynamic_j > 2.0 * m.shares[0].dynamic_j, "{m:?}");
    }

    #[test]
    fn the_energy_counter_corrects_a_process_the_activity_model_underrates() {
        // Truth: process 2 draws 3× what the activity model predicts for it. The mix varies tick to tick.
        let w = DEFAULT_ACTIVITY;
        let mut a = Attributor::new(Params { prior_weight: 0.01, ..Params::default() });
        let mut last = Split::default();
        for t in 0..40 {
            let f1 = 0.2 + 0.6 * ((t * 7 % 11) as f64 / 10.0);
            let f2 = 1.0 - f1;
            let (a1, a2) = (act(f1 * 0.9, f1 * 0.2), act(f2 * 0.5, f2 * 0.1));
            let truth1 = w.predict(&a1);
            let truth2 = 3.0 * w.predict(&a2);
            last = a.split(50.0 + truth1 + truth2, 1.0, Some(50.0), &[(1, a1), (2, a2)]);
            if t == 39 {
                let got2 = last.shares[1].dynamic_j;
                assert!((got2 - truth2).abs() / truth2 < 0.02, "{got2} vs {truth2}");
            }
        }
        assert!(sums_to_energy(&last));
    }

    #[test]
    fn the_two_weight_fit_recovers_a_known_law_and_stays_non_negative() {
        let rows: Vec<(Activity, f64)> = (0..20)
            .map(|i| {
                let a = act(i as f64 / 20.0, ((i * 3) % 7) as f64 / 7.0);
                (a, 120.0 * a.sm + 40.0 * a.mem)
            })
            .collect();
        let w = ActivityPower::fit(&rows).unwrap();
        assert!((w.sm_w - 120.0).abs() < 1e-6 && (w.mem_w - 40.0).abs() < 1e-6, "{w:?}");
        let neg: Vec<(Activity, f64)> =
            (0..10).map(|i| (act(i as f64 / 10.0, 0.5), 50.0 - 30.0 * i as f64 / 10.0)).collect();
        let w = ActivityPower::fit(&neg).unwrap();
        assert!(w.sm_w >= 0.0 && w.mem_w >= 0.0);
        assert!(ActivityPower::fit(&[]).is_none());
    }

    #[test]
    fn bad_numbers_do_not_break_conservation() {
        let mut a = Attributor::new(Params::default());
        let s = a.split(f64::NAN, 1.0, Some(f64::INFINITY), &[(1, act(f64::NAN, 2.0))]);
        assert!(sums_to_energy(&s), "{s:?}");
        let s = a.split(-5.0, 0.0, Some(10.0), &[(1, act(1.5, 0.0)), (2, act(1.5, 0.0))]);
        assert!(sums_to_energy(&s), "{s:?}");
    }
}
